"""Where a figure's panels sit: margins measured from the figure's own text, with no layout engine.

Every report figure is one grid of panels. Constrained layout placed them by measuring each panel's full
extent (building and measuring every tick), which took as long as drawing the figure. Here the margins are
the room the text needs, measured by its font without drawing: left of each panel the widest y tick label
and the y label, below it the x tick labels and the x label, above it the panel title; the caption at the
figure's foot and, when shown, the title at its head. ``tests/test_report_figure.py`` checks the result
against the drawn figure: nothing clipped, no panel's labels over another's.
"""

from __future__ import annotations

import functools
import textwrap

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.textpath import text_to_path

PT = 1 / 72  # inches per point
GAP = 4 * PT  # between a panel's text and its neighbour's, and around the figure's edges
WIDE = 1.06  # drawn text is up to ~5 % wider than its font's outlines (hinting at 100 dpi in PNGs)
TICK = (3.5 + 3.5) * PT  # a tick's length out of the axes and its label's pad (matplotlib's, kept)
LINE = 1.3  # a text line's height over its font size (DejaVu Sans ascent and descent, line spacing 1.2)


def lay_out(fig: Figure, title_shown: bool) -> None:
    """Place the grid of panels (title shown or not) so that no text is clipped or overlaps."""
    panels = [ax for ax in fig.axes if ax.get_subplotspec() is not None]
    if not panels:
        return
    rows, cols = panels[0].get_subplotspec().get_gridspec().get_geometry()  # type: ignore[union-attr]
    width, height = fig.get_size_inches()
    for ax in panels:
        _fit(ax.title, width / cols - 2 * GAP)
    left, right, across, panel_w = _across(panels, width, cols)
    bottom, top, down, panel_h = _down(fig, panels, height, rows, title_shown)
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        bottom=bottom / height,
        top=1 - top / height,
        wspace=across / panel_w,
        hspace=down / panel_h,
    )


def _across(panels: list[Axes], width: float, cols: int) -> tuple[float, float, float, float]:
    """Inches left of the panels, right of them, between two, and a panel's width."""
    first = [ax for ax in panels if ax.get_subplotspec().is_first_col()]  # type: ignore[union-attr]
    left = max(_left(ax) for ax in first)
    right = max(_overhang(ax.xaxis) for ax in panels) + GAP
    gap = max((_left(ax) for ax in panels if ax not in first), default=0.0) + right  # shared y: no labels
    panel = (width - left - right - (cols - 1) * gap) / cols
    # a title wider than its panel hangs over both sides (never past its cell: see _fit)
    hang = max(text_width(ax.title.get_text(), ax.title.get_fontproperties()) for ax in panels) - panel
    if hang > 0:
        left, right, gap = max(left, hang / 2 + GAP), max(right, hang / 2 + GAP), max(gap, hang + GAP)
        panel = (width - left - right - (cols - 1) * gap) / cols
    return left, right, gap, panel


def _down(
    fig: Figure, panels: list[Axes], height: float, rows: int, title_shown: bool
) -> tuple[float, float, float, float]:
    """Inches below the panels (with the caption), above them (with the title when shown), between two,
    and a panel's height; the caption and title move to the figure's edges."""
    last = [ax for ax in panels if ax.get_subplotspec().is_last_row()]  # type: ignore[union-attr]
    below = max(_below(ax) for ax in last)
    between = max((_below(ax) for ax in panels if ax not in last), default=0.0)  # shared x: no labels
    above = max(_above(ax) for ax in panels)
    caption: Text | None = getattr(fig, "_supxlabel", None)  # matplotlib keeps the supxlabel Text here
    title: Text | None = getattr(fig, "_suptitle", None)
    foot = GAP + (text_height(caption) + GAP if caption and caption.get_visible() else 0)
    head = GAP + (text_height(title) + GAP if title and title_shown else 0)
    if caption:
        caption.set_y(GAP / height)  # its foot (matplotlib: 1 % of the height above the figure's)
    if title:
        title.set_y(1 - GAP / height)  # its head
    if fig.legends:  # the figure's legend (report.figure.figure_legend): under the title, over the panels
        legend = fig.legends[0]
        legend.set_bbox_to_anchor((0.5, 1 - head / height), transform=fig.transFigure)
        head += legend_height(legend) + GAP
    panel = (height - foot - below - head - above - (rows - 1) * (between + above)) / rows
    return foot + below, head + above, between + above, panel


def legend_height(legend: Legend) -> float:
    """Inches a legend's rows take (entries in ``ncols`` columns; a row: its text and the spacing)."""
    entries = len(legend.get_texts())
    rows = -(-entries // max(legend._ncols, 1))  # type: ignore[attr-defined]
    size = legend.get_texts()[0].get_fontsize() if entries else 0.0
    return float(rows * size * (LINE + legend.labelspacing) * PT)


def _fit(title: Text, room: float) -> None:
    """Wrap a title wider than ``room`` inches at its spaces, into as many lines as it needs."""
    text = title.get_text().replace("\n", " ")
    size = text_width(text, title.get_fontproperties())
    if size <= room:
        return
    chars = max(int(len(text) * room / size), 10)
    title.set_text(textwrap.fill(text, chars))
    while text_width(title.get_text(), title.get_fontproperties()) > room and chars > 10:
        chars -= 5
        title.set_text(textwrap.fill(text, chars))


def _left(ax: Axes) -> float:
    """Room left of a panel: its y tick labels, ticks and y label."""
    label = ax.yaxis.label
    shown = ax.yaxis.get_tick_params(which="major").get("labelleft", True)  # hidden on a shared y axis
    room = max((text_width(t, _tick_font(ax.yaxis)) for t in _tick_labels(ax.yaxis) if shown), default=0.0)
    room += TICK
    if label.get_text():
        room += text_height(label) + ax.yaxis.labelpad * PT
    return room + GAP


def _below(ax: Axes) -> float:
    """Room below a panel: its x tick labels (their tallest), ticks and x label."""
    label = ax.xaxis.label
    shown = ax.xaxis.get_tick_params(which="major").get("labelbottom", True)  # hidden on a shared x axis
    lines = max((t.count("\n") + 1 for t in _tick_labels(ax.xaxis) if shown), default=0)
    room = lines * LINE * _tick_font(ax.xaxis).get_size_in_points() * PT + TICK
    if label.get_text():
        room += text_height(label) + ax.xaxis.labelpad * PT
    return room + GAP


def _above(ax: Axes) -> float:
    """Room above a panel: its title, and the y axis' offset or multiplier ("1e6") when it has one."""
    room = max(text_height(t) for t in (ax.title, ax._left_title, ax._right_title))  # type: ignore[attr-defined]
    if room:
        room += float(mpl.rcParams["axes.titlepad"]) * PT
    offset = ax.yaxis.get_major_formatter()
    if hasattr(offset, "get_offset") and offset.get_offset():
        room = max(room, text_height(ax.yaxis.offsetText))
    return room


def _overhang(axis: Axis) -> float:
    """How far the last x tick label can reach past the panel's right edge: half its width."""
    return max((text_width(t, _tick_font(axis)) / 2 for t in _tick_labels(axis)), default=0.0)


def _tick_labels(axis: Axis) -> list[str]:
    """The tick labels the axis will draw (major and minor ticks inside its view)."""
    low, high = sorted(axis.get_view_interval())
    out = []
    for locs, formatter in (
        (axis.get_majorticklocs(), axis.get_major_formatter()),
        (axis.get_minorticklocs(), axis.get_minor_formatter()),
    ):
        shown = [v for v in locs if low - 1e-9 * abs(high - low) <= v <= high + 1e-9 * abs(high - low)]
        out += [t for t in formatter.format_ticks(shown) if t]
    return out


def _tick_font(axis: Axis) -> FontProperties:
    """The font of the axis' tick labels (the first tick's: the others copy it)."""
    return axis.get_major_ticks(1)[0].label1.get_fontproperties()


def text_height(text: Text | None) -> float:
    """Inches a text takes across its lines (empty or hidden: none)."""
    if text is None or not text.get_visible() or not text.get_text():
        return 0.0
    return (text.get_text().count("\n") + 1) * LINE * text.get_fontproperties().get_size_in_points() * PT


@functools.lru_cache(maxsize=4096)
def text_width(text: str, font: FontProperties) -> float:
    """Inches a text's widest line takes in its font (tick labels repeat: cached)."""
    return (
        WIDE
        * max(
            text_to_path.get_text_width_height_descent(line, font, ismath=False)[0]
            for line in text.split("\n")
        )
        * PT
    )
