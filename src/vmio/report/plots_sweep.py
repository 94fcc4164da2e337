"""Figures against queue depth and job count: achieved IOPS and mean latency at each ``iodepth``, one line
per ``numjobs`` (or against ``numjobs`` when only the job count varies), for every target, workload and
block size whose points sweep them: vmio's own ``iodepth``/``numjobs`` sweeps, or an imported tree of
fio runs such as bench-fio's ``<rw>-<iodepth>-<numjobs>.json``."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from vmio.report.chart import Chart, Panel
from vmio.report.data import CampaignData, Row, labels
from vmio.report.figure import PALETTE, Plot, finish, legend
from vmio.stats.spread import Spread
from vmio.units import format_size

DDIRS = ("read", "write")
SweepKey = tuple[str, str, int]  # target, workload (without its qd=/jobs= label), bs


def base_workload(row: Row) -> str:
    """The workload a swept point belongs to: ``rr`` of ``rr qd=8 jobs=2``."""
    return re.sub(r"( (qd|jobs)=\d+)+$", "", row.workload)


def sweeps(data: CampaignData) -> dict[SweepKey, list[Row]]:
    """The done points of each target, workload and block size that ran at several queue depths or job
    counts, in the campaign's order."""
    out: dict[SweepKey, list[Row]] = {}
    for row in data.done():
        if row.iodepth is not None or row.numjobs is not None:
            out.setdefault((row.target, base_workload(row), row.bs), []).append(row)
    return {
        k: rows
        for k, rows in out.items()
        if len({r.iodepth for r in rows}) > 1 or len({r.numjobs for r in rows}) > 1
    }


def sweep_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    plots = []
    for i, ((target, workload, bs), rows) in enumerate(sweeps(data).items()):
        by_depth = len({r.iodepth for r in rows}) > 1
        xname = "iodepth" if by_depth else "numjobs"
        ddirs = [d for d in DDIRS if any(r.ops(d) for r in rows)] or ["read"]
        fig = Chart(1, 2)
        title = f"IOPS and mean latency against {xname}: {target} · {workload} · bs {format_size(bs)}"
        plot = Plot(f"sweep-{i}", title, labels(data, [target]), fig)
        iops_ax, lat_ax = fig.grid[0]
        lines = sorted({r.numjobs or 1 for r in rows}) if by_depth else [0]
        for n, jobs in enumerate(lines):
            mine = [r for r in rows if not by_depth or (r.numjobs or 1) == jobs]
            name = f"numjobs={jobs}" if by_depth else "all points"
            for ddir in ddirs:
                label = f"{ddir} {name}" if len(ddirs) > 1 else name
                dash = "-" if ddir == "read" else "--"
                _line(plot, iops_ax, mine, by_depth, functools.partial(_iops, ddir=ddir), label, n, dash)
                _line(plot, lat_ax, mine, by_depth, functools.partial(_mean_ms, ddir=ddir),
                      f"latency {label}", n, dash)  # fmt: skip
        ticks = sorted({_x(r, by_depth) for r in rows})
        _axes(iops_ax, xname, ticks, "achieved IOPS")
        _axes(lat_ax, xname, ticks, "mean latency (ms)")
        legend(iops_ax, 7)
        finish(fig, plot.title, plot.caption)
        plots.append(plot)
    return plots


def _iops(row: Row, ddir: str) -> float | None:
    return row.iops(ddir)


def _mean_ms(row: Row, ddir: str) -> float | None:
    lat = row.lat_ns(ddir)
    mean = lat.get("mean") if lat else None
    return float(mean) / 1e6 if mean is not None else None


def _line(
    plot: Plot,
    ax: Panel,
    rows: Sequence[Row],
    by_depth: bool,
    value: Callable[[Row], float | None],
    label: str,
    n: int,
    dash: str,
) -> None:
    """The median over repetitions at each x (queue depth or job count), bars from min to max."""
    points = []
    for x in sorted({_x(r, by_depth) for r in rows}):
        spread = Spread.of([value(r) for r in rows if _x(r, by_depth) == x])
        if spread is not None and spread.median > 0:
            points.append((float(x), spread))
    if not points:
        return
    med = [s.median for _, s in points]
    err = [[s.median - s.lo for _, s in points], [s.hi - s.median for _, s in points]]
    colour = PALETTE[n % len(PALETTE)]
    bars = ax.errorbar(
        [x for x, _ in points], med, yerr=err, marker="o", ms=4, capsize=3, color=colour, ls=dash,
        label=label,
    )  # fmt: skip
    plot.tag(bars.lines[0], label)
    plot.keep(label, [x for x, _ in points], med)


def _x(row: Row, by_depth: bool) -> int:
    return (row.iodepth if by_depth else row.numjobs) or 1


def _axes(ax: Panel, xname: str, ticks: list[int], ylabel: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xlabel(xname)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
