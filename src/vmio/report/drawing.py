"""A report's figures built and drawn as SVG, in two processes when this one may run on two CPUs.

Building and drawing matplotlib figures was most of a report's time and each figure is drawn alone (the
panels ``report.chart`` draws take a few ms a section: the page asks for the child only when matplotlib
draws some, ``page.worth_forking``). ``built`` forks a
child, and the child and this process share the report's sections: each takes the next section nobody has
taken from a queue (a pipe holding one byte per section, costliest first: one ``read`` of one byte takes
one, whichever process asks), builds and draws it; the child sends back what the page needs of its
sections' figures (SVG, ids, plotted values). A process slowed by the machine's other work so takes fewer
sections, instead of leaving the other waiting on a fixed half. ``svgs`` (for figures already built, as when
PNGs are written too) has a forked child, which inherits them, draw about half. The SVGs are the same text
whichever process draws them (ids are salted with the plot's id, not with the process). The child dies
with vmio (a parent-death SIGKILL) and is given ``TIMEOUT`` seconds; if it fails or runs out of time, this
process does its share too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypedDict

from vmio.report.chart import Chart
from vmio.report.figure import Plot, to_svg
from vmio.system import forked

TIMEOUT = 300.0  # seconds the child may take: a report of 1000 points draws in well under a minute
FIXED_COST = 4  # a figure's drawing cost beside one unit per panel (title, caption, page layout)


def built(
    makers: Sequence[Callable[[], list[Plot]]], order: Sequence[int], fork: bool = True
) -> list[list[Plot]]:
    """Each maker's plots, drawn. With two CPUs (and ``fork``: the work is worth a second process) a forked
    child and this process take the makers from one queue in ``order`` (indices, costliest first; the rest
    after them): the child starts with the first, this process with the second. A maker the child ran comes
    back as its plots without figures."""
    if len(makers) < 2 or not fork or not forked.may_fork():
        return [_drawn(make()) for make in makers]
    ranked = list(dict.fromkeys([*order, *range(len(makers))]))
    queue = _queue(ranked[1:])
    try:
        child, pipe = _fork(
            lambda: {str(i): [_sent(p) for p in _drawn(makers[i]())] for i in _taken(queue, ranked[0])}
        )
        try:
            out = {i: _drawn(makers[i]()) for i in _taken(queue)}
            sent = _collect(child, pipe)
        finally:
            forked.end(child, pipe)
    finally:
        os.close(queue)
    for key, plots in (sent or {}).items():
        out[int(key)] = [Plot(canvas=None, **p) for p in plots]
    return [out[i] if i in out else _drawn(makers[i]()) for i in range(len(makers))]


def _queue(items: Sequence[int]) -> int:
    """A pipe's reading end holding ``items`` (one byte each, its writing end closed: an empty queue reads
    as its end)."""
    if any(not 0 <= i < 256 for i in items):
        raise ValueError(f"a queue holds indices below 256, not {list(items)}")
    read, write = os.pipe()
    try:
        os.write(write, bytes(items))  # a handful of bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read


def _taken(queue: int, first: int | None = None) -> Iterator[int]:
    """``first``, then each item this process takes from ``queue`` (one byte a read: two processes reading
    one pipe never get the same byte) until it is empty."""
    if first is not None:
        yield first
    while taken := os.read(queue, 1):
        yield taken[0]


def _drawn(plots: list[Plot]) -> list[Plot]:
    for p in plots:
        p.svg = to_svg(p)
    return plots


class SentPlot(TypedDict):
    """What the page needs of a plot another process drew."""

    id: str
    title: str
    caption: str
    series: list[str]
    values: dict[str, list[list[float]]]
    svg: str | None


def _sent(plot: Plot) -> SentPlot:
    """What the page needs of a plot drawn here (JSON)."""
    return SentPlot(
        id=plot.id,
        title=plot.title,
        caption=plot.caption,
        series=plot.series,
        values=plot.values,
        svg=plot.svg,
    )


def svgs(plots: list[Plot]) -> dict[str, str]:
    """Each plot's SVG by plot id."""
    drawn = {p.id: p.svg for p in plots if p.svg is not None}
    left = [p for p in plots if p.svg is None]
    if len(left) < 2 or not forked.may_fork():
        return drawn | {p.id: to_svg(p) for p in left}
    mine, theirs = halves(left)
    child, pipe = _fork(lambda: {p.id: to_svg(p) for p in theirs})
    try:
        drawn |= {p.id: to_svg(p) for p in mine}
        sent = _collect(child, pipe)
    finally:
        forked.end(child, pipe)
    return drawn | (sent if sent is not None else {p.id: to_svg(p) for p in theirs})


def halves(plots: list[Plot]) -> tuple[list[Plot], list[Plot]]:
    """Two shares of about equal drawing cost (the costliest first, each to the lighter share)."""
    shares: tuple[list[Plot], list[Plot]] = ([], [])
    loads = [0, 0]
    for plot in sorted(plots, key=cost, reverse=True):
        lighter = loads.index(min(loads))
        shares[lighter].append(plot)
        loads[lighter] += cost(plot)
    return shares


def cost(plot: Plot) -> int:
    """A plot's drawing cost: a unit per matplotlib panel beside ``FIXED_COST`` (a chart vmio draws
    itself costs a tenth of that a panel)."""
    if isinstance(plot.canvas, Chart):
        return 1 + len(plot.canvas.panels) // 10
    return FIXED_COST + (len(plot.canvas.axes) if plot.canvas else 0)


def _fork(work: Callable[[], Any]) -> tuple[int, int]:
    """Start a child doing ``work`` (its result sent as JSON); return its pid and the pipe's reading end."""
    return forked.start(lambda: json.dumps(work()).encode())


def _collect(pid: int, pipe: int) -> Any:
    """What the child's work returned, or None when it failed or took more than ``TIMEOUT`` seconds."""
    sent = forked.collect(pid, pipe, TIMEOUT)
    return None if sent is None else json.loads(sent)
