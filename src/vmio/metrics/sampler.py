"""A background sampler: every interval, read each probe and keep the rates since the last reading.

A probe has a ``source`` name and ``read()`` → opaque counters, and ``rates(prev, cur, seconds)`` →
``{metric: value}``. Samples are ``(t, source, metric, value)`` with ``t`` the end of the interval in
seconds since the sampler started.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from vmio.metrics import procfs

Sample = tuple[float, str, str, float]


class Probe(Protocol):
    source: str

    def read(self) -> Any: ...

    def rates(self, prev: Any, cur: Any, seconds: float) -> dict[str, float]: ...


@dataclass
class DiskProbe:
    """One block device from /proc/diskstats."""

    device: str
    proc_root: str | Path = "/proc"
    source: str = field(init=False)

    def __post_init__(self) -> None:
        self.source = f"dev:{self.device}"

    def read(self) -> procfs.DiskCounters | None:
        return procfs.read_diskstats(self.proc_root).get(self.device)

    def rates(self, prev: Any, cur: Any, seconds: float) -> dict[str, float]:
        if prev is None or cur is None:
            return {}
        return procfs.disk_rates(prev, cur, seconds)


@dataclass
class CpuProbe:
    """Host CPU shares from /proc/stat."""

    proc_root: str | Path = "/proc"
    source: str = "cpu"

    def read(self) -> procfs.CpuCounters:
        return procfs.read_cpu(self.proc_root)

    def rates(self, prev: Any, cur: Any, seconds: float) -> dict[str, float]:
        if prev is None or cur is None:
            return {}
        return procfs.cpu_shares(prev, cur)


class Sampler:
    """Runs probes in a thread every ``interval`` seconds between ``start()`` and ``stop()``."""

    def __init__(
        self,
        probes: Sequence[Probe],
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval < 0.1:
            raise ValueError(f"sampling interval {interval!r} s is below the 0.1 s floor")
        self.probes = list(probes)
        self.interval = interval
        self.clock = clock
        self.samples: list[Sample] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self.wall0 = 0.0

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, background: bool = True) -> None:
        """Take the first readings; with ``background`` a thread then ticks every interval."""
        self._t0 = self.clock()
        self.wall0 = time.time()
        self._last = [(self._t0, self._read(p)) for p in self.probes]
        if not background:
            return
        self._thread = threading.Thread(target=self._loop, name="vmio-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.tick()  # the partial last interval

    def elapsed(self) -> float:
        return self.clock() - self._t0

    @property
    def t0(self) -> float:
        """The sampler's clock at its start (``time.monotonic`` unless a test gave another clock)."""
        return self._t0

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def tick(self) -> None:
        now = self.clock()
        for i, probe in enumerate(self.probes):
            then, prev = self._last[i]
            cur = self._read(probe)
            seconds = now - then
            if seconds < 0.05:
                continue
            for metric, value in probe.rates(prev, cur, seconds).items():
                self.samples.append((now - self._t0, probe.source, metric, value))
            self._last[i] = (now, cur)

    def _read(self, probe: Probe) -> Any:
        try:
            return probe.read()
        except (OSError, ValueError) as exc:
            self.errors.append(f"{probe.source}: {exc}")
            return None


def window_means(samples: Sequence[Sample], start: float, end: float) -> dict[tuple[str, str], float]:
    """Time-weighted mean of each (source, metric) over [start, end].

    A sample at ``t`` holds the rate over the interval since the previous sample of its series (or since
    the sampler started); each counts in proportion to how much of its interval lies in the window.
    """
    series: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for t, source, metric, value in samples:
        series[(source, metric)].append((t, value))
    means = {}
    for key, points in series.items():
        prev, total, weight = 0.0, 0.0, 0.0
        for t, value in sorted(points):
            overlap = max(0.0, min(t, end) - max(prev, start))
            total += value * overlap
            weight += overlap
            prev = t
        if weight > 0:
            means[key] = total / weight
    for (source, metric), (numerator, denominators) in _per_operation(means).items():
        ops = sum(means.get((source, d), 0.0) for d in denominators)
        if (source, numerator) in means:
            means[(source, metric)] = means[(source, numerator)] / ops if ops > 0 else 0.0
    return means


# figures per operation, not per second: over a window they are the ratio of the window's rates (the
# time-weighted mean of each interval's ratio would let an interval with a handful of slow I/Os count as
# much as one with thousands)
PER_OPERATION = {"await_ms": ("wait_ms_per_s", ("read_iops", "write_iops"))}


def _per_operation(
    means: dict[tuple[str, str], float],
) -> dict[tuple[str, str], tuple[str, tuple[str, ...]]]:
    return {(source, metric): PER_OPERATION[metric] for source, metric in means if metric in PER_OPERATION}
