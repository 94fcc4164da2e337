"""Totals of one fio run: IOPS, bandwidth, I/O-weighted mean latency and p99 per direction and combined.

The combined p99 comes from the merged latency histograms when fio gave ``json+`` bins (the true
percentile of the union), else the largest per-job p99; the max is the largest of any job. A lighter
reading than ``output.parse``, for callers that want totals, not per-job results (the dstore profile).
Client/server output (``client_stats``, a fio inside a VM) is read the same way, without fio's own
"All clients" aggregate. ``errors`` counts the I/O errors fio tolerated (``continue_on_error``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vmio.errors import FioError
from vmio.fio import output
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


def parse_totals(text: str) -> Totals:
    """Per-direction and combined totals of one fio run's JSON output."""
    doc, _ = output.extract_json(text)
    jobs = doc.get("client_stats", doc.get("jobs"))
    if isinstance(jobs, list):
        jobs = [job for job in jobs if not (isinstance(job, dict) and job.get("jobname") == "All clients")]
    if not isinstance(jobs, list) or not jobs:
        raise FioError(output.NO_JOBS, output=text[-2000:])
    for job in jobs:
        output.check_job(job)
    sides = {d: [_side(job, d) for job in jobs] for d in output.DIRECTIONS}
    read, write = (_combine(sides[d]) for d in output.DIRECTIONS)
    errors = sum(int(job.get("total_err", 0) or 0) for job in jobs)
    return Totals(read, write, _combine(sides["read"] + sides["write"]), errors)


@dataclass(frozen=True)
class _Side:
    ios: int
    iops: float
    bw: float
    mean_ns: float
    p99_ns: float
    max_ns: float
    bins: dict[int, int]


def _side(job: dict[str, Any], direction: str) -> _Side:
    try:
        block = job[direction]
        lat = block.get("lat_ns") or block["clat_ns"]
        clat = block.get("clat_ns", lat)
        # with lat_percentiles=1 (vmio's campaign jobs) the percentiles and bins are the total latency's
        dist = lat if "percentile" in lat or "bins" in lat else clat
        pct = dist.get("percentile", {})
        p99 = float(pct.get("99.000000", 0.0))
        bins = {int(k): int(v) for k, v in dist.get("bins", {}).items()}
        return _Side(
            int(block["total_ios"]),
            float(block["iops"]),
            float(block["bw_bytes"]),
            float(lat["mean"]),
            p99,
            float(lat.get("max", clat.get("max", 0.0))),
            bins,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise FioError(
            f"fio JSON job {job.get('jobname')!r} lacks {direction} field {exc}; "
            "expected fio 3.x JSON with lat_ns/clat_ns"
        ) from exc


def _combine(sides: list[_Side]) -> DirStats:
    ios = sum(s.ios for s in sides)
    if ios == 0:
        return DirStats(0, 0.0, 0.0, 0.0, 0.0)
    mean = sum(s.mean_ns * s.ios for s in sides) / ios
    bins = histogram.merge(s.bins for s in sides)
    p99 = percentile_from_bins(bins, 99.0) if bins else max(s.p99_ns for s in sides if s.ios)
    top = max(s.max_ns for s in sides if s.ios)
    return DirStats(
        ios, sum(s.iops for s in sides), sum(s.bw for s in sides), mean / 1e6, p99 / 1e6, top / 1e6
    )


def percentile_from_bins(bins: dict[int, int], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of a histogram of latency value → count: fio's own rule,
    shared with the campaign store (``vmio.stats.histogram``)."""
    value = histogram.percentile(bins, pct)
    if value is None:
        raise ValueError("an empty histogram has no percentiles")
    return float(value)
