"""``vmio report --series SERIES -o PAGE.html``: each figure over the series, one line per point, the campaigns in
time order on the x axis, changes marked and annotated with what changed, exact values on hover (an SVG
``<title>`` per value). One self-contained HTML file in the report's style, no scripts."""

from __future__ import annotations

import html
import math
import time
from collections.abc import Sequence

from vmio.report.trend import FIGURES, Change, Entry, Trend, rule

W, H = 900, 360
LEFT, RIGHT, TOP, BOTTOM = 80, 230, 40, 90
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf")
AXIS = {"iops": ("IOPS", 1.0), "bw": ("MiB/s", 1 / 2**20), "p50": ("ms", 1e-6), "p99": ("ms", 1e-6)}
TITLES = {
    "iops": "{d} IOPS per campaign (mean of repetitions)",
    "bw": "{d} bandwidth per campaign (mean of repetitions)",
    "p50": "{d} median latency (p50) per campaign",
    "p99": "{d} tail latency (p99) per campaign",
}


def render(t: Trend, css: str) -> str:
    """The page: what changed first, then one figure per figure over the series."""
    e = html.escape
    r = rule(t.min_change)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>vmio series: {e(t.series)}</title><style>{css}"
        " .worse { color: #b00; } .better { color: #070; }</style></head><body>",
        f"<h1>Series {e(t.series)}: {len(t.campaigns)} campaigns, {e(_first_last(t))}</h1>",
        _changes(t),
        "<p class='labels'>"
        + e(
            f"A change: Welch's 95 % interval of the difference of means lies wholly beyond "
            f"{t.min_change * 100:g}% of the mean of the window (the up to {r['window']} campaigns before, from the "
            "latest accepted, without those already changed, campaigns beyond 3 robust spreads of its median left "
            "out). Each marker is a campaign's mean; hover for its repetitions and interval."
        )
        + "</p>",
    ]
    for figure in FIGURES:
        lines = [(p.point, p.figures[figure]) for p in t.points if figure in p.figures]
        if lines:
            parts.append(_figure(t, figure, lines))
    parts.append(
        f"<p class='labels'>vmio trend {e(t.series)}, drawn {e(time.strftime('%Y-%m-%d %H:%M'))}</p>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def _first_last(t: Trend) -> str:
    names = [str(c["name"]) for c in t.campaigns]
    return f"{names[0]} to {names[-1]}" if names else "none"


def _changes(t: Trend) -> str:
    e = html.escape
    if not t.changes:
        return "<h2 id='changes'>What changed</h2><p>No figure changed by the rule below.</p>"
    rows = ["<tr><th>campaign</th><th>point</th><th>figure</th><th>change</th><th>changed with it</th></tr>"]
    for c in t.changes:
        css = "worse" if c.worse else "better"
        said = "accepted" if c.accepted else ("worse" if c.worse else "better")
        facts = "<br>".join(e(str(f)) for f in c.facts) or "no recorded fact"
        rows.append(
            f"<tr><td>{e(c.campaign)}</td><td>{e(c.point)}</td><td>{e(c.figure)}</td>"
            f"<td class='num {css}'>{c.size * 100:+.1f}% ({said})</td><td>{facts}</td></tr>"
        )
    return "<h2 id='changes'>What changed</h2><table>" + "".join(rows) + "</table>"


def _figure(t: Trend, figure: str, lines: Sequence[tuple[str, Sequence[Entry]]]) -> str:
    ddir, what, _ = FIGURES[figure]
    unit, scale = AXIS[what]
    names = [str(c["name"]) for c in t.campaigns]
    values = [e.spread.mean * scale for _, es in lines for e in es]
    step = nice_step(max(values) * 1.1 or 1.0)
    top = step * math.ceil(max(values) * 1.1 / step) if max(values) > 0 else step * 5
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(name: str) -> float:
        i = names.index(name)
        return LEFT + (pw * i / (len(names) - 1) if len(names) > 1 else pw / 2)

    def y(v: float) -> float:
        return TOP + ph * (1 - v / top)

    svg = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {H}' font-size='11'>"]
    for k in range(round(top / step) + 1):  # the value axis: numbers, gridlines, its unit
        v = step * k
        svg.append(f"<line x1='{LEFT}' x2='{LEFT + pw}' y1='{y(v):.1f}' y2='{y(v):.1f}' stroke='#eee'/>")
        svg.append(f"<text x='{LEFT - 6}' y='{y(v) + 4:.1f}' text-anchor='end'>{v:,.6g}</text>")
    svg.append(f"<text x='14' y='{TOP + ph / 2}' transform='rotate(-90 14 {TOP + ph / 2})' text-anchor='middle'>"
               f"{html.escape(ddir)} {what} ({unit})</text>")  # fmt: skip
    for c in t.campaigns:
        name = str(c["name"])
        cx = x(name)
        svg.append(f"<text x='{cx:.1f}' y='{TOP + ph + 14}' transform='rotate(30 {cx:.1f} {TOP + ph + 14})'>"
                   f"{html.escape(name)}</text>")  # fmt: skip
        if c["accepted"]:
            svg.append(f"<line x1='{cx:.1f}' x2='{cx:.1f}' y1='{TOP}' y2='{TOP + ph}' stroke='#999' "
                       f"stroke-dasharray='4 3'><title>{html.escape(name)}: accepted (the window starts here)</title></line>")  # fmt: skip
    svg.append(f"<line x1='{LEFT}' x2='{LEFT}' y1='{TOP}' y2='{TOP + ph}' stroke='#333'/>")
    svg.append(f"<line x1='{LEFT}' x2='{LEFT + pw}' y1='{TOP + ph}' y2='{TOP + ph}' stroke='#333'/>")
    changes = {(c.point, c.campaign): c for c in t.changes if c.figure == figure}
    for i, (point, entries) in enumerate(lines):
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{x(en.campaign):.1f},{y(en.spread.mean * scale):.1f}" for en in entries)
        svg.append(f"<polyline points='{path}' fill='none' stroke='{colour}' stroke-width='1.5'/>")
        for en in entries:
            svg.append(_marker(en, x(en.campaign), y(en.spread.mean * scale), colour, scale, unit, point))
            change = changes.get((point, en.campaign))
            if change is not None:
                right = x(en.campaign) > LEFT + pw / 2
                svg.append(_annotation(change, x(en.campaign), y(en.spread.mean * scale), right))
        last = entries[-1]
        svg.append(f"<text x='{LEFT + pw + 8}' y='{y(last.spread.mean * scale) + 4:.1f}' fill='{colour}'>"
                   f"{html.escape(point)}</text>")  # fmt: skip
    svg.append("</svg>")
    title = TITLES[what].format(d=ddir)
    return f"<figure id='{figure}'><figcaption>{html.escape(title)}</figcaption>{''.join(svg)}</figure>"


def _marker(en: Entry, cx: float, cy: float, colour: str, scale: float, unit: str, point: str) -> str:
    ci = en.spread
    span = (
        "" if ci.lo is None or ci.hi is None else f", 95% interval {ci.lo * scale:.4g} .. {ci.hi * scale:.4g}"
    )
    reps = ", ".join(f"{v * scale:.4g}" for v in en.values)
    vs = "" if en.size is None else f", {en.size * 100:+.1f}% vs window"
    tip = f"{point} / {en.campaign}: {ci.mean * scale:.4g} {unit}{span}; {ci.n} repetition(s): {reps}; {en.verdict}{vs}"
    return f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='4' fill='{colour}'><title>{html.escape(tip)}</title></circle>"


def nice_step(top: float) -> float:
    """A tick step of 1, 2 or 5 times a power of ten giving about five ticks up to ``top``."""
    raw = top / 5
    power = 10.0 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def _annotation(c: Change, cx: float, cy: float, right: bool) -> str:
    """A ring around the changed value, its size and the first fact above it (all facts on hover)."""
    colour = "#999" if c.accepted else ("#b00" if c.worse else "#070")
    facts = "; ".join(str(f) for f in c.facts) or "no recorded fact changed"
    label = f"{c.size * 100:+.0f}%" + (" accepted" if c.accepted else "")
    tip = f"{c.campaign}: {c.figure} {c.verdict} {c.size * 100:+.1f}%; changed with it: {facts}"
    first = html.escape(str(c.facts[0]) if c.facts else "")
    tx, anchor = (cx - 6, "end") if right else (cx + 6, "start")
    return (
        f"<g><title>{html.escape(tip)}</title>"
        f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='9' fill='none' stroke='{colour}' stroke-width='2'/>"
        f"<text x='{tx:.1f}' y='{cy - 26:.1f}' fill='{colour}' text-anchor='{anchor}'>{html.escape(label)}</text>"
        f"<text x='{tx:.1f}' y='{cy - 14:.1f}' fill='{colour}' font-size='9' text-anchor='{anchor}'>{first}</text></g>"
    )
