"""How a report figure becomes SVG and PNG: laid out once, drawn once, nothing overlapping."""

from __future__ import annotations

from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from vmio.report.figure import Plot, finish, legend, log_scale, new_figure, style, to_png, to_svg

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


def test_the_layout_keeps_labels_apart() -> None:
    """Constrained layout still runs: the caption below the panels' x labels, the title above their
    titles, no panel's labels over another's, everything inside the figure."""
    plot = _plot()
    to_png(plot)
    fig = plot.figure
    renderer = RendererAgg(*fig.canvas.get_width_height(), fig.dpi)
    panels = [ax.get_tightbbox(renderer) for ax in fig.axes]
    caption = fig._supxlabel.get_window_extent(renderer)  # type: ignore[attr-defined]
    title = fig._suptitle.get_window_extent(renderer)  # type: ignore[attr-defined]
    page = Bbox.from_bounds(0, 0, *fig.canvas.get_width_height())
    assert all(caption.ymax <= p.ymin for p in panels)
    assert all(title.ymin >= p.ymax for p in panels)
    for i, a in enumerate(panels):
        assert page.containsx(a.xmin) and page.containsx(a.xmax) and a.ymin >= 0 and a.ymax <= page.ymax
        assert not any(a.overlaps(b) for b in panels[i + 1 :])
