"""A profile point's figures from fio's per-job results: IOPS per direction and in all, the I/O-weighted mean
latency, the p99 of the merged latency histograms of both directions (the true percentile of the union; a
result without bins gives its own p99) and the largest max.

The same figures come from a point being recorded (``RunRecord.results``, fio's parsed jobs) and from a
stored point (its ``result`` rows and histograms), so the verdicts a profile prints are read from the store
and equal those stored with each point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vmio.errors import FioError
from vmio.stats import histogram
from vmio.store import Store
from vmio.store.records import JobResult


@dataclass(frozen=True)
class Side:
    """One measured job's figures for one direction, as fio gave them (latencies in ns)."""

    ddir: str
    iops: float
    ios: int
    mean_ns: float
    p99_ns: float
    max_ns: float
    bins: Mapping[int, int]


@dataclass(frozen=True)
class Figures:
    """A point's totals over its measured jobs (latencies in ms)."""

    read_iops: float
    write_iops: float
    mean_lat_ms: float
    p99_lat_ms: float
    max_lat_ms: float

    @property
    def iops(self) -> float:
        return self.read_iops + self.write_iops


def figures(sides: Sequence[Side], what: str) -> Figures:
    """The totals of ``sides``; a point without an I/O is a ``FioError`` naming ``what``."""
    ios = sum(s.ios for s in sides)
    if ios == 0:
        raise FioError(f"{what}: fio completed no I/O, so the point has no figures to judge")
    bins = histogram.merge(s.bins for s in sides)
    p99 = histogram.percentile(bins, 99.0) if bins else None
    return Figures(
        read_iops=sum(s.iops for s in sides if s.ddir == "read"),
        write_iops=sum(s.iops for s in sides if s.ddir == "write"),
        mean_lat_ms=sum(s.mean_ns * s.ios for s in sides) / ios / 1e6,
        p99_lat_ms=(p99 if p99 is not None else max(s.p99_ns for s in sides)) / 1e6,
        max_lat_ms=max(s.max_ns for s in sides) / 1e6,
    )


def of_results(results: Sequence[JobResult]) -> list[Side]:
    """The measured jobs' sides of a point being recorded."""
    return [
        Side(
            r.ddir,
            r.iops,
            r.total_ios,
            r.lat_ns.get("mean") or 0.0,
            r.lat_ns.get("p99") or 0.0,
            r.lat_ns.get("max") or 0.0,
            r.bins,
        )
        for r in results
        if r.role == "measure" and r.ddir in ("read", "write")
    ]


def of_stored(store: Store, run_id: int) -> list[Side]:
    """The measured jobs' sides of a stored point, from its result rows and their histograms."""
    return [
        Side(
            r["ddir"],
            r["iops"] or 0.0,
            r["total_ios"] or 0,
            r["lat_mean"] or 0.0,
            r["p99"] or 0.0,
            r["lat_max"] or 0.0,
            store.histogram(r["id"]),
        )
        for r in store.results(run_id)
        if r["role"] == "measure" and r["ddir"] in ("read", "write")
    ]
