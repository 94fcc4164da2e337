"""A plot as the report holds it, and how it becomes inline SVG or PNG.

Figures are built on ``matplotlib.figure.Figure`` directly (no pyplot, no global figure registry).
Each series line carries a ``gid`` (``<plot id>--<series slug>``) so it can be found in the SVG.

Figures carry no layout engine: ``to_svg`` and ``to_png`` place the panels with margins measured from the
figure's text (``report.layout``) and then draw once.

A plot whose panels are a ``report.chart.Chart`` (lines, error bars and spans: most of a report's panels)
is drawn as SVG by vmio itself; its matplotlib figure is made from the chart only when asked for
(``Plot.figure``: PNGs, and tests that read artists). matplotlib is imported only then, or when a panel
kind vmio does not draw itself (the per-operation box plots) is built: a report of charts never imports it.
"""

from __future__ import annotations

import contextlib
import html
import io
import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vmio.report.chart import Bar, Chart, Item, Panel, Span
from vmio.report.chart import svg as chart_svg

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend

# Okabe and Ito's colours, told apart with every common colour-vision deficiency (the baseline is black;
# their yellow last: it is faint on white)
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442")
TEXT_PT = 8.0  # the smallest text on a figure: 10.7 px where the page shows it at its own size
LEGEND_PT = 8.0
BASELINE_COLOR = "#000000"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


@dataclass
class Plot:
    id: str
    title: str
    caption: str
    canvas: Figure | Chart | None  # None: drawn by another process, which sent ``svg`` (report.drawing)
    series: list[str] = field(default_factory=list)  # the labels of the plotted series
    values: dict[str, list[list[float]]] = field(default_factory=dict)  # series id → plotted [x, y] pairs
    svg: str | None = None  # the SVG once drawn
    titles: dict[str, list[str]] = field(default_factory=dict)  # series id → each point's hover text
    replayed: Figure | None = field(default=None, repr=False, compare=False)  # a chart's figure, once made

    @property
    def figure(self) -> Figure | None:
        """The matplotlib figure; a chart's is made from it on first ask, laid out as the page's SVG is."""
        if isinstance(self.canvas, Chart):
            if self.replayed is None:
                from vmio.report.layout import lay_out

                self.replayed = replay(self.canvas)
                lay_out(self.replayed, title_shown=False)
            return self.replayed
        return self.canvas

    def tag(self, artist: Artist | Item | list[Artist] | list[Bar] | tuple[Artist, ...], label: str) -> None:
        """Name a series' artists in the SVG and remember the label."""
        items = artist if isinstance(artist, list | tuple) else [artist]
        for i, item in enumerate(items):
            item.set_gid(f"{self.id}--{slug(label)}" + (f"-{i}" if i else ""))
        if label not in self.series:
            self.series.append(label)

    def keep(self, label: str, xs: list[float], ys: list[float]) -> None:
        """Remember the values a series plots (the page states them beside the SVG)."""
        self.values[f"{self.id}--{slug(label)}"] = [[x, y] for x, y in zip(xs, ys, strict=True)]

    def series_ids(self) -> list[str]:
        return [f"{self.id}--{slug(s)}" for s in self.series]


MAX_WIDTH = 13.5  # inches (972 pt, 1,296 px): a figure fits the page's 1,400 px column at its own size


def new_figure(rows: int, cols: int, width: float = 4.6, height: float = 3.2) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(min(max(width * cols, 6.4), MAX_WIDTH), height * rows + 0.8))


def color(targets: list[str], target: str, baseline: str | None) -> str:
    if target == baseline:
        return BASELINE_COLOR
    others = [t for t in targets if t != baseline]
    return PALETTE[others.index(target) % len(PALETTE)] if target in others else PALETTE[-1]


def log_scale(ax: Axes | Panel) -> None:
    """A log y axis labelled in plain numbers (300, 1000), not powers of ten."""
    if isinstance(ax, Panel):
        ax.y.scale = "log"
        return
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    # minor ticks only where they are labelled (2 and 5 in each decade): a tick label is laid out, drawn
    # or not, and 7 unlabelled ticks a decade were half the report's drawing time
    ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))


def plotted(ax: Panel, which: str) -> list[float]:
    """The positive x (``which="x"``) or y values of the panel's lines."""
    return [
        v
        for line in ax.get_lines()
        for v in (line.xs if which == "x" else line.ys)
        if v > 0 and math.isfinite(v)
    ]


def wide_x(ax: Panel) -> None:
    """A log x axis in plain numbers when the plotted x values span a decade or more (else linear)."""
    xs = plotted(ax, "x")
    if xs and max(xs) / min(xs) >= 10:
        ax.x.scale, ax.x.minor, ax.x.format = "log", False, comma


def comma(v: float) -> str:
    """A tick label in whole numbers with thousands' commas (12,000)."""
    return f"{v:,.0f}"


def legend(ax: Axes | Panel, size: int = 8) -> None:
    """The figure gets a legend of its labelled series, above its panels (never over the data):
    ``finish`` draws one for the whole figure, every label once."""
    ax.figure._vmio_legend = True  # type: ignore[union-attr,unused-ignore]


def shared_legend(axes: list[Axes] | list[Panel], size: int = 8) -> None:
    """One legend for panels whose series look alike (a repetition the same colour in each): the
    figure's (see ``legend``)."""
    for ax in axes:
        legend(ax, size)


def legend_of(fig: Figure | Chart, handles: dict[str, Artist] | dict[str, Item]) -> None:
    """The figure's legend: these entries (label → handle) instead of its panels' series."""
    fig._vmio_legend = handles  # type: ignore[union-attr,unused-ignore]


def figure_legend(fig: Figure) -> None:
    """Every panel's labelled series once (or the entries ``legend_of`` gave), in columns above the panels
    (``layout`` makes the room)."""
    given = getattr(fig, "_vmio_legend", True)
    handles: dict[str, Artist] = dict(given) if isinstance(given, dict) else {}
    for ax in fig.axes if not handles else ():
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    if not handles:
        return
    from matplotlib.font_manager import FontProperties

    from vmio.report.layout import text_width

    font = FontProperties(family="DejaVu Sans", size=LEGEND_PT)
    column = max(text_width(label, font) for label in handles) + 4.5 * LEGEND_PT / 72  # line sample, gaps
    ncol = max(1, min(len(handles), int(fig.get_figwidth() * 0.96 // column)))
    made = fig.legend(
        list(handles.values()), list(handles), loc="upper center", ncol=ncol, fontsize=LEGEND_PT,
        handlelength=3.0, frameon=False, borderaxespad=0.0, columnspacing=1.0,
    )  # fmt: skip
    made.set_in_layout(False)


def inside(legend: Legend) -> None:
    """A legend the axes hold (placed "best", inside them) leaves the layout alone."""
    legend.set_in_layout(False)


def finish(fig: Figure | Chart, title: str, caption: str) -> None:
    """Title on top, the labels line (accelerator, versions, spread) at the bottom, both inside the layout."""
    if isinstance(fig, Chart):
        fig.finish(title, caption)
        return
    fig.suptitle(textwrap.fill(title, int(fig.get_figwidth() * 12)), fontsize=10)
    fig.supxlabel(textwrap.fill(caption, int(fig.get_figwidth() * 15)), fontsize=TEXT_PT, color="#444444")
    if getattr(fig, "_vmio_legend", False):
        figure_legend(fig)


def style() -> contextlib.AbstractContextManager[None]:
    """The rc settings figures are built under (fonts resolve when artists are made)."""
    # axes titles sit just above their axes (none has tick labels on top): placed automatically, matplotlib
    # measured every y axis again for each title, a fifth of the drawing time
    import matplotlib as mpl

    return mpl.rc_context(
        {
            "font.family": "DejaVu Sans",
            "font.size": TEXT_PT,
            "axes.titlesize": 9,
            "axes.titley": 1.0,
            "legend.fontsize": LEGEND_PT,
        }  # fmt: skip
    )


def to_svg(plot: Plot) -> str:
    """The figure as an ``<svg>`` element (no XML prolog), ids salted with the plot id."""
    if plot.svg is not None:
        return plot.svg
    if isinstance(plot.canvas, Chart):
        return titled(chart_svg(plot.canvas, plot.id), plot.titles)
    import matplotlib as mpl

    from vmio.report.layout import lay_out

    fig = _figure(plot)
    buf = io.StringIO()
    # The page gives the title once, as the figure's caption; the picture's own (kept for PNGs) is hidden.
    title = getattr(fig, "_suptitle", None)  # matplotlib keeps the suptitle Text here
    if title is not None:
        title.set_visible(False)
    # text stays text; every plotted vertex stays in the path (no simplification), so the SVG holds the data
    try:
        lay_out(fig, title_shown=False)
        with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": plot.id, "path.simplify": False}):
            fig.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        if title is not None:
            title.set_visible(True)
    text = buf.getvalue()
    return titled(text[text.index("<svg") :], plot.titles)


def titled(svg: str, titles: dict[str, list[str]]) -> str:
    """Each marker of a series (``<use>`` in its group, in plotting order) given its ``<title>``: the
    browser shows it on hover."""
    for gid, texts in titles.items():
        at = svg.find(f'<g id="{gid}">')
        if at < 0:
            continue
        parts = [svg[:at]]
        for text in texts:
            use = svg.find("<use ", at)
            end = svg.find("/>", use)
            if use < 0 or end < 0:
                break
            parts.append(svg[at:end] + f"><title>{html.escape(text)}</title></use>")
            at = end + 2
        svg = "".join(parts) + svg[at:]
    return svg


def to_png(plot: Plot, dpi: int = 100) -> bytes:
    import matplotlib as mpl

    from vmio.report.layout import lay_out

    fig = _figure(plot)
    buf = io.BytesIO()
    lay_out(fig, title_shown=True)
    with mpl.rc_context():
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def _figure(plot: Plot) -> Figure:
    fig = plot.figure
    if fig is None:  # a programming error: PNGs are never asked of plots drawn elsewhere
        raise ValueError(f"plot {plot.id} was drawn by another process: its figure is not here")
    return fig


def replay(chart: Chart) -> Figure:
    """The chart as a matplotlib figure: the same panels, series (their ids), spans, scales, ticks, limits,
    labels, legend and caption."""
    from matplotlib.figure import Figure

    with style():
        fig = Figure(figsize=chart.size)
        axes = fig.subplots(chart.rows, chart.cols, squeeze=False, sharex=chart.sharex, sharey=chart.sharey)
        made: dict[int, Artist] = {}
        for panel in chart.panels:
            ax = axes[panel.row][panel.col]
            for item in panel.items:
                made[id(item)] = _replayed(ax, item)
            _replay_axes(ax, panel)
        given = chart._vmio_legend
        if isinstance(given, dict):
            legend_of(fig, {label: made[id(h)] for label, h in given.items()})
        elif given:
            fig._vmio_legend = True  # type: ignore[attr-defined]
        finish(fig, chart.title, chart.caption)
    return fig


def _replayed(ax: Axes, item: Item) -> Artist:
    """One series, span or bar drawn on matplotlib's axes, with its id."""
    artist: Artist
    if isinstance(item, Bar):
        artist = ax.barh(item.y, item.width, left=item.left, color=item.color, height=item.height).patches[0]
    elif isinstance(item, Span):
        artist = ax.axvspan(item.x0, item.x1, color=item.color, alpha=item.alpha, lw=0, label=item.label)
    elif item.err is not None:
        artist = ax.errorbar(
            item.xs, item.ys, yerr=[item.err[0], item.err[1]], marker=item.marker, ms=item.ms,
            capsize=item.capsize, color=item.color, ls=item.ls, lw=item.lw, label=item.label,
        ).lines[0]  # fmt: skip
    else:
        (artist,) = ax.plot(
            item.xs, item.ys, ls=item.ls, color=item.color, lw=item.lw, marker=item.marker, ms=item.ms,
            label=item.label, mfc=item.mfc or item.color, mec=item.color,
        )  # fmt: skip
    if item.gid:
        artist.set_gid(item.gid)
    return artist


def _replay_axes(ax: Axes, panel: Panel) -> None:
    """A panel's title, labels, scales, ticks, limits and grid on matplotlib's axes."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

    ax.set_title(panel.title, fontsize=panel.title_size)
    ax.set_xlabel(panel.x.label)
    ax.set_ylabel(panel.y.label)
    if panel.y.scale == "log":
        log_scale(ax)
    if panel.x.scale == "log":
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: (panel.x.format or str)(v)))
        ax.xaxis.set_minor_locator(NullLocator())
    elif panel.x.format is not None:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: (panel.x.format or str)(v)))
    if panel.x.ticks is not None:
        ax.set_xticks(panel.x.ticks, panel.x.tick_labels)
    if panel.y.ticks is not None:
        ax.set_yticks(panel.y.ticks, panel.y.tick_labels)
    if panel.y.inverted:
        ax.yaxis.set_inverted(True)
    for axis, spec in ((ax.xaxis, panel.x), (ax.yaxis, panel.y)):
        if spec.nbins is not None:
            axis.set_major_locator(MaxNLocator(nbins=spec.nbins, integer=spec.integer))
    if panel.x.low is not None or panel.x.high is not None:
        ax.set_xlim(panel.x.low, panel.x.high)
    if panel.y.low is not None or panel.y.high is not None:
        ax.set_ylim(panel.y.low, panel.y.high)
    if panel.grid_alpha is not None:
        ax.grid(alpha=panel.grid_alpha, which=panel.grid_which, axis=panel.grid_axis)  # type: ignore[arg-type]
