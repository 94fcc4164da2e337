"""Panels vmio draws as SVG itself, without matplotlib: lines with markers, error bars, shaded spans and
(stacked) horizontal bars on linear, log or categorical axes, in a grid with panel titles, axis labels, one
legend and the caption.

Building and drawing the report's many small panels through matplotlib (its artists, ticks and text layout)
was most of a report's time. A ``Chart`` records what a plot module asks of it through the few calls of
matplotlib's ``Axes`` those modules use (``plot``, ``errorbar``, ``axvspan``, ``barh``, titles, labels,
limits, ticks, grid) and ``svg`` writes it directly: the same groups a matplotlib SVG has where the page and its tests
look (``axes_N`` per panel, ``xtick_N``/``ytick_N``, each series a ``<g id="<plot>--<series>">`` holding
its line as ``<path d="M x y L ...">`` and its markers as ``<use>``), every plotted vertex in the path,
text as text. ``report.figure`` replays a chart onto a matplotlib figure when one is asked for (PNGs).

Text is measured with DejaVu Sans' advance widths (the report's font; ``ADVANCE`` below, read from the
font), so margins are the room the text needs, as ``report.layout`` measures them for matplotlib figures.
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

TEXT_PT = 8.0  # report.figure's: the smallest text on a figure
TITLE_PT = 9.0  # a panel's title (report.figure.style's axes.titlesize)
LINE = 1.3  # a text line's height over its font size (report.layout's)
WIDE = 1.06  # room given over the font's advance widths (report.layout's)
GAP = 4.0  # points between a panel's text and its neighbour's, and around the figure's edges
TICK = 3.5  # a tick's length out of the panel, and its label's pad
LABEL_PAD = 4.0  # between the tick labels and the axis label
TITLE_PAD = 6.0  # between a panel and its title
MARGIN = 0.05  # of the data's span, added at each end of an axis the data sets (matplotlib's default)
MAX_WIDTH = 13.5  # inches, report.figure's
# DejaVu Sans advance widths (font units, 2048 an em) of the characters a report's text uses
CHARS = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~µ·–—≤≥→≈×°²"
WIDTHS = (
    651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690, 1303, 1303, 1303, 1303,
    1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716, 1087, 2048, 1401, 1405, 1430, 1577, 1294, 1178,
    1587, 1540, 604, 604, 1343, 1141, 1767, 1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251,
    1403, 799, 690, 799, 1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569,
    1995, 1298, 1253, 1300, 1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212, 1075, 1303, 690, 1303, 1716, 1303,
    651, 1024, 2048, 1716, 1716, 1716, 1716, 1716, 1024, 821,
)  # fmt: skip
ADVANCE = dict(zip(CHARS, WIDTHS, strict=True))
EM = 2048
DASHES = {"-": None, "--": (3.7, 1.6), ":": (1.0, 1.65), "-.": (6.4, 1.6, 1.0, 1.6)}  # x line width


def text_width(text: str, size: float) -> float:
    """Points the widest line of ``text`` takes at ``size`` points (an unknown character: a digit's)."""
    return WIDE * size / EM * max(sum(ADVANCE.get(c, 1303) for c in line) for line in text.split("\n"))


def text_height(text: str, size: float) -> float:
    return (text.count("\n") + 1) * LINE * size if text else 0.0


class _Named:
    """``set_gid``/``get_gid`` as matplotlib's artists have them: the id a plot module gives a series, a span
    or a bar, written as its SVG group's id (each subclass holds ``gid``)."""

    gid: str | None

    def set_gid(self, gid: str) -> None:
        self.gid = gid

    def get_gid(self) -> str | None:
        return self.gid


@dataclass
class Line(_Named):
    """One series: its points, how it looks, and (``err``) error bars below and above each point."""

    xs: list[float]
    ys: list[float]
    color: str
    ls: str = "-"
    lw: float = 1.5
    marker: str | None = None
    ms: float = 6.0
    label: str | None = None
    gid: str | None = None
    err: tuple[list[float], list[float]] | None = None
    capsize: float = 0.0
    mfc: str | None = None  # "none": hollow markers

    def get_label(self) -> str | None:
        return self.label

    def get_xdata(self) -> list[float]:
        return self.xs

    def get_ydata(self) -> list[float]:
        return self.ys


@dataclass
class Span(_Named):
    """A shaded stretch of the x axis, the panel's full height."""

    x0: float
    x1: float
    color: str
    alpha: float
    label: str | None = None
    gid: str | None = None


@dataclass
class Bar(_Named):
    """A horizontal bar at ``y`` (``height`` tall, axis units) from ``left`` to ``left + width``."""

    y: float
    width: float
    left: float
    height: float
    color: str
    label: str | None = None
    gid: str | None = None


@dataclass
class Bars:
    """What ``Panel.barh`` returns: its bars as ``patches`` (matplotlib's shape)."""

    patches: list[Bar]


Item = Line | Span | Bar


@dataclass
class Errorbar:
    """What ``Panel.errorbar`` returns: ``lines[0]`` is the series (matplotlib's shape)."""

    lines: tuple[Line]


@dataclass
class Axis:
    """One axis of a panel: its scale, limits (None: from the data), ticks and label."""

    scale: str = "linear"  # or "log"
    low: float | None = None
    high: float | None = None
    ticks: list[float] | None = None  # fixed ticks (else chosen: nice numbers, or decades on a log axis)
    tick_labels: list[str] | None = None
    nbins: int | None = None  # at most this many intervals between chosen ticks
    integer: bool = False  # chosen ticks are whole numbers
    format: Callable[[float], str] | None = None  # a chosen tick's label
    minor: bool = True  # a log axis labels 2 and 5 in each decade too
    label: str = ""
    shown: bool = True  # tick labels drawn (a shared axis draws them on the outer panels only)
    inverted: bool = False  # the high end first (at the top of a y axis)


class Panel:
    """One panel of a chart, answering the calls of matplotlib's ``Axes`` the plot modules make."""

    def __init__(self, chart: Chart, row: int, col: int) -> None:
        self.figure = chart
        self.row, self.col = row, col
        self.x, self.y = Axis(), Axis()
        self.title, self.title_size = "", TITLE_PT
        self.items: list[Item] = []
        self.grid_alpha: float | None = None
        self.grid_which, self.grid_axis = "major", "both"

    def plot(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        color: str | None = None,
        ls: str = "-",
        lw: float = 1.5,
        marker: str | None = None,
        ms: float = 6.0,
        label: str | None = None,
        mfc: str | None = None,
        mec: str | None = None,
    ) -> list[Line]:
        """A series (``mec``, the marker's edge, is its colour: only one colour is kept)."""
        colour = mec or color or "#000000"
        line = Line([float(x) for x in xs], [float(y) for y in ys], colour, ls, lw, marker, ms, label)
        line.mfc = mfc
        self.items.append(line)
        return [line]

    def errorbar(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        yerr: Sequence[Sequence[float]],
        color: str,
        marker: str | None = None,
        ms: float = 6.0,
        capsize: float = 0.0,
        ls: str = "-",
        lw: float = 1.5,
        label: str | None = None,
    ) -> Errorbar:
        (line,) = self.plot(xs, ys, color=color, ls=ls, lw=lw, marker=marker, ms=ms, label=label)
        line.err = ([float(v) for v in yerr[0]], [float(v) for v in yerr[1]])
        line.capsize = capsize
        return Errorbar((line,))

    def axvspan(
        self, x0: float, x1: float, *, color: str, alpha: float, lw: float = 0.0, label: str | None = None
    ) -> Span:
        span = Span(float(x0), float(x1), color, alpha, label)
        self.items.append(span)
        return span

    def get_lines(self) -> list[Line]:
        return [i for i in self.items if isinstance(i, Line)]

    def barh(self, y: float, width: float, *, color: str, left: float = 0.0, height: float = 0.8) -> Bars:
        bar = Bar(float(y), float(width), float(left), float(height), color)
        self.items.append(bar)
        return Bars([bar])

    def set_yticks(self, ticks: Sequence[float], labels: Sequence[str] | None = None) -> None:
        self.y.ticks = [float(t) for t in ticks]
        self.y.tick_labels = list(labels) if labels is not None else None

    def invert_yaxis(self) -> None:
        self.y.inverted = True

    def get_legend_handles_labels(self) -> tuple[list[Item], list[str]]:
        shown = [i for i in self.items if i.label and not i.label.startswith("_")]
        return shown, [str(i.label) for i in shown]

    def set_title(self, text: str, fontsize: float | None = None) -> None:
        self.title, self.title_size = text, fontsize or TITLE_PT

    def set_xlabel(self, text: str) -> None:
        self.x.label = text

    def set_ylabel(self, text: str) -> None:
        self.y.label = text

    def set_xlim(self, left: float | None = None, right: float | None = None) -> None:
        self.x.low, self.x.high = (
            left if left is not None else self.x.low,
            right if right is not None else self.x.high,
        )

    def set_ylim(self, bottom: float | None = None, top: float | None = None) -> None:
        self.y.low, self.y.high = (
            bottom if bottom is not None else self.y.low,
            top if top is not None else self.y.high,
        )

    def set_xticks(self, ticks: Sequence[float], labels: Sequence[str] | None = None) -> None:
        self.x.ticks = [float(t) for t in ticks]
        self.x.tick_labels = list(labels) if labels is not None else None

    def grid(self, alpha: float = 0.3, which: str = "major", axis: str = "both") -> None:
        """Grid lines at every tick the panel draws (``which`` and ``axis`` kept for the replay)."""
        self.grid_alpha, self.grid_which, self.grid_axis = alpha, which, axis

    def set_xscale(self, scale: str, base: float = 10) -> None:
        self.x.scale = scale

    def set_yscale(self, scale: str, base: float = 10) -> None:
        self.y.scale = scale


class Chart:
    """A grid of panels (``rows`` by ``cols``, sized as ``report.figure.new_figure`` sizes figures), its
    caption and legend; ``sharex``/``sharey``: one scale for the panels, labelled on the outer ones."""

    def __init__(
        self,
        rows: int,
        cols: int,
        width: float = 4.6,
        height: float = 3.2,
        sharex: bool = False,
        sharey: bool = False,
    ) -> None:
        self.size = (min(max(width * cols, 6.4), MAX_WIDTH), height * rows + 0.8)  # inches
        self.rows, self.cols, self.sharex, self.sharey = rows, cols, sharex, sharey
        self.grid = [[Panel(self, r, c) for c in range(cols)] for r in range(rows)]
        self.title, self.caption = "", ""
        self._vmio_legend: bool | dict[str, Item] = False  # report.figure.legend/legend_of set it

    @property
    def panels(self) -> list[Panel]:
        return [p for row in self.grid for p in row]

    def finish(self, title: str, caption: str) -> None:
        self.title, self.caption = title, caption

    def legend_entries(self) -> dict[str, Item]:
        """The figure's legend: the entries ``legend_of`` gave, else every panel's labelled series once
        (none unless a panel asked for a legend)."""
        given = self._vmio_legend
        if isinstance(given, dict):
            return dict(given)
        out: dict[str, Item] = {}
        for panel in self.panels if given else ():
            for handle, label in zip(*panel.get_legend_handles_labels(), strict=True):
                out.setdefault(label, handle)
        return out


# ---- scales and ticks -------------------------------------------------------------------------------


def _limits(axis: Axis, values: list[float], extra: list[float]) -> tuple[float, float]:
    """The axis' view: its given limits, else the data's span (``extra``: values that widen it but add no
    margin, as a shaded span's edges) with ``MARGIN`` at each end; on a log axis, in decades."""
    log = axis.scale == "log"
    data = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    if not data:
        data = [1.0, 10.0] if log else [0.0, 1.0]
    t = math.log10 if log else float
    low, high = t(min(data)), t(max(data))
    if high == low:
        low, high = (
            (low - 0.5, high + 0.5) if log else (low - abs(low) * 0.05 or -1, high + abs(high) * 0.05 or 1)
        )
    pad = (high - low) * MARGIN
    low, high = low - pad, high + pad
    for e in extra:
        if math.isfinite(e) and (e > 0 or not log):
            low, high = min(low, t(e)), max(high, t(e))
    lo = axis.low if axis.low is not None else (10**low if log else low)
    hi = axis.high if axis.high is not None else (10**high if log else high)
    return lo, hi


def nice_step(span: float, nbins: int, integer: bool) -> float:
    """The smallest of 1, 2, 2.5, 5 and 10 times a power of ten that cuts ``span`` into at most ``nbins``
    intervals (whole numbers only with ``integer``): matplotlib's ``MaxNLocator`` steps."""
    raw = span / max(nbins, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        step = m * mag
        if integer and (step < 1 or step != int(step)):
            continue
        if step >= raw * (1 - 1e-9):
            return step
    return max(10 * mag, 1.0) if integer else 10 * mag


def _ticks(axis: Axis, low: float, high: float, room: float, across: bool) -> list[tuple[float, str]]:
    """The ticks inside ``low``..``high`` and their labels: fixed ones, else chosen: as many as fit in
    ``room`` (the axis' length in points) with a gap between labels (side by side when ``across``, an x
    axis; one above another on a y axis), at most ``nbins`` intervals."""

    def inside(v: float) -> bool:
        return low - 1e-9 * abs(high - low) <= v <= high + 1e-9 * abs(high - low)

    if axis.ticks is not None:
        labels = axis.tick_labels or [(axis.format or _plain)(t) for t in axis.ticks]
        return [(t, s) for t, s in zip(axis.ticks, labels, strict=True) if inside(t)]
    if axis.scale == "log":
        fmt = axis.format or _plain
        out = []
        for k in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
            out.append((10.0**k, fmt(10.0**k)))
            if axis.minor:
                out += [(m * 10.0**k, f"{m * 10.0**k:g}") for m in (2, 5)]
        out = sorted((v, s) for v, s in out if inside(v))
        if len(out) >= 2:
            return out
        # a log axis spanning less than its labelled ticks (latencies of 70-80 µs): evenly stepped values
        # within the view, labelled, so a reader can still read it (placed on the log scale)
        nbins = min(axis.nbins or 4, 4)
    else:
        nbins = axis.nbins or 9
    while True:
        step = nice_step(high - low, nbins, axis.integer)
        first = math.ceil(low / step - 1e-9)
        values = [k * step for k in range(first, math.floor(high / step + 1e-9) + 1)]
        digits = max(
            0,
            -math.floor(math.log10(step) + 1e-9)
            + (1 if round(step / 10 ** math.floor(math.log10(step) + 1e-9), 3) == 2.5 else 0),
        )
        out = [(v, axis.format(v) if axis.format else _fixed(v, digits)) for v in values if inside(v)]
        need = (
            sum(text_width(s, TEXT_PT) + TEXT_PT for _, s in out) if across else len(out) * 2 * LINE * TEXT_PT
        )
        if need <= room or nbins <= 2:
            return out
        nbins -= 1


def _fixed(v: float, digits: int) -> str:
    text = f"{v:.{digits}f}"
    return "0" if text.strip("-0.") == "" else text


def _plain(v: float) -> str:
    return f"{v:g}"


@dataclass
class _Scale:
    """An axis as drawn: data value → point on the page."""

    low: float
    high: float
    start: float  # points: where ``low`` sits
    end: float  # where ``high`` sits
    log: bool

    def __call__(self, v: float) -> float:
        t = math.log10 if self.log else float
        if self.log and v <= 0:
            return math.nan
        return self.start + (t(v) - t(self.low)) / (t(self.high) - t(self.low)) * (self.end - self.start)


# ---- layout and drawing ----------------------------------------------------------------------------


@dataclass
class _Placed:
    """A panel's box (points from the figure's top left), ticks and scales."""

    panel: Panel
    xticks: list[tuple[float, str]] = field(default_factory=list)
    yticks: list[tuple[float, str]] = field(default_factory=list)
    xlim: tuple[float, float] = (0.0, 1.0)
    ylim: tuple[float, float] = (0.0, 1.0)
    box: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)  # left, top, width, height


def _extent(chart: Chart) -> dict[int, tuple[tuple[float, float], tuple[float, float]]]:
    """Each panel's x and y limits (shared axes: one span for all)."""

    def spans(p: Panel) -> tuple[list[float], list[float], list[float]]:
        xs = [x for i in p.get_lines() for x in i.xs]
        ys = [y for i in p.get_lines() for y in i.ys]
        ys += [y - lo for i in p.get_lines() if i.err for y, lo in zip(i.ys, i.err[0], strict=True)]
        ys += [y + hi for i in p.get_lines() if i.err for y, hi in zip(i.ys, i.err[1], strict=True)]
        edges = [e for i in p.items if isinstance(i, Span) for e in (i.x0, i.x1)]
        bars = [i for i in p.items if isinstance(i, Bar)]
        xs += [e for b in bars for e in (b.left, b.left + b.width)]
        ys += [e for b in bars for e in (b.y - b.height / 2, b.y + b.height / 2)]
        return xs, ys, edges

    got = {id(p): spans(p) for p in chart.panels}
    allx = [x for v in got.values() for x in v[0]]
    ally = [y for v in got.values() for y in v[1]]
    alle = [e for v in got.values() for e in v[2]]
    out = {}
    for p in chart.panels:
        xs, ys, edges = got[id(p)]
        xlim = _limits(p.x, allx if chart.sharex else xs, alle if chart.sharex else edges)
        ylim = _limits(p.y, ally if chart.sharey else ys, [])
        bars = [i for i in p.items if isinstance(i, Bar)]
        if bars and p.x.low is None and min(min(b.left, b.left + b.width) for b in bars) >= 0:
            xlim = (0.0, xlim[1])  # bars stand on zero (matplotlib's sticky edge: no margin below it)
        out[id(p)] = (xlim, ylim[::-1] if p.y.inverted else ylim)
    if chart.sharey:  # a limit one panel sets holds for all (matplotlib's shared axes)
        lows = [p.y.low for p in chart.panels if p.y.low is not None]
        highs = [p.y.high for p in chart.panels if p.y.high is not None]
        for p in chart.panels:
            (xl, (lo, hi)) = out[id(p)]
            out[id(p)] = (xl, (lows[-1] if lows else lo, highs[-1] if highs else hi))
    return out


def _wrap(text: str, room: float, size: float) -> str:
    """A title wrapped at its spaces into lines no wider than ``room`` points (report.layout's ``_fit``)."""
    flat = text.replace("\n", " ")
    width = text_width(flat, size)
    if width <= room:
        return flat
    chars = max(int(len(flat) * room / width), 10)
    out = textwrap.fill(flat, chars)
    while text_width(out, size) > room and chars > 10:
        chars -= 5
        out = textwrap.fill(flat, chars)
    return out


def lay_out(chart: Chart) -> tuple[list[_Placed], float, float, list[str], int]:
    """Every panel placed with the room its text needs: (panels, width and height in points, the caption's
    lines, the legend's columns)."""
    width, height = chart.size[0] * 72, chart.size[1] * 72
    limits = _extent(chart)
    for p in chart.panels:  # shared axes: tick labels on the outer panels only
        p.x.shown = not chart.sharex or p.row == chart.rows - 1
        p.y.shown = not chart.sharey or p.col == 0
    cell_w, cell_h = width / chart.cols, height / chart.rows
    placed = []
    for p in chart.panels:
        xlim, ylim = limits[id(p)]
        p.title = _wrap(p.title, cell_w - 2 * GAP, p.title_size)
        placed.append(
            _Placed(
                p,
                _ticks(p.x, min(xlim), max(xlim), cell_w * 0.7, across=True),
                _ticks(p.y, min(ylim), max(ylim), cell_h * 0.6, across=False),
                xlim,
                ylim,
            )
        )

    def left(q: _Placed) -> float:
        ticks = max((text_width(s, TEXT_PT) for _, s in q.yticks), default=0.0) if q.panel.y.shown else 0.0
        return (
            GAP
            + TICK * 2
            + ticks
            + (text_height(q.panel.y.label, TEXT_PT) + LABEL_PAD if q.panel.y.label else 0)
        )

    def below(q: _Placed) -> float:
        lines = max((s.count("\n") + 1 for _, s in q.xticks), default=0) if q.panel.x.shown else 0
        label = text_height(q.panel.x.label, TEXT_PT) + LABEL_PAD if q.panel.x.label else 0.0
        return TICK * 2 + lines * LINE * TEXT_PT + label + GAP

    def above(q: _Placed) -> float:
        return text_height(q.panel.title, q.panel.title_size) + TITLE_PAD if q.panel.title else GAP

    first = [q for q in placed if q.panel.col == 0]
    last = [q for q in placed if q.panel.row == chart.rows - 1]
    right = max((text_width(s, TEXT_PT) / 2 for q in placed for _, s in q.xticks), default=0.0) + GAP
    x0 = max(left(q) for q in first)
    gap_x = max((left(q) for q in placed if q not in first), default=0.0) + right
    panel_w = (width - x0 - right - (chart.cols - 1) * gap_x) / chart.cols
    hang = max(text_width(q.panel.title, q.panel.title_size) for q in placed) - panel_w
    if hang > 0:  # a title wider than its panel hangs over both sides (never past its cell: _wrap)
        x0, right, gap_x = max(x0, hang / 2 + GAP), max(right, hang / 2 + GAP), max(gap_x, hang + GAP)
        panel_w = (width - x0 - right - (chart.cols - 1) * gap_x) / chart.cols
    caption = textwrap.fill(chart.caption, int(chart.size[0] * 15)).split("\n") if chart.caption else []
    foot = GAP + (len(caption) * LINE * TEXT_PT + GAP if caption else 0.0)
    entries = chart.legend_entries()
    ncol = 1
    head = GAP
    if entries:
        column = max(text_width(label, TEXT_PT) for label in entries) + 4.5 * TEXT_PT
        ncol = max(1, min(len(entries), int(width * 0.96 // column)))
        head += -(-len(entries) // ncol) * TEXT_PT * (LINE + 0.5) + GAP
    bottom = max(below(q) for q in last)
    between = max((below(q) for q in placed if q not in last), default=0.0)
    top = max(above(q) for q in placed)
    panel_h = (height - foot - bottom - head - top - (chart.rows - 1) * (between + top)) / chart.rows
    for q in placed:
        q.box = (
            x0 + q.panel.col * (panel_w + gap_x),
            head + top + q.panel.row * (panel_h + between + top),
            panel_w,
            panel_h,
        )
        _thin(q)
    return placed, width, height, caption, ncol


def _thin(q: _Placed) -> None:
    """Labels that would touch a neighbour's on a placed panel left blank (their ticks and grid lines stay):
    a log axis' 2 and 5 labels where the decades are close, first; a label is kept when it clears every
    kept one."""
    left, top, w, h = q.box
    for kind in ("x", "y"):
        axis = q.panel.x if kind == "x" else q.panel.y
        ticks = q.xticks if kind == "x" else q.yticks
        lim = q.xlim if kind == "x" else q.ylim
        at = (
            _Scale(*lim, left, left + w, axis.scale == "log")
            if kind == "x"
            else _Scale(*lim, top + h, top, axis.scale == "log")
        )
        log = axis.scale == "log"
        kept: list[tuple[float, float]] = []  # (centre, half extent) of each kept label
        for v, s in sorted(ticks, key=lambda t: log and not round(math.log10(t[0]), 6).is_integer()):
            if not s:
                continue
            half = (text_width(s, TEXT_PT) if kind == "x" else LINE * TEXT_PT) / 2 + 0.5
            if all(abs(at(v) - c) >= half + other for c, other in kept):
                kept.append((at(v), half))
            else:
                ticks[ticks.index((v, s))] = (v, "")


def _num(v: float) -> str:
    """A coordinate in points, to a hundredth (a finite value: callers leave out what cannot be drawn)."""
    return f"{v:.2f}"


def _text(
    x: float,
    y: float,
    text: str,
    size: float,
    anchor: str = "middle",
    color: str = "#000000",
    rotate: bool = False,
) -> str:
    turn = f' transform="rotate(-90 {_num(x)} {_num(y)})"' if rotate else ""
    fill = f"fill: {color}; " if color != "#000000" else ""
    return (
        f'<text x="{_num(x)}" y="{_num(y)}"{turn} style="{fill}font: {size:g}px \'DejaVu Sans\'; '
        f'text-anchor: {anchor}">{html.escape(text)}</text>'
    )


def _dashes(ls: str, lw: float) -> str:
    pattern = DASHES.get(ls)
    return f"; stroke-dasharray: {','.join(_num(d * lw) for d in pattern)}" if pattern else ""


def _circle(r: float) -> str:
    return f"M 0 {-r:g} A {r:g} {r:g} 0 1 0 0 {r:g} A {r:g} {r:g} 0 1 0 0 {-r:g} Z"


def marker_path(kind: str, size: float) -> tuple[str, bool]:
    """A marker's outline around (0, 0) for its size (diameter, points), and whether it is filled."""
    h = size / 2
    shapes = {
        "o": _circle(h),
        ".": _circle(h / 2),
        "s": f"M {-h:g} {-h:g} L {h:g} {-h:g} L {h:g} {h:g} L {-h:g} {h:g} Z",
        "D": f"M 0 {-h:g} L {h:g} 0 L 0 {h:g} L {-h:g} 0 Z",
        "^": f"M 0 {-h:g} L {h:g} {h:g} L {-h:g} {h:g} Z",
        "v": f"M 0 {h:g} L {h:g} {-h:g} L {-h:g} {-h:g} Z",
    }
    if kind == "x":
        return f"M {-h:g} {-h:g} L {h:g} {h:g} M {-h:g} {h:g} L {h:g} {-h:g}", False
    return shapes.get(kind, shapes["o"]), True


def svg(chart: Chart, salt: str) -> str:
    """The chart as an ``<svg>`` element (sizes in points), ids of its clip paths and markers salted with
    ``salt`` (the plot's id: unique on the page)."""
    placed, width, height, caption, ncol = lay_out(chart)
    out = [
        f'<svg xmlns:xlink="http://www.w3.org/1999/xlink" width="{_num(width)}pt" height="{_num(height)}pt" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" xmlns="http://www.w3.org/2000/svg" version="1.1">',
        '<defs><style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style></defs>',
        '<g id="figure_1">',
        f'<g id="patch_1"><path d="M 0 {_num(height)} L {_num(width)} {_num(height)} L {_num(width)} 0 L 0 0 z" '
        'style="fill: #ffffff"/></g>',
    ]
    counter = {"xtick": 0, "ytick": 0, "marker": 0}
    markers: dict[tuple[str, float], str] = {}
    defs: list[str] = []
    for n, q in enumerate(placed, 1):
        out.append(_panel(q, n, salt, counter, markers, defs))
    out.append(_legend(chart, width, ncol, salt, markers, defs))
    for i, line in enumerate(caption):
        y = height - GAP - (len(caption) - 1 - i) * LINE * TEXT_PT - 0.25 * TEXT_PT
        out.append(_text(width / 2, y, line, TEXT_PT, color="#444444"))
    out.append("</g>")
    out.append(f"<defs>{''.join(defs)}</defs></svg>\n")
    return "\n".join(out)


def _marker_id(
    kind: str, size: float, salt: str, markers: dict[tuple[str, float], str], defs: list[str]
) -> str:
    key = (kind, size)
    if key not in markers:
        markers[key] = f"m-{salt}-{len(markers)}"
        path, _ = marker_path(kind, size)
        defs.append(f'<path id="{markers[key]}" d="{path}"/>')
    return markers[key]


def _panel(
    q: _Placed,
    n: int,
    salt: str,
    counter: dict[str, int],
    markers: dict[tuple[str, float], str],
    defs: list[str],
) -> str:
    p = q.panel
    left, top, w, h = q.box
    sx = _Scale(*q.xlim, left, left + w, p.x.scale == "log")
    sy = _Scale(*q.ylim, top + h, top, p.y.scale == "log")
    clip = f"clip-{salt}-{n}"
    defs.append(
        f'<clipPath id="{clip}"><rect x="{_num(left)}" y="{_num(top)}" width="{_num(w)}" height="{_num(h)}"/></clipPath>'
    )
    out = [
        f'<g id="axes_{n}">',
        f'<g id="patch_{n + 1}"><path d="M {_num(left)} {_num(top + h)} L {_num(left + w)} {_num(top + h)} '
        f'L {_num(left + w)} {_num(top)} L {_num(left)} {_num(top)} z" style="fill: #ffffff"/></g>',
    ]
    for item in p.items:  # spans first, under the lines (as matplotlib's patches are)
        if isinstance(item, Span):
            x0, x1 = max(sx(item.x0), left), min(sx(item.x1), left + w)
            gid = f' id="{html.escape(item.gid)}"' if item.gid else ""
            out.append(
                f'<g{gid}><path d="M {_num(x0)} {_num(top + h)} L {_num(x1)} {_num(top + h)} L {_num(x1)} {_num(top)} '
                f'L {_num(x0)} {_num(top)} z" clip-path="url(#{clip})" style="fill: {item.color}; opacity: {item.alpha:g}"/></g>'
            )
    for item in p.items:  # bars next, under the lines
        if isinstance(item, Bar):
            x0, x1 = sx(item.left), sx(item.left + item.width)
            y0, y1 = sy(item.y - item.height / 2), sy(item.y + item.height / 2)
            gid = f' id="{html.escape(item.gid)}"' if item.gid else ""
            out.append(
                f'<g{gid}><path d="M {_num(x0)} {_num(y0)} L {_num(x1)} {_num(y0)} L {_num(x1)} {_num(y1)} '
                f'L {_num(x0)} {_num(y1)} z" clip-path="url(#{clip})" style="fill: {item.color}"/></g>'
            )
    grid = p.grid_alpha
    gx = grid if p.grid_axis in ("both", "x") else None
    gy = grid if p.grid_axis in ("both", "y") else None
    ticks = ['<g id="matplotlib.axis_1">']
    for v, s in q.xticks:
        counter["xtick"] += 1
        x = sx(v)
        mark = f'<path d="M {_num(x)} {_num(top + h)} L {_num(x)} {_num(top + h + TICK)}" style="stroke: #000000; stroke-width: 0.8"/>'
        line = (
            f'<path d="M {_num(x)} {_num(top + h)} L {_num(x)} {_num(top)}" clip-path="url(#{clip})" '
            f'style="fill: none; stroke: #b0b0b0; stroke-opacity: {gx:g}; stroke-width: 0.8"/>'
            if gx is not None
            else ""
        )
        label = (
            "".join(
                _text(x, top + h + 2 * TICK + (k + 0.8) * LINE * TEXT_PT - 0.3 * TEXT_PT, part, TEXT_PT)
                for k, part in enumerate(s.split("\n"))
            )
            if p.x.shown and s
            else ""
        )
        ticks.append(f'<g id="xtick_{counter["xtick"]}">{line}{mark}{label}</g>')
    ticks.append("</g>")
    ticks.append('<g id="matplotlib.axis_2">')
    for v, s in q.yticks:
        counter["ytick"] += 1
        y = sy(v)
        mark = f'<path d="M {_num(left)} {_num(y)} L {_num(left - TICK)} {_num(y)}" style="stroke: #000000; stroke-width: 0.8"/>'
        line = (
            f'<path d="M {_num(left)} {_num(y)} L {_num(left + w)} {_num(y)}" clip-path="url(#{clip})" '
            f'style="fill: none; stroke: #b0b0b0; stroke-opacity: {gy:g}; stroke-width: 0.8"/>'
            if gy is not None
            else ""
        )
        label = (
            _text(left - 2 * TICK, y + 0.36 * TEXT_PT, s, TEXT_PT, anchor="end") if p.y.shown and s else ""
        )
        ticks.append(f'<g id="ytick_{counter["ytick"]}">{line}{mark}{label}</g>')
    ticks.append("</g>")
    out += ticks
    for item in p.items:
        if isinstance(item, Line):
            out.append(_series(item, sx, sy, clip, salt, markers, defs))
    out.append(
        f'<path d="M {_num(left)} {_num(top + h)} L {_num(left)} {_num(top)} L {_num(left + w)} {_num(top)} '
        f'L {_num(left + w)} {_num(top + h)} z" style="fill: none; stroke: #000000; stroke-width: 0.8"/>'
    )
    if p.x.label:
        xl = max((s.count("\n") + 1 for _, s in q.xticks), default=0) if p.x.shown else 0
        y = top + h + 2 * TICK + xl * LINE * TEXT_PT + LABEL_PAD + 0.95 * TEXT_PT
        out.append(_text(left + w / 2, y, p.x.label, TEXT_PT))
    if p.y.label:
        room = max((text_width(s, TEXT_PT) for _, s in q.yticks), default=0.0) if p.y.shown else 0.0
        x = left - 2 * TICK - room - LABEL_PAD - 0.25 * TEXT_PT
        out.append(_text(x, top + h / 2, p.y.label, TEXT_PT, rotate=True))
    if p.title:
        lines = p.title.split("\n")
        for k, part in enumerate(lines):
            y = top - TITLE_PAD - (len(lines) - 1 - k) * LINE * p.title_size - 0.25 * p.title_size
            out.append(_text(left + w / 2, y, part, p.title_size))
    out.append("</g>")
    return "\n".join(out)


def _series(
    line: Line,
    sx: _Scale,
    sy: _Scale,
    clip: str,
    salt: str,
    markers: dict[tuple[str, float], str],
    defs: list[str],
) -> str:
    """A series: its error bars (apart, no id), then its group: the path through every point (broken where
    a value cannot be drawn) and a ``<use>`` of its marker at each point, in plotting order."""
    pts = [(sx(x), sy(y)) for x, y in zip(line.xs, line.ys, strict=True)]
    out = []
    if line.err:
        bars = []
        for (px, _), y, lo, hi in zip(pts, line.ys, *line.err, strict=True):
            y0, y1 = sy(y - lo), sy(y + hi)
            if math.isfinite(px) and math.isfinite(y0) and math.isfinite(y1):
                bars.append(f"M {_num(px)} {_num(y0)} L {_num(px)} {_num(y1)}")
                if line.capsize:
                    c = line.capsize
                    bars += [f"M {_num(px - c)} {_num(yy)} L {_num(px + c)} {_num(yy)}" for yy in (y0, y1)]
        if bars:
            out.append(
                f'<g><path d="{" ".join(bars)}" clip-path="url(#{clip})" style="fill: none; stroke: {line.color}; '
                f'stroke-width: {line.lw:g}"/></g>'
            )
    gid = f' id="{html.escape(line.gid)}"' if line.gid else ""
    out.append(f"<g{gid}>")
    if line.ls not in ("", "none", "None"):
        d, pen = [], "M"
        for px, py in pts:
            if math.isfinite(px) and math.isfinite(py):
                d.append(f"{pen} {_num(px)} {_num(py)}")
                pen = "L"
            else:
                pen = "M"
        out.append(
            f'<path d="{" ".join(d)}" clip-path="url(#{clip})" style="fill: none; stroke: {line.color}; '
            f'stroke-width: {line.lw:g}{_dashes(line.ls, line.lw)}; stroke-linecap: square"/>'
        )
    if line.marker:
        ref = _marker_id(line.marker, line.ms, salt, markers, defs)
        paint = _paint(line)
        uses = "".join(
            f'<use xlink:href="#{ref}" x="{_num(px)}" y="{_num(py)}" style="{paint}"/>'
            for px, py in pts
            if math.isfinite(px) and math.isfinite(py)
        )
        out.append(f'<g clip-path="url(#{clip})">{uses}</g>')
    out.append("</g>")
    return "\n".join(out)


def _paint(line: Line) -> str:
    """A marker's fill and edge: the line's colour, hollow for an unfilled kind or ``mfc="none"``."""
    filled = marker_path(line.marker or "o", line.ms)[1] and line.mfc != "none"
    return f"fill: {line.color if filled else 'none'}; stroke: {line.color}"


def _legend(
    chart: Chart, width: float, ncol: int, salt: str, markers: dict[tuple[str, float], str], defs: list[str]
) -> str:
    """The figure's legend above its panels: each entry's line (or shade) and marker, then its label."""
    entries = chart.legend_entries()
    if not entries:
        return ""
    sample, pad = 3.0 * TEXT_PT, 0.8 * TEXT_PT
    widths = [text_width(label, TEXT_PT) for label in entries]
    cols = [max(widths[i::ncol]) for i in range(ncol)]
    total = sum(sample + pad + c for c in cols) + (ncol - 1) * TEXT_PT
    x0 = (width - total) / 2
    out = ['<g id="legend_1">']
    for i, (label, handle) in enumerate(entries.items()):
        col, row = i % ncol, i // ncol
        x = x0 + sum(sample + pad + c + TEXT_PT for c in cols[:col])
        y = GAP + (row + 0.5) * TEXT_PT * (LINE + 0.5)
        if isinstance(handle, Span | Bar):
            alpha = handle.alpha if isinstance(handle, Span) else 1.0
            out.append(
                f'<path d="M {_num(x)} {_num(y - 0.35 * TEXT_PT)} L {_num(x + sample)} {_num(y - 0.35 * TEXT_PT)} '
                f'L {_num(x + sample)} {_num(y + 0.35 * TEXT_PT)} L {_num(x)} {_num(y + 0.35 * TEXT_PT)} z" '
                f'style="fill: {handle.color}; opacity: {alpha:g}"/>'
            )
        else:
            if handle.ls not in ("", "none", "None"):
                out.append(
                    f'<path d="M {_num(x)} {_num(y)} L {_num(x + sample)} {_num(y)}" style="fill: none; '
                    f'stroke: {handle.color}; stroke-width: {handle.lw:g}{_dashes(handle.ls, handle.lw)}"/>'
                )
            if handle.marker:
                ref = _marker_id(handle.marker, handle.ms, salt, markers, defs)
                paint = _paint(handle)
                out.append(
                    f'<use xlink:href="#{ref}" x="{_num(x + sample / 2)}" y="{_num(y)}" style="{paint}"/>'
                )
        out.append(_text(x + sample + pad, y + 0.36 * TEXT_PT, label, TEXT_PT, anchor="start"))
    out.append("</g>")
    return "\n".join(out)
