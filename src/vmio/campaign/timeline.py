"""Where a point's time goes: each step of its run (the target's start, fio's start, the measurement, the
samplers, the logs, the store write) as a span of seconds from the point's start.

``vmio run --verbose`` prints each point's timeline and the share of the campaign's wall time spent
measuring (fio's ramp and runtime); the store keeps each point's steps with its host facts
(``host_json``'s ``timeline``: ``[[step, start_s, end_s], ...]``, the steps up to the store write, which
ends after the record is written).
"""

from __future__ import annotations

import bisect
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# the steps, in the order a point runs them (a step that did not happen is left out)
STOP = "target stop"  # the previous target's VMs and servers stopped (a target's first point only)
BOOT = "target start"  # the target made ready: VMs booted, servers up (the first point of a target only)
PRECONDITION = "precondition"
FACTS = "facts"  # host and target facts
JOBS = "job files"  # rendered and written (and the seeded I/O logs put on the fio servers)
SAMPLER_START = "sampler start"
# fio's run from launch to exit is split at its measured window (fio's own end timestamp, on the server's
# clock for a VM's fio server: a guest clock ahead of the host's shows as a longer start and no end)
FIO_START = "fio start"  # fio's client and servers started, the jobs sent, until the ramp begins
MEASURING = "measuring"  # fio's ramp and runtime
FIO_END = "fio end"  # from the end of the runtime until fio's client exited
SAMPLER_STOP = "sampler stop"
LOGS = "logs"  # fio's latency and histogram logs read back
STORE = "store write"

ORDER = (STOP, BOOT, PRECONDITION, FACTS, JOBS, SAMPLER_START, FIO_START, MEASURING, FIO_END, SAMPLER_STOP,
         LOGS, STORE)  # fmt: skip
RANK = {name: i for i, name in enumerate(ORDER)}  # steps starting at the same instant: in the order run

Step = tuple[str, float, float]  # name, start and end in seconds from the point's start


@dataclass
class Timeline:
    """The spans of one point, on a monotonic clock from ``t0``."""

    clock: Callable[[], float] = time.monotonic
    t0: float = field(default=0.0)
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.t0:
            self.t0 = self.clock()

    def now(self) -> float:
        return self.clock() - self.t0

    def add(self, name: str, start: float, end: float) -> None:
        """A span given in seconds from the point's start (end never before start); the steps stay in the
        order they started."""
        step = (name, round(start, 4), round(max(start, end), 4))
        bisect.insort(self.steps, step, key=lambda s: (s[1], RANK.get(s[0], len(RANK))))

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """The block's span as the step ``name`` (kept also when the block raises)."""
        start = self.now()
        try:
            yield
        finally:
            self.add(name, start, self.now())

    def seconds(self, name: str) -> float:
        return sum(end - start for step, start, end in self.steps if step == name)

    def stored(self) -> list[list[object]]:
        """The steps as the store keeps them (``host_json``'s ``timeline``)."""
        return [[name, start, end] for name, start, end in self.steps]


def format_line(point: str, steps: list[Step], wall: float) -> str:
    """One point's timeline for ``--verbose``: each step's seconds in the order run, and what was left."""
    busy = sum(end - start for _, start, end in steps)
    parts = ", ".join(f"{name} {end - start:.2f}" for name, start, end in steps)
    measuring = sum(end - start for name, start, end in steps if name == MEASURING)
    return (
        f"timeline {point}: {wall:.2f} s, measuring {measuring:.2f} s ({_pct(measuring, wall)}); "
        f"{parts}; other {max(0.0, wall - busy):.2f}"
    )


def _pct(part: float, whole: float) -> str:
    return f"{part / whole * 100:.0f} %" if whole > 0 else "-"
