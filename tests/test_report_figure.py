"""How a report figure becomes SVG and PNG: laid out once, drawn once, nothing overlapping."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from vmio.report import data, drawing, page
from vmio.report.figure import Plot, finish, legend, log_scale, new_figure, style, to_png, to_svg
from vmio.store import Store
from vmio.system import forked

from conftest import only_this_thread

STORES = Path(__file__).parent / "data" / "stores"

CAPTION = "accel: bare=host, vm=tcg · builds: vm=qemu 10.0.2 / q35 · fio-3.33 · kernel 6.1 · " * 3


def _plot() -> Plot:
    """Two rows of three panels with titles, axis labels, log axes and legends, as the report draws them."""
    with style():
        fig = new_figure(2, 3, width=3.8, height=2.4)
        plot = Plot("grid", "A grid of panels over time within a run: 4k-randread", CAPTION, fig)
        for i, ax in enumerate(fig.subplots(2, 3).flat):
            (line,) = ax.plot([0, 1, 2, 3], [10, 2000, 150000, 900 * (i + 1)], label=f"rep {i}")
            plot.tag(line, f"rep {i}")
            ax.set_title(f"target {i}: bs 4k, offered max, load 0", fontsize=7)
            ax.set_xlabel("time in run (s)")
            ax.set_ylabel("completion latency (µs)")
            log_scale(ax)
            legend(ax, 6)
        finish(fig, plot.title, plot.caption)
    return plot


def _wide_titles() -> Plot:
    """Six panels in a row sharing a y axis in the millions, titled wider than a panel (as the CPU per QEMU
    thread class figure of seven targets is), x labels reaching the right edge."""
    with style():
        fig = new_figure(1, 6)
        plot = Plot("row", "CPU per QEMU thread class (% of one core): 4k-randwrite", CAPTION, fig)
        for i, ax in enumerate(fig.subplots(1, 6, sharey=True)):
            ax.plot([500, 2000, 64000], [1.5e6, 2.5e6 * (i + 1), 10], label=f"target {i} vCPU threads")
            ax.set_title(
                f"1fio-per-vm-x2-2dev-{i} (bus=virtio-blk, iothreads={i}, vms=2, vcpus=1), more words"
            )
            ax.set_xlabel("offered IOPS")
            ax.set_ylabel("CPU % of one core (sum over VMs)")
            legend(ax, 7)
        finish(fig, plot.title, plot.caption)
    return plot


def _draws(fig: Figure) -> list[int]:
    """Count the figure's draws from now on."""
    count: list[int] = []
    draw = fig.draw

    def counted(renderer: object) -> None:
        count.append(1)
        draw(renderer)  # type: ignore[arg-type]

    fig.draw = counted  # type: ignore[method-assign]
    return count


def test_svg_and_png_each_draw_the_figure_once() -> None:
    plot = _plot()
    count = _draws(plot.figure)
    svg = to_svg(plot)
    assert len(count) == 1 and all(f'id="{gid}"' in svg for gid in plot.series_ids())
    assert to_png(plot).startswith(b"\x89PNG") and len(count) == 2


@pytest.mark.parametrize("make", [_plot, _wide_titles])
def test_the_layout_keeps_labels_apart(make: Callable[[], Plot]) -> None:
    """Long tick labels on log axes, titles, axis labels and a three-line caption: the caption below the
    panels' x labels, the title above their titles, no panel's labels over another's, all inside."""
    plot = make()
    to_svg(plot)
    assert overlaps(plot.figure, title_shown=False) == []
    to_png(plot)
    assert overlaps(plot.figure, title_shown=True) == []


@pytest.mark.parametrize(
    ("store", "campaign", "some"),
    [("demo000.db", "demo", {"iops-0", "latdist-0"}), ("v2-campaign.db", "base", {"time-0", "qemu-0"})],
)
def test_every_report_figure_keeps_its_labels_apart(store: str, campaign: str, some: set[str]) -> None:
    """Every figure of two real campaigns' reports (seven targets side by side, 21 panels over time, shared
    y axes, panel titles wider than their panels), as the page draws it (title hidden) and as a PNG."""
    report = page.build(data.load(Store(STORES / store, readonly=True), campaign))
    assert some <= {p.id for p in report.plots}
    for plot in report.plots:
        to_svg(plot)
        assert overlaps(plot.figure, title_shown=False) == [], plot.id
        to_png(plot)
        assert overlaps(plot.figure, title_shown=True) == [], plot.id


def overlaps(fig: Figure, title_shown: bool) -> list[str]:
    """What the drawn figure has out of place: each panel's full extent (tick labels, axis labels, title,
    legend) measured by the Agg renderer against the figure's edges, the caption, the title and each other."""
    renderer = RendererAgg(*fig.canvas.get_width_height(), fig.dpi)
    panels = [ax.get_tightbbox(renderer) for ax in fig.axes]
    caption = fig._supxlabel.get_window_extent(renderer)  # type: ignore[attr-defined]
    title = fig._suptitle.get_window_extent(renderer)  # type: ignore[attr-defined]
    page_box = Bbox.from_bounds(0, 0, *fig.canvas.get_width_height())
    wrong = [f"panel {i} over the caption" for i, p in enumerate(panels) if caption.ymax > p.ymin]
    wrong += [
        f"panel {i} under the title" for i, p in enumerate(panels) if title_shown and title.ymin < p.ymax
    ]
    for i, a in enumerate(panels):
        if not (
            page_box.containsx(a.xmin)
            and page_box.containsx(a.xmax)
            and a.ymin >= 0
            and a.ymax <= page_box.ymax
        ):
            wrong.append(f"panel {i} outside the figure: {a.bounds}")
        wrong += [
            f"panels {i} and {j} overlap" for j, b in enumerate(panels[i + 1 :], i + 1) if a.overlaps(b)
        ]
    return wrong


def test_two_processes_draw_the_same_svgs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forked child's share comes back whole and equal to drawing every figure here; a child that fails
    (its drawing raises) leaves its share to this process, and is reaped."""
    assert len(os.sched_getaffinity(0)) >= 2, "this machine has one CPU: svgs() would not fork"
    only_this_thread()
    build = lambda: page.build(data.load(Store(STORES / "v2-campaign.db", readonly=True), "base")).plots  # noqa: E731
    alone = {p.id: to_svg(p) for p in build()}
    plots = build()
    mine, theirs = drawing.halves(plots)
    assert mine and theirs and len(alone) == len(plots) >= 6
    sent: list[dict[str, str] | None] = []
    collect = drawing._collect
    monkeypatch.setattr(drawing, "_collect", lambda pid, pipe: sent.append(collect(pid, pipe)) or sent[-1])
    assert drawing.svgs(plots) == alone
    assert sent == [{p.id: alone[p.id] for p in theirs}]  # the child drew its share
    parent = os.getpid()

    def fails_in_the_child(plot: Plot) -> str:
        if os.getpid() != parent:
            raise RuntimeError("drawing failed")
        return to_svg(plot)

    monkeypatch.setattr(drawing, "to_svg", fails_in_the_child)
    assert drawing.svgs(build()) == alone
    assert sent[1:] == [None]
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind


def test_a_process_with_threads_draws_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forking beside another thread could leave a lock it holds held in the child: no fork then."""
    plots = page.build(data.load(Store(STORES / "v2-campaign.db", readonly=True), "base")).plots
    monkeypatch.setattr(drawing, "_fork", lambda _: pytest.fail("forked beside a thread"))
    stop = threading.Event()
    waiter = threading.Thread(target=stop.wait)
    waiter.start()
    try:
        assert set(drawing.svgs(plots)) == {p.id for p in plots}
    finally:
        stop.set()
        waiter.join()


def test_two_processes_take_each_queued_item_once() -> None:
    """The sections' queue: a child and this process reading it at once take every item, none twice."""
    queue = drawing._queue(range(200))
    try:
        child, pipe = drawing._fork(lambda: list(drawing._taken(queue, 255)))
        try:
            mine = list(drawing._taken(queue))
            theirs = drawing._collect(child, pipe)
        finally:
            forked.end(child, pipe)
    finally:
        os.close(queue)
    assert theirs is not None and theirs[0] == 255  # its first, given
    assert sorted(mine + theirs[1:]) == list(range(200))
    with pytest.raises(ValueError, match="below 256"):
        drawing._queue([256])


def test_a_report_built_and_drawn_by_two_processes_is_the_same_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """build(drawn=True): a child and this process take the sections from one queue, the child starting with
    the costliest (the figures within runs); the child sends back what the page needs of its sections; the
    page is the same text as one process makes (but for its time stamp), and when the child fails this
    process builds its sections too."""
    only_this_thread()
    campaign = data.load(Store(STORES / "v2-campaign.db", readonly=True), "base")
    # its figures are charts (a few ms a section): the second process is asked for here, as it is for a
    # campaign with matplotlib's per-operation box plots (test_a_report_of_charts_is_drawn_in_one_process)
    monkeypatch.setattr(page, "worth_forking", lambda _: True)
    stamp = re.compile(r"made by vmio on [^<]*")
    alone = stamp.sub("", page.render(page.build(campaign)))
    report = page.build(campaign, drawn=True)
    assert page.COSTLIEST[0] == "over-time"
    by_child = {s.id for s in report.sections if s.plots[0].figure is None}
    forked = [p for s in report.sections if s.id in by_child for p in s.plots]
    assert {"time-0", "time-1"} <= {p.id for p in forked}  # the child's first section
    ids = [p.id for p in report.plots]
    assert len(ids) == len(set(ids)) and {"time-0", "time-1", "qemu-0", "qemu-1"} <= set(ids)  # each once:
    assert all(p.figure is None and p.svg for p in forked)  # built and drawn by the child
    assert all(p.figure is not None and p.svg for p in report.plots if p not in forked)  # or by this one
    assert stamp.sub("", page.render(report)) == alone
    with pytest.raises(ValueError, match="drawn by another process"):
        to_png(forked[0])
    monkeypatch.setattr(drawing, "_collect", lambda pid, pipe: None)  # the child failed
    report = page.build(campaign, drawn=True)
    assert all(p.figure is not None for p in report.plots)
    assert stamp.sub("", page.render(report)) == alone


def test_a_report_of_charts_is_drawn_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A campaign without stored operations has no matplotlib figure: built and drawn here, no child (the
    fork cost more than it saved); one with operations (per-operation box plots) gets the second process."""
    campaign = data.load(Store(STORES / "v2-campaign.db", readonly=True), "base")
    assert not page.worth_forking(campaign)
    monkeypatch.setattr(drawing, "_fork", lambda _: pytest.fail("forked for a report of charts"))
    report = page.build(campaign, drawn=True)
    assert report.plots and all(p.figure is not None and p.svg for p in report.plots)
    campaign.oplat = {campaign.rows[0].point: []}
    assert page.worth_forking(campaign)
