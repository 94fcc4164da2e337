"""Sweeps as the runner walks them: shares of the ``max`` point, and ``stop_at`` bounds.

A point offered ``50%`` runs at half the achieved IOPS (read + write) of its ``max`` point (same target,
workload, bs, queue depth, job count, load processes and repetition), which runs first. A workload with
``stop_at = "p99=5ms"`` ends each sweep (target, workload, bs, jobs, load processes, repetition; queue depths
and offered loads run along it) at its first point beyond the bound: the later points are not run, and the
campaign records where and why (``Store.stops``). A ``max`` point that shares are taken of is their reference,
not a step of the sweep: its latency stops nothing. Points done by an earlier run count with their stored
figures, so a re-run stops where the first run did.
"""

from __future__ import annotations

import dataclasses

from vmio.errors import VmioError
from vmio.spec import Campaign, Point
from vmio.store import Store
from vmio.store.rows import PointRow, point_row
from vmio.units import format_size

Sweep = tuple[str, str, int, int | None, int, int]


class Sweeps:
    """The runner's view of a campaign's sweeps while it runs (``done``: the keys already stored)."""

    def __init__(self, campaign: Campaign, store: Store, done: set[str]) -> None:
        self.campaign, self.store, self.done = campaign, store, done
        self.points = campaign.points()
        self.index = {p.key: i for i, p in enumerate(self.points)}
        self.next = 0
        self.stops: dict[Sweep, dict[str, object]] = {}
        self.shares = {w.name for w in campaign.workloads if any(isinstance(o, str) for o in w.offered_iops)}

    def catch_up(self, point: Point) -> None:
        """Weigh the points before ``point`` that an earlier run stored."""
        upto = self.index[point.key]
        for earlier in self.points[self.next : upto]:
            if earlier.key in self.done or earlier.legacy_key in self.done:
                self._weigh(earlier)
        self.next = max(self.next, upto)

    def measured(self, point: Point) -> None:
        self._weigh(point)
        self.next = self.index[point.key] + 1

    def stopped(self, point: Point) -> bool:
        return point.sweep() in self.stops

    def resolve(self, point: Point) -> tuple[Point, VmioError | None]:
        """``point`` with its share of the max point turned into IOPS, or the error that keeps it from
        running (its max point failed)."""
        if point.offered_pct is None:
            return point, None
        row = self._row(point.max_key())
        achieved = None if row is None else achieved_iops(row)
        if not achieved:
            return point, VmioError(
                f"{point.key}: offered {point.offered_label} is a share of the achieved IOPS "
                f"of {point.max_key()}, which has none (it failed)"
            )
        rate = max(1, round(achieved * point.offered_pct / 100))
        return dataclasses.replace(point, offered_iops=rate), None

    def record(self) -> list[dict[str, object]]:
        """Store where each sweep stopped (the campaign's last run decides) and return it."""
        out = []
        for sweep, stop in self.stops.items():
            at = self.index[str(stop["point"])]
            not_run = [p.key for p in self.points[at + 1 :] if p.sweep() == sweep]
            out.append({**stop, "not_run": not_run})
        self.store.set_stops(self.campaign.name, out)
        return out

    def _weigh(self, point: Point) -> None:
        workload = self.campaign.workload(point.workload)
        bound = workload.stop_at
        if bound is None or point.sweep() in self.stops:
            return
        if point.offered_iops is None and point.offered_pct is None and point.workload in self.shares:
            return  # the reference of the shares, not a step of the sweep
        row = self._row(point.key)
        value = None if row is None else latency_ms(row, bound.metric)
        if value is None or value <= bound.bound_ms:
            return
        target, name, bs, jobs, loads, rep = point.sweep()
        label = f"{target}/{name}/bs={format_size(bs)}" + (f"/jobs={jobs}" if jobs is not None else "")
        self.stops[point.sweep()] = {
            "sweep": f"{label}/load={loads}/rep={rep}",
            "point": point.key,
            "metric": bound.metric,
            "value_ms": round(value, 4),
            "bound_ms": bound.bound_ms,
            "why": f"{bound.metric} {value:.3g} ms > {bound.bound_ms:g} ms (stop_at)",
        }

    def _row(self, key: str) -> PointRow | None:
        """The stored point ``key`` if it is done."""
        for run in self.store.runs(self.campaign.name):
            if run["point_key"] == key and run["status"] == "done":
                return point_row(self.store, self.campaign.name, run)
        return None


def achieved_iops(row: PointRow) -> float:
    """A point row's achieved IOPS, read + write."""
    return float(row.read_iops or 0) + float(row.write_iops or 0)


def latency_ms(row: PointRow, metric: str) -> float | None:
    """A point row's latency ``metric`` (p50, p99, p99.9, mean) in ms: the worse of read and write."""
    lats = [row.lat_ns(ddir) for ddir in ("read", "write")]
    values = [v for lat in lats if lat and (v := lat.get(metric)) is not None]
    return max(values) / 1e6 if values else None
