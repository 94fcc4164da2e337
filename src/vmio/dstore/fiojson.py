"""A small, self-contained reader of fio's JSON (``json`` or ``json+``) output for the dstore profile.

It tolerates text printed around the JSON, sums IOPS and bandwidth over jobs, weights mean latency by the
number of I/Os, and takes p99 from merged latency histograms when fio gave ``json+`` bins (the true
percentile of the union), else the largest per-job p99.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from vmio.errors import FioError
from vmio.stats import histogram

DIRECTIONS = ("read", "write")


@dataclass(frozen=True)
class DirStats:
    """One direction (or both combined): totals over all jobs."""

    ios: int
    iops: float
    bw_bytes: float
    mean_lat_ms: float
    p99_lat_ms: float


@dataclass(frozen=True)
class FioResult:
    """Read, write and combined statistics of one fio run."""

    read: DirStats
    write: DirStats
    total: DirStats


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in fio's output, skipping any text fio printed before or after it."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise FioError("fio printed no JSON object", output=text[-2000:])
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        line = text[:start].count("\n") + exc.lineno
        raise FioError(
            f"fio output is not valid JSON at line {line}: {exc.msg}", output=text[-2000:]
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list) or not data["jobs"]:
        raise FioError("fio JSON has no 'jobs' list; expected fio --output-format=json", output=text[-2000:])
    return data


def parse_fio(text: str) -> FioResult:
    """Parse fio's JSON output into per-direction and combined statistics."""
    jobs = extract_json(text)["jobs"]
    for job in jobs:
        if job.get("error"):
            raise FioError(f"fio job {job.get('jobname')!r} ended with error {job['error']!r}")
    sides = {d: [_side(job, d) for job in jobs] for d in DIRECTIONS}
    read, write = (_combine(sides[d]) for d in DIRECTIONS)
    return FioResult(read, write, _combine(sides["read"] + sides["write"]))


@dataclass(frozen=True)
class _Side:
    ios: int
    iops: float
    bw: float
    mean_ns: float
    p99_ns: float
    bins: dict[int, int]


def _side(job: dict[str, Any], direction: str) -> _Side:
    try:
        block = job[direction]
        lat = block.get("lat_ns") or block["clat_ns"]
        clat = block.get("clat_ns", lat)
        pct = clat.get("percentile", {})
        p99 = float(pct.get("99.000000", 0.0))
        bins = {int(k): int(v) for k, v in clat.get("bins", {}).items()}
        return _Side(
            int(block["total_ios"]),
            float(block["iops"]),
            float(block["bw_bytes"]),
            float(lat["mean"]),
            p99,
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
    return DirStats(ios, sum(s.iops for s in sides), sum(s.bw for s in sides), mean / 1e6, p99 / 1e6)


def percentile_from_bins(bins: dict[int, int], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of a histogram of latency value → count: fio's own rule,
    shared with the campaign store (``vmio.stats.histogram``)."""
    value = histogram.percentile(bins, pct)
    if value is None:
        raise ValueError("an empty histogram has no percentiles")
    return float(value)
