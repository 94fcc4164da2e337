"""Figures against offered load: achieved IOPS per target with the baseline (hitachi-nvme-2016 Fig. 4, 5, 7, 8),
device busy % and host CPU %usr/%sys (hitachi-nvme-2016 Fig. 6)."""

from __future__ import annotations

from collections.abc import Callable

from vmio.report.chart import Chart, Panel
from vmio.report.data import (
    CampaignData,
    Family,
    Group,
    Offered,
    Row,
    along,
    families,
    iops,
    labels,
    offered_axis,
)
from vmio.report.data import offered_label as olabel
from vmio.report.figure import Plot, color, comma, finish, legend, log_scale, plotted, wide_x
from vmio.store.rows import shared_host_note
from vmio.units import format_size


def family_title(family: Family) -> str:
    workload, bs, load = family
    return f"{workload} · bs {format_size(bs)} · {load} load process{'es' if load != 1 else ''}"


def series_label(target: str, baseline: str | None) -> str:
    return f"{target} (baseline)" if target == baseline else target


def curve(
    plot: Plot,
    ax: Panel,
    axis: list[Offered],
    groups: list[Group],
    value: Callable[[Row], float | None],
    label: str,
    colour: str,
    linestyle: str = "-",
    bold: bool = False,
    shown: str | None = None,
    numeric: bool = False,
) -> None:
    """Median over repetitions at each offered load, bars from min to max (``shown``: its legend label,
    when not ``label``). ``numeric``: at the offered rate itself, the unthrottled point at the IOPS it
    achieved (else one evenly spaced place per offered load)."""
    points = [(_x(axis, g, numeric), s) for g in groups if (s := g.spread(value)) is not None]
    points.sort(key=lambda p: p[0])
    if not points:
        return
    xs = [x for x, _ in points]
    med = [s.median for _, s in points]
    err = [[s.median - s.lo for _, s in points], [s.hi - s.median for _, s in points]]
    width = 2.2 if bold else 1.4
    bars = ax.errorbar(
        xs,
        med,
        yerr=err,
        marker="o",
        ms=4,
        capsize=3,
        color=colour,
        ls=linestyle,
        lw=width,
        label=shown or label,
    )
    plot.tag(bars.lines[0], label)
    plot.keep(label, [float(x) for x in xs], med)  # the medians the page states beside the SVG


def _x(axis: list[Offered], g: Group, numeric: bool) -> float:
    if not numeric:
        return float(axis.index(g.offered))
    if g.offered is not None:
        return float(g.offered)
    achieved = g.spread(lambda r: iops(r, "read") + iops(r, "write"))
    return achieved.median if achieved else 0.0


def numeric_offered(ax: Panel) -> None:
    """An offered-load axis in IOPS (log when it spans a decade)."""
    wide_x(ax)
    ax.x.format = comma
    ax.set_xlabel("offered IOPS")
    ax.grid(alpha=0.3)


def offered_ticks(ax: Panel, axis: list[Offered], xlabel: str = "offered IOPS") -> None:
    ax.set_xticks(range(len(axis)), [olabel(o) for o in axis])
    ax.set_xlabel(xlabel)
    ax.set_xlim(-0.4, len(axis) - 0.6)
    ax.grid(alpha=0.3)


def iops_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    plots = []
    names = data.target_names()
    for i, (family, by_target) in enumerate(families(data).items()):
        ddirs = data.ddirs(family[0]) or ["read"]
        axis = offered_axis(g for gs in by_target.values() for g in gs)
        fig = Chart(1, len(ddirs))
        plot = Plot(
            f"iops-{i}",
            f"Achieved IOPS against offered load: {family_title(family)}",
            labels(data, by_target),
            fig,
        )
        for ax, ddir in zip(fig.grid[0], ddirs, strict=True):
            for target, groups in by_target.items():
                label, c = series_label(target, baseline), color(names, target, baseline)
                curve(plot, ax, axis, groups, along(iops, ddir), label, c, bold=target == baseline)
            _offered_line(plot, ax, axis, len(ddirs) == 1)
            offered_ticks(ax, axis)
            ax.set_ylabel(f"achieved {ddir} IOPS")
            ax.set_title(f"{ddir}s")
            _y_scale(ax)
            legend(ax, 7)
        finish(fig, plot.title, plot.caption)
        plots.append(plot)
    return plots


def _y_scale(ax: Panel) -> None:
    """Log when the values span more than two decades (an offered sweep often does), else from zero."""
    ys = plotted(ax, "y")
    if ys and max(ys) / min(ys) > 100:
        log_scale(ax)
    else:
        ax.set_ylim(bottom=0)


def _offered_line(plot: Plot, ax: Panel, axis: list[Offered], single_direction: bool) -> None:
    numeric = [(x, o) for x, o in enumerate(axis) if o is not None]
    if single_direction and numeric:
        xs, ys = [x for x, _ in numeric], [o for _, o in numeric]
        (line,) = ax.plot(xs, ys, ls=":", color="#888888", marker="x", label="offered")
        plot.tag(line, "offered")


def busy_cpu_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    plots = []
    names = data.target_names()
    for i, (family, by_target) in enumerate(families(data).items()):
        axis = offered_axis(g for gs in by_target.values() for g in gs)
        # %usr and %sys in panels of their own: one line per target in each
        fig = Chart(1, 3, width=2.2, height=2.6, sharey=True)
        plot = Plot(
            f"busy-cpu-{i}",
            f"Device busy % and host CPU against offered load: {family_title(family)}",
            labels(data, by_target),
            fig,
        )
        busy, usr, sys_ = fig.grid[0]
        for target, groups in by_target.items():
            c, bold = color(names, target, baseline), target == baseline
            label = series_label(target, baseline)
            curve(plot, busy, axis, groups, lambda r: r.metric("dev_busy_pct"), label, c, bold=bold,
                  numeric=True)  # fmt: skip
            curve(plot, usr, axis, groups, lambda r: r.metric("cpu_usr_pct"), f"{target} %usr", c, bold=bold,
                  shown=label, numeric=True)  # fmt: skip
            curve(plot, sys_, axis, groups, lambda r: r.metric("cpu_sys_pct"), f"{target} %sys", c, bold=bold,
                  shown=label, numeric=True)  # fmt: skip
        for ax, what in ((busy, "device busy %"), (usr, "host CPU %usr"), (sys_, "host CPU %sys")):
            numeric_offered(ax)
            ax.set_title(what)
            ax.set_ylim(0, 105)
            legend(ax)
        busy.set_ylabel("% of the time or of the CPUs")
        plot.caption += " · offered load in IOPS; the unthrottled (max) point at the IOPS it achieved"
        busy.set_title("device busy % (/proc/diskstats)")
        shared = shared_host_note(r for gs in by_target.values() for g in gs for r in g.rows)
        if shared:  # in the title: the caption holds the labels line (accelerator, versions, spread)
            plot.title += " (other work shared the host: %usr and %sys count it)"
        finish(fig, plot.title, plot.caption)
        plots.append(plot)
    return plots
