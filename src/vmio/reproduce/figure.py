"""A paper's figure redrawn from vmio's measurements: numeric axes, a few series, the paper's stated values
overlaid, drawn as inline SVG (every point carries its value on hover and as ``data-`` attributes).

The papers hold their figures' captions and the sentences about them, not the pictures: each figure names
the sentence it comes from (``source``) and what its axes and series are, so a reader can hold vmio's
points against what the paper says.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

WIDTH, HEIGHT = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 200, 16, 44  # the legend sits right of the data
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
PAPER_COLOUR = "#000"


class SeriesJson(TypedDict):
    name: str
    kind: str  # "vmio" | "paper"
    points: list[list[float]]
    claim: str | None


class MarkJson(TypedDict):
    axis: str
    value: float
    label: str


class FigureJson(TypedDict):
    id: str
    title: str
    source: str
    x: str
    y: str
    series: list[SeriesJson]
    marks: list[MarkJson]
    ticks: list[list[float | str]]
    lines: bool  # False: categories on x, points not joined


@dataclass(frozen=True)
class Series:
    """One line of points. ``kind`` ``paper``: the paper's stated values (drawn dashed, black);
    ``claim``: the claim whose values these points are, when they are."""

    name: str
    points: tuple[tuple[float, float], ...]
    kind: str = "vmio"
    claim: str | None = None

    def json(self) -> SeriesJson:
        return {
            "name": self.name,
            "kind": self.kind,
            "points": [[_r(x), _r(y)] for x, y in self.points],
            "claim": self.claim,
        }


@dataclass(frozen=True)
class Mark:
    """A value the paper states on one axis (a dashed rule across the plot), e.g. "up to about 1.5x"."""

    axis: str  # "x" | "y"
    value: float
    label: str

    def json(self) -> MarkJson:
        return {"axis": self.axis, "value": _r(self.value), "label": self.label}


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    source: str  # the paper's figure and the sentence the axes and series come from
    x: str  # the x axis' label with its unit
    y: str
    series: tuple[Series, ...]
    marks: tuple[Mark, ...] = ()
    ticks: tuple[tuple[float, str], ...] = field(default=())  # named x ticks (categories), else numeric
    lines: bool = True

    def json(self) -> FigureJson:
        return {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "x": self.x,
            "y": self.y,
            "series": [s.json() for s in self.series],
            "marks": [m.json() for m in self.marks],
            "ticks": [[_r(v), t] for v, t in self.ticks],
            "lines": self.lines,
        }


def svg(fig: FigureJson) -> str:
    """The figure as an inline ``<svg>`` element."""
    xs = [p[0] for s in fig["series"] for p in s["points"]] + [
        m["value"] for m in fig["marks"] if m["axis"] == "x"
    ]
    ys = [p[1] for s in fig["series"] for p in s["points"]] + [
        m["value"] for m in fig["marks"] if m["axis"] == "y"
    ]
    xs += [float(t[0]) for t in fig["ticks"]]
    x0, x1 = _span(xs, pad=0.04)
    y0, y1 = _span([*ys, 0.0] if ys and min(ys) >= 0 else ys, pad=0.08)
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return TOP + ph - (y - y0) / (y1 - y0) * ph

    out = [
        f"<svg class='figure' id='fig-{_e(fig['id'])}' viewBox='0 0 {WIDTH} {HEIGHT}' width='{WIDTH}' "
        f"height='{HEIGHT}' role='img' aria-label='{_e(fig['title'])}' xmlns='http://www.w3.org/2000/svg'>",
        f"<rect x='{LEFT}' y='{TOP}' width='{pw}' height='{ph}' fill='none' stroke='#999'/>",
    ]
    out += _axes(fig, (x0, x1), (y0, y1), px, py)
    for m in fig["marks"]:
        if m["axis"] == "y":
            y = py(m["value"])
            out.append(
                f"<line class='mark' x1='{LEFT}' x2='{LEFT + pw}' y1='{y:.1f}' y2='{y:.1f}' stroke='{PAPER_COLOUR}' "
                f"stroke-dasharray='6 4' data-value='{m['value']}'><title>{_e(m['label'])}</title></line>"
                f"<text x='{LEFT + pw - 4}' y='{y - 4:.1f}' font-size='11' text-anchor='end'>{_e(m['label'])}</text>"
            )
        else:
            x = px(m["value"])
            out.append(
                f"<line class='mark' y1='{TOP}' y2='{TOP + ph}' x1='{x:.1f}' x2='{x:.1f}' stroke='{PAPER_COLOUR}' "
                f"stroke-dasharray='6 4' data-value='{m['value']}'><title>{_e(m['label'])}</title></line>"
                f"<text x='{x + 3:.1f}' y='{TOP + 12}' font-size='11'>{_e(m['label'])}</text>"
            )
    colours = iter(COLOURS * 4)
    for i, s in enumerate(fig["series"]):
        colour = PAPER_COLOUR if s["kind"] == "paper" else next(colours)
        dash = " stroke-dasharray='5 3'" if s["kind"] == "paper" else ""
        pts = [(px(x), py(y)) for x, y in s["points"]]
        out.append(f"<g class='series' data-series='{_e(s['name'])}' data-kind='{s['kind']}'>")
        if len(pts) > 1 and fig["lines"]:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
            out.append(f"<polyline points='{path}' fill='none' stroke='{colour}' stroke-width='1.5'{dash}/>")
        shape = "rect" if s["kind"] == "paper" else "circle"
        for (a, b), (x, y) in zip(pts, s["points"], strict=True):
            tip = f"<title>{_e(s['name'])}: x {_num(x)}, y {_num(y)}</title>"
            if shape == "circle":
                out.append(
                    f"<circle cx='{a:.1f}' cy='{b:.1f}' r='3' fill='{colour}' data-x='{x}' data-y='{y}'>{tip}</circle>"
                )
            else:
                out.append(
                    f"<rect x='{a - 4:.1f}' y='{b - 4:.1f}' width='8' height='8' fill='none' stroke='{colour}' "
                    f"data-x='{x}' data-y='{y}'>{tip}</rect>"
                )
        out.append("</g>")
        ly = TOP + 14 + 16 * i
        out.append(
            f"<line x1='{WIDTH - RIGHT + 12}' x2='{WIDTH - RIGHT + 32}' y1='{ly - 4}' y2='{ly - 4}' "
            f"stroke='{colour}' stroke-width='2'{dash}/><text x='{WIDTH - RIGHT + 36}' y='{ly}' font-size='11'>"
            f"{_e(_short(s['name']))}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _axes(
    fig: FigureJson,
    xr: tuple[float, float],
    yr: tuple[float, float],
    px: object,
    py: object,
) -> list[str]:
    assert callable(px) and callable(py)
    out = []
    bottom = HEIGHT - BOTTOM
    xticks = [(float(v), str(t)) for v, t in fig["ticks"]] or [(v, _num(v)) for v in _nice(*xr)]
    for v, label in xticks:
        x = px(v)
        out.append(
            f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{bottom}' y2='{bottom + 4}' stroke='#666'/>"
            f"<text x='{x:.1f}' y='{bottom + 16}' font-size='11' text-anchor='middle'>{_e(label)}</text>"
        )
    for v in _nice(*yr):
        y = py(v)
        out.append(
            f"<line x1='{LEFT - 4}' x2='{LEFT}' y1='{y:.1f}' y2='{y:.1f}' stroke='#666'/>"
            f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y:.1f}' y2='{y:.1f}' stroke='#eee'/>"
            f"<text x='{LEFT - 6}' y='{y + 4:.1f}' font-size='11' text-anchor='end'>{_num(v)}</text>"
        )
    out.append(
        f"<text x='{LEFT + (WIDTH - LEFT - RIGHT) / 2:.0f}' y='{HEIGHT - 6}' font-size='12' "
        f"text-anchor='middle'>{_e(fig['x'])}</text>"
        f"<text transform='translate(14 {TOP + (HEIGHT - TOP - BOTTOM) / 2:.0f}) rotate(-90)' font-size='12' "
        f"text-anchor='middle'>{_e(fig['y'])}</text>"
    )
    return out


def _span(values: Sequence[float], pad: float) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    lo, hi = min(finite), max(finite)
    if hi == lo:
        return lo - 0.5 - abs(lo) * 0.1, hi + 0.5 + abs(hi) * 0.1
    room = (hi - lo) * pad
    return (lo if lo == 0 else lo - room), hi + room


def _nice(lo: float, hi: float, count: int = 5) -> list[float]:
    step = 10 ** math.floor(math.log10((hi - lo) / count))
    for m in (1, 2, 2.5, 5, 10):
        if (hi - lo) / (step * m) <= count:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step) + 1)]


def _num(v: float) -> str:
    return f"{v:.4g}"


def _short(name: str, width: int = 26) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _r(x: float) -> float:
    return round(float(x), 6)


def _e(text: str) -> str:
    return html.escape(text, quote=True)
