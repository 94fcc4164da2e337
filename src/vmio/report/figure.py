"""A plot as the report holds it, and how it becomes inline SVG or PNG.

Figures are built on ``matplotlib.figure.Figure`` directly (no pyplot, no global figure registry).
Each series line carries a ``gid`` (``<plot id>--<series slug>``) so it can be found in the SVG.

Figures carry no layout engine: ``to_svg`` and ``to_png`` place the panels with margins measured from the
figure's text (``report.layout``) and then draw once.
"""

from __future__ import annotations

import contextlib
import html
import io
import re
import textwrap
from dataclasses import dataclass, field

import matplotlib as mpl
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from vmio.report.layout import lay_out, text_width

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
    figure: Figure | None  # None: drawn by another process, which sent ``svg`` (report.drawing)
    series: list[str] = field(default_factory=list)  # the labels of the plotted series
    values: dict[str, list[list[float]]] = field(default_factory=dict)  # series id → plotted [x, y] pairs
    svg: str | None = None  # the SVG once drawn
    titles: dict[str, list[str]] = field(default_factory=dict)  # series id → each point's hover text

    def tag(self, artist: Artist | list[Artist] | tuple[Artist, ...], label: str) -> None:
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
    return Figure(figsize=(min(max(width * cols, 6.4), MAX_WIDTH), height * rows + 0.8))


def color(targets: list[str], target: str, baseline: str | None) -> str:
    if target == baseline:
        return BASELINE_COLOR
    others = [t for t in targets if t != baseline]
    return PALETTE[others.index(target) % len(PALETTE)] if target in others else PALETTE[-1]


def log_scale(ax: Axes) -> None:
    """A log y axis labelled in plain numbers (300, 1000), not powers of ten."""
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    # minor ticks only where they are labelled (2 and 5 in each decade): a tick label is laid out, drawn
    # or not, and 7 unlabelled ticks a decade were half the report's drawing time
    ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))


def plotted(ax: Axes, which: str) -> list[float]:
    """The positive x (``which="x"``) or y values of the panel's lines."""
    out: list[float] = []
    for line in ax.get_lines():
        data = line.get_xdata() if which == "x" else line.get_ydata()
        out += [float(v) for v in np.asarray(data, dtype=float) if v > 0]
    return out


def wide_x(ax: Axes) -> None:
    """A log x axis in plain numbers when the plotted x values span a decade or more (else linear)."""
    xs = plotted(ax, "x")
    if xs and max(xs) / min(xs) >= 10:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_locator(NullLocator())


def legend(ax: Axes, size: int = 8) -> None:
    """The figure gets a legend of its labelled series, above its panels (never over the data):
    ``finish`` draws one for the whole figure, every label once."""
    ax.figure._vmio_legend = True  # type: ignore[union-attr]


def shared_legend(axes: list[Axes], size: int = 8) -> None:
    """One legend for panels whose series look alike (a repetition the same colour in each): the
    figure's (see ``legend``)."""
    for ax in axes:
        legend(ax, size)


def legend_of(fig: Figure, handles: dict[str, Artist]) -> None:
    """The figure's legend: these entries (label → handle) instead of its panels' series."""
    fig._vmio_legend = handles  # type: ignore[attr-defined]


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


def finish(fig: Figure, title: str, caption: str) -> None:
    """Title on top, the labels line (accelerator, versions, spread) at the bottom, both inside the layout."""
    fig.suptitle(textwrap.fill(title, int(fig.get_figwidth() * 12)), fontsize=10)
    fig.supxlabel(textwrap.fill(caption, int(fig.get_figwidth() * 15)), fontsize=TEXT_PT, color="#444444")
    if getattr(fig, "_vmio_legend", False):
        figure_legend(fig)


def style() -> contextlib.AbstractContextManager[None]:
    """The rc settings figures are built under (fonts resolve when artists are made)."""
    # axes titles sit just above their axes (none has tick labels on top): placed automatically, matplotlib
    # measured every y axis again for each title, a fifth of the drawing time
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
    fig = _figure(plot)
    buf = io.BytesIO()
    lay_out(fig, title_shown=True)
    with mpl.rc_context():
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def _figure(plot: Plot) -> Figure:
    if plot.figure is None:  # a programming error: PNGs are never asked of plots drawn elsewhere
        raise ValueError(f"plot {plot.id} was drawn by another process: its figure is not here")
    return plot.figure
