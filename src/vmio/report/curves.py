"""``#curves``: IOPS and p50/p99 latency against each axis a campaign sweeps (offered load, queue depth,
jobs, block size), one line per target, the chart people draw fio's sweeps as.

Offered load is numeric (logarithmic when it spans a decade or more); an unthrottled (``max``) point sits
at the rate it achieved, marked as such. Each row of panels is one context (the workload with every other
parameter fixed) and one direction; its three panels share the x axis: IOPS, p50 and p99 (each its own
panel, so no panel holds more than ``MAX_LINES`` lines; more targets are split over more rows). A context
with a single value of the axis draws nothing. Values are medians over repetitions; every point carries its
exact value and unit in the SVG (``<title>``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vmio.report.chart import Chart, Panel
from vmio.report.data import CampaignData, Row, labels
from vmio.report.figure import Plot, color, comma, finish, legend, log_scale, plotted, slug
from vmio.stats.spread import Spread
from vmio.units import format_size

MAX_LINES = 8  # lines in one panel at most
AXES = ("offered", "iodepth", "numjobs", "bs")
AXIS_LABEL = {
    "offered": "offered IOPS (max: at its achieved IOPS)",
    "iodepth": "iodepth (I/Os in flight per job)",
    "numjobs": "jobs",
    "bs": "block size",
}
Context = tuple[object, ...]  # workload, then the other axes' values


@dataclass(frozen=True)
class Point:
    """One plotted point: x, the median y over repetitions, and what its title says."""

    x: float
    y: float
    title: str


def base_workload(row: Row) -> str:
    """The workload's own name (a sweep's rows are relabelled ``rr qd=8`` for the other figures)."""
    parts = row.point.split("/")
    return parts[1] if len(parts) > 1 else row.workload


def axis_value(data: CampaignData, row: Row, axis: str) -> int | None:
    """The row's value on ``axis`` (offered: None for max)."""
    spec = data.workload_specs.get(base_workload(row))
    if axis == "offered":
        return row.offered_iops
    if axis == "bs":
        return row.bs
    if axis == "iodepth":
        return row.iodepth if row.iodepth is not None else (spec.iodepth if spec else None)
    return row.numjobs if row.numjobs is not None else (spec.numjobs if spec else None)


def context_of(data: CampaignData, row: Row, axis: str) -> Context:
    """Everything that stays fixed along ``axis``: the workload, the other axes, the load processes."""
    others = tuple(axis_value(data, row, a) for a in AXES if a != axis)
    return (base_workload(row), *others, row.load_processes)


def swept(data: CampaignData) -> dict[str, dict[Context, list[Row]]]:
    """Per axis, the contexts (with their done rows) in which it takes two values or more."""
    out: dict[str, dict[Context, list[Row]]] = {}
    for axis in AXES:
        contexts: dict[Context, list[Row]] = {}
        for row in data.done():
            contexts.setdefault(context_of(data, row, axis), []).append(row)
        kept = {c: rows for c, rows in contexts.items() if len({axis_value(data, r, axis) for r in rows}) > 1}
        if kept:
            out[axis] = kept
    return out


def context_title(data: CampaignData, axis: str, context: Context) -> str:
    """``rr · bs 4k · qd 32`` — the fixed parameters of a row of panels."""
    names = [a for a in AXES if a != axis]
    values = dict(zip(names, context[1:-1], strict=True))
    parts = [str(context[0])]
    if "offered" in values:
        parts.append(f"offered {'max' if values['offered'] is None else values['offered']}")
    if "bs" in values and isinstance(values["bs"], int):
        parts.append(f"bs {format_size(values['bs'])}")
    if "iodepth" in values and values["iodepth"] is not None:
        parts.append(f"qd {values['iodepth']}")
    if "numjobs" in values and values["numjobs"] is not None:
        parts.append(f"jobs {values['numjobs']}")
    if context[-1]:
        parts.append(f"{context[-1]} load processes")
    return " · ".join(parts)


def lat_ms(key: str, ddir: str) -> Callable[[Row], float | None]:
    def value(row: Row) -> float | None:
        lat = row.lat_ns(ddir)
        v = lat.get(key) if lat is not None else None
        return None if v is None else float(v) / 1e6

    return value


def iops_of(ddir: str) -> Callable[[Row], float | None]:
    return lambda row: float(row.iops(ddir))


def points(
    data: CampaignData, rows: list[Row], axis: str, ddir: str, value: Callable[[Row], float | None], unit: str
) -> list[Point]:
    """One target's points along ``axis``: medians over repetitions, ``max`` at its achieved IOPS."""
    by_x: dict[int | None, list[Row]] = {}
    for r in rows:
        by_x.setdefault(axis_value(data, r, axis), []).append(r)
    out = []
    for v, reps in by_x.items():
        spread = Spread.of([value(r) for r in reps])
        if spread is None:
            continue
        if v is None and axis == "offered":
            achieved = Spread.of([float(r.iops(ddir)) for r in reps])
            x = achieved.median if achieved else 0.0
            where = f"offered max (achieved {x:,.0f} IOPS)"
        elif v is None:
            continue
        else:
            x = float(v)
            where = _where(axis, v)
        text = f"{reps[0].target} · {where}: {_figure(spread.median, unit)}"
        if spread.n > 1:
            text += f" (median of {spread.n}, {_figure(spread.lo, unit)} to {_figure(spread.hi, unit)})"
        out.append(Point(x, spread.median, text))
    return sorted(out, key=lambda p: p.x)


def _where(axis: str, v: int) -> str:
    if axis == "offered":
        return f"offered {v:,} IOPS"
    if axis == "bs":
        return f"bs {format_size(v)}"
    return f"{'iodepth' if axis == 'iodepth' else 'jobs'} {v}"


def _figure(value: float, unit: str) -> str:
    return f"{value:,.0f} IOPS" if unit == "IOPS" else f"{value:.3f} ms"


def curve_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    """One figure per swept axis (none for an axis no context sweeps)."""
    plots = []
    names = data.target_names()
    for axis, contexts in swept(data).items():
        panel_rows = []
        for context, rows in contexts.items():
            ddirs = [d for d in ("read", "write") if any(r.ops(d) for r in rows)] or ["read"]
            targets = [t for t in names if any(r.target == t for r in rows)]
            chunks = [targets[i : i + MAX_LINES] for i in range(0, len(targets), MAX_LINES)]
            panel_rows += [(context, rows, ddir, chunk) for ddir in ddirs for chunk in chunks]
        fig = Chart(len(panel_rows), 3, width=4.3, height=2.3)
        plot = Plot(
            f"curve-{axis}",
            f"IOPS and latency against {AXIS_LABEL[axis].split(' (')[0]}",
            labels(data),
            fig,
        )
        for panels, (context, rows, ddir, chunk) in zip(fig.grid, panel_rows, strict=True):
            title = context_title(data, axis, context)
            for ax, (what, value, unit) in zip(panels, _measures(ddir), strict=True):
                for target in chunk:
                    mine = [r for r in rows if r.target == target]
                    pts = points(data, mine, axis, ddir, value, unit)
                    _line(plot, ax, pts, target, f"{title} {ddir} {what}", color(names, target, baseline),
                          target == baseline)  # fmt: skip
                ax.set_title(f"{title}: {ddir} {what}")
                ax.set_ylabel(f"{ddir} {what}" + ("" if unit == "IOPS" else f" ({unit})"))
                _x_axis(ax, axis)
                _y_axis(ax)
                legend(ax)
        plot.caption += " · medians over repetitions; hover a point for its value"
        if axis == "offered":
            plot.caption += " · ◇ the unthrottled (max) point, at the IOPS it achieved"
        finish(fig, plot.title, plot.caption)
        plots.append(plot)
    return plots


def _measures(ddir: str) -> list[tuple[str, Callable[[Row], float | None], str]]:
    return [
        ("IOPS", iops_of(ddir), "IOPS"),
        ("p50", lat_ms("p50", ddir), "ms"),
        ("p99", lat_ms("p99", ddir), "ms"),
    ]


def _line(plot: Plot, ax: Panel, pts: list[Point], target: str, where: str, colour: str, bold: bool) -> None:
    if not pts:
        return
    xs, ys = [p.x for p in pts], [p.y for p in pts]
    (line,) = ax.plot(xs, ys, marker="o", ms=4, color=colour, lw=2.2 if bold else 1.5, label=target)
    unthrottled = [p for p in pts if "offered max" in p.title]
    if unthrottled:  # a hollow diamond around the max point (not a series: no legend entry)
        ax.plot([p.x for p in unthrottled], [p.y for p in unthrottled], marker="D", ms=9, mfc="none",
                mec=colour, ls="none")  # fmt: skip
    label = f"{target} {where}"
    plot.tag(line, label)
    plot.keep(label, xs, ys)
    plot.titles[f"{plot.id}--{slug(label)}"] = [p.title for p in pts]


def _x_axis(ax: Panel, axis: str) -> None:
    positive = plotted(ax, "x")
    if axis == "bs" or (positive and max(positive) / min(positive) >= 10):
        ax.set_xscale("log", base=2 if axis in ("bs", "iodepth", "numjobs") else 10)
        if axis != "offered":  # the swept values themselves as ticks
            ax.set_xticks(sorted(set(positive)))
        ax.x.minor = False  # decades only
    ax.x.format = _size if axis == "bs" else comma
    ax.set_xlabel(AXIS_LABEL[axis])
    ax.grid(alpha=0.3)


def _size(v: float) -> str:
    return format_size(int(v))


def _y_axis(ax: Panel) -> None:
    ys = plotted(ax, "y")
    if ys and max(ys) / min(ys) > 100:
        log_scale(ax)
    else:
        ax.set_ylim(bottom=0)
