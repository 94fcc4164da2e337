"""Readers for /proc/diskstats and /proc/stat, and the figures derived from two snapshots.

Readers take ``proc_root`` so tests can replay recorded snapshots as well as read the live host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SECTOR = 512


@dataclass(frozen=True)
class DiskCounters:
    reads: int
    read_sectors: int
    read_ms: int
    writes: int
    write_sectors: int
    write_ms: int
    in_flight: int
    io_ms: int
    weighted_ms: int


@dataclass(frozen=True)
class CpuCounters:
    """Jiffies from the aggregate ``cpu`` line; ``user`` and ``nice`` include guest time, as in Linux."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int
    guest: int
    guest_nice: int

    @property
    def total(self) -> int:
        return (
            self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
        )


def read_diskstats(proc_root: str | Path = "/proc") -> dict[str, DiskCounters]:
    stats = {}
    for line in (Path(proc_root) / "diskstats").read_text().splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        n = [int(x) for x in parts[3:14]]
        stats[parts[2]] = DiskCounters(n[0], n[2], n[3], n[4], n[6], n[7], n[8], n[9], n[10])
    return stats


def read_cpu(proc_root: str | Path = "/proc") -> CpuCounters:
    for line in (Path(proc_root) / "stat").read_text().splitlines():
        if line.startswith("cpu "):
            n = [int(x) for x in line.split()[1:]] + [0] * 10
            return CpuCounters(*n[:10])
    raise ValueError(f"{proc_root}/stat has no aggregate cpu line")


def cpu_count(proc_root: str | Path = "/proc") -> int:
    lines = (Path(proc_root) / "stat").read_text().splitlines()
    return sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())


def disk_rates(a: DiskCounters, b: DiskCounters, seconds: float) -> dict[str, float]:
    """iostat-like figures between two snapshots ``seconds`` apart."""
    reads, writes = b.reads - a.reads, b.writes - a.writes
    ios = reads + writes
    wait_ms = (b.read_ms - a.read_ms) + (b.write_ms - a.write_ms)
    return {
        "read_iops": reads / seconds,
        "write_iops": writes / seconds,
        "read_bw": (b.read_sectors - a.read_sectors) * SECTOR / seconds,
        "write_bw": (b.write_sectors - a.write_sectors) * SECTOR / seconds,
        "busy_pct": min(100.0, (b.io_ms - a.io_ms) / (seconds * 10.0)),
        "queue": (b.weighted_ms - a.weighted_ms) / (seconds * 1000.0),
        "await_ms": wait_ms / ios if ios else 0.0,
        # over a longer window await is this summed wait over the I/Os done, not a mean of ratios
        "wait_ms_per_s": wait_ms / seconds,
    }


def cpu_shares(a: CpuCounters, b: CpuCounters) -> dict[str, float]:
    """Percent of all CPU time: usr (guest time excluded), sys (with irq), iowait, steal, idle, guest."""
    total = b.total - a.total
    if total <= 0:
        return dict.fromkeys(("usr_pct", "sys_pct", "iowait_pct", "steal_pct", "idle_pct", "guest_pct"), 0.0)
    guest = (b.guest - a.guest) + (b.guest_nice - a.guest_nice)
    user = (b.user - a.user) + (b.nice - a.nice) - guest

    def pct(x: float) -> float:
        return 100.0 * x / total

    return {
        "usr_pct": pct(user),
        "sys_pct": pct((b.system - a.system) + (b.irq - a.irq) + (b.softirq - a.softirq)),
        "iowait_pct": pct(b.iowait - a.iowait),
        "steal_pct": pct(b.steal - a.steal),
        "idle_pct": pct(b.idle - a.idle),
        "guest_pct": pct(guest),
    }
