"""Latency pictures from the stored histograms, never from averages: the distribution per point
(percentile curve), p50/p99 against achieved IOPS across the offered-load sweep (the knee), and
percentiles per second within a run (fio's histogram logs).

Repetitions are pooled by merging their histograms: a percentile of the union, exact to fio's buckets.
"""

from __future__ import annotations

import math

from vmio.report.chart import Chart, Panel
from vmio.report.data import CampaignData, Family, Group, families, iops, labels, offered_axis
from vmio.report.data import offered_label as olabel
from vmio.report.figure import Plot, color, finish, legend, log_scale, shared_legend, wide_x
from vmio.report.plots_load import family_title, series_label
from vmio.stats import histogram
from vmio.stats.histogram import Histogram

LEVELS = (1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99)
TICKS = (1.0, 50.0, 90.0, 99.0, 99.9, 99.99)
KNEE = (("p50", 50.0, "--"), ("p99", 99.0, "-"))
OVER_TIME = (("p50", 50.0, "--"), ("p99", 99.0, "-"), ("p99.9", 99.9, ":"))
# Each percentile its own marker and width too, so a legend's short sample tells them apart.
MARKS = {"p50": ("s", 1.0), "p99": ("o", 1.8), "p99.9": ("^", 1.2)}


def nines(p: float) -> float:
    """Where percentile ``p`` sits on the axis: -log10(1 - p/100) (p90 at 1, p99 at 2, p99.9 at 3)."""
    return -math.log10(1.0 - p / 100.0)


def pooled(data: CampaignData, group: Group, ddir: str) -> Histogram:
    """The group's repetitions merged into one histogram for ``ddir``."""
    return histogram.merge(data.hists.get(r.point, {}).get(ddir, {}) for r in group.rows)


def _ddirs(data: CampaignData, family: Family) -> list[str]:
    return data.ddirs(family[0]) or ["read"]


def _line_label(target: str, baseline: str | None, ddir: str, ddirs: list[str], extra: str = "") -> str:
    base = series_label(target, baseline)
    return " ".join(x for x in (base, ddir if len(ddirs) > 1 else "", extra) if x)


def distribution_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    """Per workload and load level: each target's latency percentile curve, one panel per offered load."""
    plots = []
    names = data.target_names()
    for i, (family, by_target) in enumerate(families(data).items()):
        axis = offered_axis(g for gs in by_target.values() for g in gs)
        ddirs = _ddirs(data, family)
        fig = Chart(1, len(axis), sharey=True)
        plot = Plot(
            f"latdist-{i}", f"Latency distribution: {family_title(family)}", labels(data, by_target), fig
        )
        panels = fig.grid[0]
        for ax, offered in zip(panels, axis, strict=True):
            for target, groups in by_target.items():
                for g in (g for g in groups if g.offered == offered):
                    for ddir in ddirs:
                        hist = pooled(data, g, ddir)
                        if hist:
                            label = _line_label(target, baseline, ddir, ddirs)
                            panel, c = f"offered {olabel(offered)}", color(names, target, baseline)
                            ls = "--" if ddir == "write" else "-"
                            _curve(plot, ax, hist, label, panel, c, ls, target == baseline)
            _percentile_axis(ax)
            ax.set_title(f"offered {olabel(offered)} IOPS")
        shared_legend(list(panels), 7)  # a target's line looks the same in every panel
        panels[0].set_ylabel("latency (µs)")
        plot.caption += " · completion+submission latency per percentile from the merged json+ histograms"
        plot.caption += " of every job and repetition (fio's buckets)"
        finish(fig, plot.title, plot.caption)
        plots.append(plot)
    return plots


def _curve(
    plot: Plot, ax: Panel, hist: Histogram, label: str, panel: str, colour: str, ls: str, bold: bool
) -> None:
    values = histogram.percentiles(hist, LEVELS)
    xs = [p for p in LEVELS if values[p] is not None]
    ys = [float(values[p] or 0) / 1e3 for p in xs]
    width = 2.0 if bold else 1.3
    (line,) = ax.plot(
        [nines(p) for p in xs], ys, marker="o", ms=3, color=colour, ls=ls, lw=width, label=label
    )
    plot.tag(line, f"{label} {panel}")
    plot.keep(f"{label} {panel}", xs, ys)


def _percentile_axis(ax: Panel) -> None:
    ax.set_xticks([nines(p) for p in TICKS], [f"p{p:g}" for p in TICKS])
    ax.set_xlim(nines(LEVELS[0]) - 0.1, nines(LEVELS[-1]) + 0.1)
    ax.set_xlabel("percentile")
    log_scale(ax)
    ax.grid(alpha=0.3, which="both")


def knee_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    """Per workload: p50 and p99 against the median achieved IOPS at each offered load, one line per target."""
    plots = []
    names = data.target_names()
    for i, (family, by_target) in enumerate(families(data).items()):
        if len(offered_axis(g for gs in by_target.values() for g in gs)) < 2:
            continue  # no sweep, no curve
        ddirs = _ddirs(data, family)
        # p50 and p99 in panels of their own: one line per target in each
        fig = Chart(1, 2 * len(ddirs), width=3.3, height=2.6)
        plot = Plot(
            f"latiops-{i}",
            f"Latency against achieved IOPS: {family_title(family)}",
            labels(data, by_target),
            fig,
        )
        panels = fig.grid[0]
        for j, ddir in enumerate(ddirs):
            pair = {name: panels[2 * j + k] for k, (name, _, _) in enumerate(KNEE)}
            for target, groups in by_target.items():
                label, c = series_label(target, baseline), color(names, target, baseline)
                _knee_lines(plot, pair, data, groups, ddir, label, c)
            for name, ax in pair.items():
                wide_x(ax)
                ax.set_xlabel(f"achieved {ddir} IOPS")
                ax.set_ylabel(f"{ddir} {name} latency (µs)")
                ax.set_title(f"{ddir}s: {name}")
                log_scale(ax)
                ax.grid(alpha=0.3, which="both")
                legend(ax)
        plot.caption += " · one marker per offered load (ascending); latency from the merged histograms"
        finish(fig, plot.title, plot.caption)
        plots.append(plot)
    return plots


def _knee_lines(
    plot: Plot,
    axes: dict[str, Panel],
    data: CampaignData,
    groups: list[Group],
    ddir: str,
    label: str,
    colour: str,
) -> None:
    found = []  # each group's median achieved IOPS and its percentiles, the histograms merged once
    for g in groups:
        achieved = g.spread(lambda r: iops(r, ddir))
        if achieved is not None:
            found.append(
                (achieved.median, histogram.percentiles(pooled(data, g, ddir), [p for _, p, _ in KNEE]))
            )
    for name, p, ls in KNEE:
        ax = axes[name]
        xs = [x for x, values in found if values[p] is not None]
        ys = [float(values[p] or 0) / 1e3 for _, values in found if values[p] is not None]
        if xs:
            marker, width = MARKS[name]
            (line,) = ax.plot(xs, ys, marker=marker, ms=4, color=colour, ls=ls, lw=width, label=label)
            plot.tag(line, f"{label} {name}")
            plot.keep(f"{label} {name}", xs, ys)


def over_time_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    """Per workload and load level: p50/p99/p99.9 each second of the first done repetition, per offered load."""
    plots = []
    names = data.target_names()
    for i, (family, by_target) in enumerate(families(data).items()):
        axis = offered_axis(g for gs in by_target.values() for g in gs)
        logged = [
            o for o in axis if any(_log(data, g) for gs in by_target.values() for g in gs if g.offered == o)
        ]
        if not logged:
            continue
        ddirs = _ddirs(data, family)
        fig = Chart(1, len(logged), sharey=True)
        plot = Plot(
            f"lattime-{i}",
            f"Latency percentiles each second: {family_title(family)}",
            labels(data, by_target),
            fig,
        )
        panels = fig.grid[0]
        for ax, offered in zip(panels, logged, strict=True):
            for target, groups in by_target.items():
                for g in (g for g in groups if g.offered == offered):
                    for ddir in ddirs:
                        _time_lines(
                            plot,
                            ax,
                            _log(data, g),
                            ddir,
                            _line_label(target, baseline, ddir, ddirs),
                            f"offered {olabel(offered)}",
                            color(names, target, baseline),
                        )
            ax.set_title(f"offered {olabel(offered)} IOPS")
            ax.set_xlabel("time in the run (s)")
            log_scale(ax)
            ax.grid(alpha=0.3, which="both")
        shared_legend(list(panels), 6)  # a target's line looks the same in every panel
        panels[0].set_ylabel("completion latency (µs)")
        plot.caption += " · first done repetition; each second's clat histogram (fio write_hist_log, all jobs"
        plot.caption += (
            " merged): p99 solid with circles, p50 dashed with squares, p99.9 dotted with triangles"
        )
        finish(fig, plot.title, plot.caption)
        plots.append(plot)
    return plots


def _log(data: CampaignData, group: Group) -> list[tuple[int, str, Histogram]]:
    return next((log for r in group.rows if (log := data.hist_log.get(r.point))), [])


def _time_lines(
    plot: Plot,
    ax: Panel,
    log: list[tuple[int, str, Histogram]],
    ddir: str,
    label: str,
    panel: str,
    colour: str,
) -> None:
    seconds = [(t / 1000, bins) for t, d, bins in log if d == ddir and bins]
    for name, p, ls in OVER_TIME:
        xs = [t for t, _ in seconds]
        ys = [float(histogram.percentile(bins, p) or 0) / 1e3 for _, bins in seconds]
        if xs:
            marker, width = MARKS[name]
            (line,) = ax.plot(
                xs, ys, marker=marker, ms=3, color=colour, ls=ls, lw=width, label=f"{label} {name}"
            )
            plot.tag(line, f"{label} {name} {panel}")
            plot.keep(f"{label} {name} {panel}", xs, ys)
