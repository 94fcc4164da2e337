"""Each point's figures summed or merged over its measured jobs, computed once when the point is written.

``vmio show`` of a year of nightly runs must not merge every point's latency histograms again on each read,
so ``Store.record`` stores, beside the run, per direction: the measured jobs' count, IOPS and bandwidth
sums, operations, min/mean/max latency and the percentiles of the merged histograms (``read_*``/``write_*``
columns of ``run``), and the hosts (``hosts_json``). Migration 8 fills them for points stored before.

The figures are computed from the rows as the store returns them (never from the values in memory), so a
point reads the same whether its summary was stored when it was recorded or filled by the migration.
Latency percentiles come from the merged histograms, never from averaging percentiles; the mean is
weighted by operation counts.
"""

from __future__ import annotations

import functools
import json
import operator
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vmio.stats import histogram
from vmio.store.integrity import damaged, shown
from vmio.store.schema import PCT_COLUMNS

STORED_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
RunRow = sqlite3.Row | Mapping[str, Any]  # a ``run`` row, as the store hands it out or as a dict
LAT_NAMES = ("min", "mean", "max", *(f"p{p:g}" for p in STORED_PERCENTILES))
# the run columns of one direction, in LAT_NAMES' order after the sums
LAT_COLUMNS = ("lat_min", "lat_mean", "lat_max", "p50", "p90", "p99", "p999", "p9999")
DDIR_COLUMNS = ("jobs", "iops", "bw", "ops", *LAT_COLUMNS)
SUMMARY_COLUMNS = (*(f"{d}_{c}" for d in ("read", "write") for c in DDIR_COLUMNS), "hosts_json")


@dataclass(frozen=True, slots=True)
class Direction:
    """One direction's figures over a point's measured jobs (``jobs`` 0: none measured it)."""

    jobs: int
    iops: float
    bw: float
    ops: int
    lat_ns: dict[str, float | None] | None

    def columns(self) -> tuple[object, ...]:
        lat = self.lat_ns or {}
        return (self.jobs, self.iops, self.bw, self.ops, *(lat.get(n) for n in LAT_NAMES))


@dataclass(frozen=True, slots=True)
class Summary:
    read: Direction
    write: Direction
    hosts: tuple[str, ...]

    def columns(self) -> tuple[object, ...]:
        return (*self.read.columns(), *self.write.columns(), json.dumps(list(self.hosts)))


def summarize(results: Sequence[sqlite3.Row], hists: Mapping[int, Mapping[int, int]]) -> Summary:
    """A point's summary from its ``result`` rows (every role: only ``measure`` counts) and their bins."""
    measured = [r for r in results if r["role"] == "measure"]
    read, write = (_direction([r for r in measured if r["ddir"] == d], hists) for d in ("read", "write"))
    return Summary(read, write, tuple(sorted({r["host"] for r in measured})))


def _direction(mine: list[sqlite3.Row], hists: Mapping[int, Mapping[int, int]]) -> Direction:
    return Direction(
        jobs=len(mine),
        iops=sum(r["iops"] for r in mine),
        bw=sum(r["bw_bytes"] for r in mine),
        ops=sum(r["total_ios"] for r in mine),
        lat_ns=_latency(hists, mine),
    )


def _latency(
    hists: Mapping[int, Mapping[int, int]], results: list[sqlite3.Row]
) -> dict[str, float | None] | None:
    ops = sum(r["total_ios"] for r in results)
    if not results or ops == 0:
        return None
    merged = histogram.merge(hists.get(r["id"], {}) for r in results)
    out: dict[str, float | None] = {
        "min": min(r["lat_min"] for r in results),
        "mean": sum(r["lat_mean"] * r["total_ios"] for r in results) / ops,
        "max": max(r["lat_max"] for r in results),
    }
    found = histogram.percentiles(merged, STORED_PERCENTILES)
    for p in STORED_PERCENTILES:
        value = found[p]
        if value is None and len(results) == 1:  # no bins stored: fio's own figure is exact for one job
            value = results[0][PCT_COLUMNS[f"p{p:g}"]]
        out[f"p{p:g}"] = float(value) if value is not None else None
    return out


_STORED = {
    d: (f"{d}_jobs", f"{d}_iops", f"{d}_bw", f"{d}_ops", tuple(f"{d}_{c}" for c in LAT_COLUMNS))
    for d in ("read", "write")
}


def direction(row: RunRow, ddir: str) -> Direction:
    """One direction's stored summary from a ``run`` row (as ``summarize`` computed it)."""
    jobs_c, iops_c, bw_c, ops_c, lat_c = _STORED[ddir]
    jobs = int(row[jobs_c])
    if jobs == 0:  # nothing measured this direction: the sums of nothing, as summarize gives them
        return Direction(0, 0, 0, 0, None)
    lat = None if row[lat_c[1]] is None else dict(zip(LAT_NAMES, _LATENCY[ddir](row), strict=True))
    return Direction(jobs, row[iops_c], row[bw_c], row[ops_c], lat)


_LATENCY = {d: operator.itemgetter(*lat) for d, (*_, lat) in _STORED.items()}  # a direction's latency columns


def stored(row: RunRow) -> Summary | None:
    """The summary stored with a ``run`` row; None when it holds none (a store whose columns were emptied)."""
    if row["read_jobs"] is None or row["write_jobs"] is None or row["hosts_json"] is None:
        return None
    return Summary(direction(row, "read"), direction(row, "write"), hosts(row["hosts_json"]))


@functools.lru_cache(maxsize=256)
def hosts(text: str) -> tuple[str, ...]:
    """A decoded hosts list (a campaign names a few hosts, in 100k points)."""
    return tuple(json.loads(text))


def decode_bins(text: str, result_id: int, path: str) -> dict[int, int]:
    """A stored histogram (``[[bucket, count], ...]``); a row that is not one is one error naming it."""
    try:
        return {int(v): int(c) for v, c in json.loads(text)}
    except (ValueError, TypeError):
        raise damaged(
            path,
            f"table histogram, row {result_id}: bins = {shown(text)} is not a list of [value, count] pairs",
        ) from None


def write(db: sqlite3.Connection, run_ids: Sequence[int] | None = None) -> None:
    """Compute and store the summary of runs ``run_ids`` (None: every run) from their stored results."""
    where = ""
    args: tuple[int, ...] = ()
    if run_ids is not None:
        where, args = f"WHERE run_id IN ({','.join('?' * len(run_ids))})", tuple(run_ids)
    by_run: dict[int, list[sqlite3.Row]] = {}
    for r in _rows(db, f"SELECT * FROM result {where} ORDER BY id", args):
        by_run.setdefault(r["run_id"], []).append(r)
    path = str(getattr(db, "store_path", "?"))
    bins_sql = f"SELECT h.result_id, h.bins FROM histogram h JOIN result ON result.id = h.result_id {where}"
    hists = {r[0]: decode_bins(r[1], r[0], path) for r in _rows(db, bins_sql, args)}
    ids = list(run_ids) if run_ids is not None else [r[0] for r in _rows(db, "SELECT id FROM run", ())]
    sets = ", ".join(f"{c} = ?" for c in SUMMARY_COLUMNS)
    try:
        values = [(*summarize(by_run.get(i, []), hists).columns(), i) for i in ids]
    except (TypeError, ValueError):  # a number vmio always fills is missing or not a number
        raise damaged(
            path,
            "table result holds a row whose figures are not numbers; the points' sums cannot be computed",
        ) from None
    db.executemany(f"UPDATE run SET {sets} WHERE id = ?", values)


def _rows(db: sqlite3.Connection, sql: str, args: tuple[object, ...]) -> list[sqlite3.Row]:
    return list(db.execute(sql, args))  # the store's connections hand out sqlite3.Row
