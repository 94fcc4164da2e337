"""The SLA knee: per target, workload, block size, load processes and direction, the highest achieved IOPS
whose latency metric stays within a bound, interpolated between the sweep's offered loads.

Offered loads are walked in ascending order ("max" last); the first one whose metric exceeds the bound
is the crossing, and the IOPS at the bound are interpolated linearly between it and the load before it
(in achieved IOPS against latency). A sweep that never exceeds the bound reports its highest achieved
IOPS, marked ``crossed: false``; a sweep over the bound from its first load reports no IOPS.
Percentiles pool the repetitions' histograms (exact to fio's buckets); the mean is weighted by operations.
"""

from __future__ import annotations

from dataclasses import dataclass

from vmio.report.data import CampaignData, Group, Offered, iops, offered_label
from vmio.spec.sla import Sla
from vmio.stats import histogram
from vmio.stats.spread import Spread
from vmio.units import format_size

PERCENTILE = {"p50": 50.0, "p99": 99.0, "p99.9": 99.9}


@dataclass(frozen=True)
class Knee:
    target: str
    workload: str
    bs: int
    load_processes: int
    ddir: str
    sla: Sla
    iops: float | None
    crossed: bool
    below: Offered | None  # the last offered load within the bound (None: none was)
    above: Offered | None  # the first offered load over it (None: never crossed)
    has_below: bool = True

    def as_dict(self) -> dict[str, object]:
        return {
            "target": self.target,
            "workload": self.workload,
            "bs": self.bs,
            "load_processes": self.load_processes,
            "dir": self.ddir,
            "metric": self.sla.metric,
            "bound_ms": self.sla.bound_ms,
            "iops": self.iops,
            "crossed": self.crossed,
            "between": [
                _offered(self.below) if self.has_below else None,
                _offered(self.above) if self.crossed else None,
            ],
        }


def _offered(o: Offered) -> int | str:
    return "max" if o is None else o


def metric_ms(data: CampaignData, group: Group, ddir: str, metric: str) -> float | None:
    """The group's latency metric for ``ddir`` in ms, its repetitions pooled."""
    if metric == "mean":
        pairs = [(lat["mean"] or 0.0, r.ops(ddir)) for r in group.rows if (lat := r.lat_ns(ddir))]
        ops = sum(n for _, n in pairs)
        return sum(m * n for m, n in pairs) / ops / 1e6 if ops else None
    hists = [data.hists.get(r.point, {}).get(ddir, {}) for r in group.rows]
    value = histogram.percentile(histogram.merge(hists), PERCENTILE[metric])
    if value is None:  # no bins stored: the rows' own figure (fio's, for one job), median over repetitions
        spread = Spread.of([(r.lat_ns(ddir) or {}).get(metric) for r in group.rows])
        return spread.median / 1e6 if spread else None
    return value / 1e6


def knees(data: CampaignData, sla: Sla) -> list[Knee]:
    by_line: dict[tuple[str, str, int, int], list[Group]] = {}
    for g in data.groups():
        if g.rows:
            t, w, bs, _, load = g.key
            by_line.setdefault((t, w, bs, load), []).append(g)  # groups come ordered by offered load
    return [
        knee(data, groups, ddir, sla, (t, w, bs, load))
        for (t, w, bs, load), groups in by_line.items()
        for ddir in data.ddirs(w)
    ]


def knee(
    data: CampaignData, groups: list[Group], ddir: str, sla: Sla, key: tuple[str, str, int, int]
) -> Knee:
    t, w, bs, load = key
    points = []
    for g in groups:
        achieved = g.spread(lambda r: iops(r, ddir))
        lat = metric_ms(data, g, ddir, sla.metric)
        if achieved is not None and lat is not None:
            points.append((g.offered, achieved.median, lat))
    within = [p for p in points if p[2] <= sla.bound_ms]
    over = next((i for i, p in enumerate(points) if p[2] > sla.bound_ms), None)
    if over is None:
        best = max(within, key=lambda p: p[1]) if within else None
        at_bound, below = best[1] if best else None, points[-1][0] if points else None
        return Knee(t, w, bs, load, ddir, sla, at_bound, False, below, None, bool(points))
    if over == 0:
        return Knee(t, w, bs, load, ddir, sla, None, True, None, points[0][0], has_below=False)
    (o0, x0, y0), (o1, x1, y1) = points[over - 1], points[over]
    at = x0 + (sla.bound_ms - y0) * (x1 - x0) / (y1 - y0)
    return Knee(t, w, bs, load, ddir, sla, at, True, o0, o1)


def format_text(rows: list[Knee], campaign: str, sla: Sla) -> str:
    title = (
        f"campaign {campaign!r}: highest achieved IOPS with {sla.metric} <= {sla.bound_ms:g} ms, interpolated "
        "between offered loads; medians over repetitions, percentiles of the pooled histograms\n"
    )
    if not rows:
        return title + "no points done\n"
    head = ("target", "workload", "bs", "load", "dir", f"IOPS at {sla.metric}<={sla.bound_ms:g}ms", "between")
    lines = [head]
    for k in rows:
        iops_text = "-" if k.iops is None else f"{k.iops:.0f}"
        if not k.crossed:
            where = f"never crossed (up to offered {offered_label(k.below)})" if k.has_below else "-"
        elif not k.has_below:
            where = f"over the bound from offered {offered_label(k.above)}"
        else:
            where = f"offered {_offered(k.below)} .. {_offered(k.above)}"
        lines.append(
            (k.target, k.workload, format_size(k.bs), str(k.load_processes), k.ddir, iops_text, where)
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return title + "".join(
        "  ".join(
            c.rjust(wd) if i == 5 else c.ljust(wd) for i, (c, wd) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        + "\n"
        for line in lines
    )
