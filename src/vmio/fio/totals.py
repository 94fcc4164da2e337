"""Totals of one fio run: IOPS, bandwidth, I/O-weighted mean latency and p99 per direction and combined.

Read from what ``output.parse`` made of fio's output (the one parser), for callers that want totals, not
per-job results (the dstore profile). The combined p99 comes from the merged latency histograms when fio
gave ``json+`` bins (the true percentile of the union), else the largest per-job p99; the max is the
largest of any job. Client/server output (``client_stats``, a fio inside a VM) counts without fio's own
"All clients" aggregate. ``errors`` counts the I/O errors fio tolerated (``continue_on_error``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vmio.errors import FioError
from vmio.fio import output
from vmio.fio.output import FioOutput, JobResult
from vmio.stats import histogram


@dataclass(frozen=True)
class DirStats:
    """One direction (or both combined): totals over all jobs."""

    ios: int
    iops: float
    bw_bytes: float
    mean_lat_ms: float
    p99_lat_ms: float
    max_lat_ms: float = 0.0


@dataclass(frozen=True)
class Totals:
    """Read, write and combined statistics of one fio run."""

    read: DirStats
    write: DirStats
    total: DirStats
    errors: int = 0


def totals(result: FioOutput) -> Totals:
    """Per-direction and combined totals of one parsed fio run; a run without jobs is a ``FioError``."""
    if result.jobs == 0:
        raise FioError(output.NO_JOBS, output=result.text[-2000:])
    sides = {d: [r for r in result.results if r.ddir == d] for d in output.DIRECTIONS}
    read, write = (_combine(sides[d]) for d in output.DIRECTIONS)
    return Totals(read, write, _combine(sides["read"] + sides["write"]), result.io_errors)


def parse_totals(text: str) -> Totals:
    """The totals of fio's JSON output as ``output.parse`` reads it."""
    return totals(output.parse(text))


def _combine(sides: Sequence[JobResult]) -> DirStats:
    ios = sum(s.total_ios for s in sides)
    if ios == 0:
        return DirStats(0, 0.0, 0.0, 0.0, 0.0)
    mean = sum(_ns(s, "mean") * s.total_ios for s in sides) / ios
    bins = histogram.merge(s.bins for s in sides)
    p99 = percentile_from_bins(bins, 99.0) if bins else max(_ns(s, "p99") for s in sides)
    top = max(_ns(s, "max") for s in sides)
    return DirStats(
        ios, sum(s.iops for s in sides), sum(s.bw_bytes for s in sides), mean / 1e6, p99 / 1e6, top / 1e6
    )


def _ns(side: JobResult, key: str) -> float:
    return side.lat_ns.get(key) or 0.0


def percentile_from_bins(bins: dict[int, int], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of a histogram of latency value → count: fio's own rule,
    shared with the campaign store (``vmio.stats.histogram``)."""
    value = histogram.percentile(bins, pct)
    if value is None:
        raise ValueError("an empty histogram has no percentiles")
    return float(value)
