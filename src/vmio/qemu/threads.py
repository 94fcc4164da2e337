"""CPU per QEMU thread from ``/proc/PID/task/*/{stat,comm}``.

With ``-name ...,debug-threads=on`` QEMU names its threads: ``CPU 0/KVM`` or ``CPU 0/TCG`` (vCPUs),
``IO iothread0`` (I/O threads); the main loop is the thread whose id is the PID. ``proc_root`` lets tests
replay a saved ``/proc`` tree.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_VCPU = re.compile(r"^CPU (\d+)/(KVM|TCG|HVF|WHPX)$")
COMM_LEN = 15  # the kernel truncates thread names to 15 bytes


@dataclass(frozen=True)
class ThreadStat:
    tid: int
    comm: str
    utime: int  # clock ticks
    stime: int


@dataclass(frozen=True)
class Snapshot:
    pid: int
    at: float  # seconds, from the sampler's clock
    threads: dict[int, ThreadStat]


@dataclass(frozen=True)
class ThreadCPU:
    """One thread's CPU use between two snapshots, in percent of one CPU."""

    tid: int
    comm: str
    kind: str  # "vcpu" | "iothread" | "main" | "other"
    usr_pct: float
    sys_pct: float

    @property
    def total_pct(self) -> float:
        return self.usr_pct + self.sys_pct


def parse_stat(text: str) -> tuple[int, int]:
    """(utime, stime) from a ``stat`` line; the name in parentheses may hold spaces and ')'."""
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]), int(fields[12])


def classify(tid: int, comm: str, pid: int, iothread_ids: Sequence[str] = ()) -> str:
    if _VCPU.match(comm):
        return "vcpu"
    if any(comm == f"IO {i}"[:COMM_LEN] for i in iothread_ids):
        return "iothread"
    if tid == pid:
        return "main"
    return "other"


def read_threads(pid: int, proc_root: Path = Path("/proc")) -> dict[int, ThreadStat]:
    """Every thread of ``pid`` now; threads that exit while being read are skipped."""
    found: dict[int, ThreadStat] = {}
    task_dir = proc_root / str(pid) / "task"
    for entry in task_dir.iterdir():
        try:
            comm = (entry / "comm").read_text().rstrip("\n")
            utime, stime = parse_stat((entry / "stat").read_text())
        except (FileNotFoundError, ProcessLookupError):
            continue
        found[int(entry.name)] = ThreadStat(int(entry.name), comm, utime, stime)
    return found


def cpu_between(
    before: Snapshot, after: Snapshot, iothread_ids: Sequence[str] = (), clk_tck: int | None = None
) -> list[ThreadCPU]:
    """Per-thread CPU % between two snapshots of the same process (threads present in both)."""
    ticks = clk_tck or os.sysconf("SC_CLK_TCK")
    elapsed = after.at - before.at
    if elapsed <= 0:
        raise ValueError(f"snapshots are not in time order (elapsed {elapsed!r} s)")
    rows = []
    for tid, now in sorted(after.threads.items()):
        then = before.threads.get(tid)
        if then is None:
            continue
        scale = 100.0 / (ticks * elapsed)
        rows.append(
            ThreadCPU(
                tid,
                now.comm,
                classify(tid, now.comm, after.pid, iothread_ids),
                (now.utime - then.utime) * scale,
                (now.stime - then.stime) * scale,
            )
        )
    return rows


class ThreadSampler:
    """Samples one QEMU process; ``sample()`` returns CPU % per thread since the previous call."""

    def __init__(
        self,
        pid: int,
        iothread_ids: Sequence[str] = (),
        *,
        proc_root: Path = Path("/proc"),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pid = pid
        self.iothread_ids = tuple(iothread_ids)
        self.proc_root = proc_root
        self.clock = clock
        self._last = self.snapshot()

    def snapshot(self) -> Snapshot:
        return Snapshot(self.pid, self.clock(), read_threads(self.pid, self.proc_root))

    def sample(self) -> list[ThreadCPU]:
        now = self.snapshot()
        rows = cpu_between(self._last, now, self.iothread_ids)
        self._last = now
        return rows
