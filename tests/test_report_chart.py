"""The panels vmio draws as SVG itself (``report.chart``): each series' vertices, read back through the axis
its tick labels state, are the stored values (SQL on the store, fio's figures); no two texts overlap or leave
the picture, measured with the font's own metrics (matplotlib's text-to-path, which the chart never uses);
a report made only of such panels never imports matplotlib, and a PNG of one (matplotlib's) holds the same
series."""

from __future__ import annotations

import math
import re
import shutil
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import text_to_path

from vmio.report import chart, data, page
from vmio.report.figure import Plot, to_png, to_svg
from vmio.store import Store

STORES = Path(__file__).parent / "data" / "stores"
NS = "{http://www.w3.org/2000/svg}"
FONT = FontProperties(family="DejaVu Sans")


def report_of(store: str, campaign: str) -> page.Report:
    return page.build(data.load(Store(STORES / store, readonly=True), campaign))


def numbers(d: str) -> list[tuple[float, float]]:
    """The (x, y) pairs of a path's ``d``."""
    nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", d)]
    return list(zip(nums[0::2], nums[1::2], strict=True))


def ticks(axes: ET.Element, kind: str) -> list[tuple[float, str]]:
    """Each tick of the panel: where its mark sits (x for ``xtick``, y for ``ytick``) and its label."""
    out = []
    for tick in axes.iter(f"{NS}g"):
        if not re.fullmatch(rf"{kind}_\d+", tick.get("id", "")):
            continue
        marks = [p for p in tick.iter(f"{NS}path") if "stroke: #000000" in p.get("style", "")]
        (x0, y0), _ = numbers(marks[0].get("d", ""))
        text = "".join(t.text or "" for t in tick.iter(f"{NS}text"))
        out.append((x0 if kind == "xtick" else y0, text))
    return out


def inverse(placed: list[tuple[float, str]], log: bool = False) -> tuple[float, float]:
    """The (offset, slope) taking a pixel back to a value, from the labelled ticks (their text as
    numbers; ``log``: a log axis)."""
    known = [(px, float(s.replace(",", ""))) for px, s in placed if s]
    assert len(known) >= 2, placed
    (p0, v0), (p1, v1) = known[0], known[-1]
    f = math.log10 if log else float
    slope = (f(v1) - f(v0)) / (p1 - p0)
    for px, v in known:  # every labelled tick on the same line
        assert f(v0) + slope * (px - p0) == pytest.approx(f(v), abs=1e-3 * abs(f(v1) - f(v0)))
    return f(v0) - slope * p0, slope


def series(svg: ET.Element, gid: str) -> tuple[ET.Element, list[tuple[float, float]]]:
    """The panel (``axes_N``) holding series ``gid`` and the vertices of its line."""
    for axes in svg.iter(f"{NS}g"):
        if re.fullmatch(r"axes_\d+", axes.get("id", "")):
            for g in axes.iter(f"{NS}g"):
                if g.get("id") == gid:
                    path = next(g.iter(f"{NS}path"))
                    return axes, numbers(path.get("d", ""))
    raise AssertionError(f"no series {gid}")


def test_over_time_vertices_are_the_stored_samples(tmp_path: Path) -> None:
    """Every line of the device-over-time figure (21 small panels, no labels on the inner rows' shared x
    axis): its vertices through the tick labels are the samples the store holds for that point."""
    report = report_of("v2-campaign.db", "base")
    plot = next(p for p in report.plots if p.id == "time-0")
    assert isinstance(plot.canvas, chart.Chart)
    svg = ET.fromstring(to_svg(plot))
    db = sqlite3.connect(f"file:{STORES / 'v2-campaign.db'}?mode=ro", uri=True)
    columns: dict[float, list[tuple[float, str]]] = {}  # a panel's left edge → its column's labelled x ticks
    for axes in svg.iter(f"{NS}g"):
        if re.fullmatch(r"axes_\d+", axes.get("id", "")) and any(s for _, s in ticks(axes, "xtick")):
            columns[round(ticks(axes, "xtick")[0][0], 1)] = ticks(axes, "xtick")
    checked = 0
    for gid in plot.series_ids():
        target, metric, rep, ddir = re.fullmatch(
            r"time-0--(\w+)-(iops|await|busy)-rep-(\d)(?:-(\w+))?", gid
        ).groups()  # type: ignore[union-attr]
        name = {"iops": f"{ddir}_iops", "await": "await_ms", "busy": "busy_pct"}[metric]
        want = db.execute(
            "SELECT s.t, s.value FROM sample s JOIN run r ON r.id = s.run_id WHERE r.target = ? AND r.workload = "
            "'rr' AND r.offered_iops IS NULL AND r.repetition = ? AND s.source = 'dev:' || r.device AND "
            "s.metric = ? ORDER BY s.t",
            (target, int(rep), name),
        ).fetchall()
        axes, pixels = series(svg, gid)
        x0, xs = inverse(columns[round(ticks(axes, "xtick")[0][0], 1)])
        y0, ys = inverse(ticks(axes, "ytick"))
        got = [(x0 + xs * px, y0 + ys * py) for px, py in pixels]
        labelled = [float(s) for _, s in ticks(axes, "ytick") if s]
        close = 1e-3 * (max(labelled) - min(labelled))  # a hundredth of a point on a panel ~100 points tall
        assert len(got) == len(want) > 0, gid
        for (t, v), (gt, gv) in zip(want, got, strict=True):
            assert gt == pytest.approx(t, abs=0.01) and gv == pytest.approx(v, abs=close), gid
        checked += 1
    assert checked >= 12  # two targets, two repetitions, read and write IOPS, await and busy


def test_log_axes_give_back_the_stored_iops() -> None:
    """Latency against achieved IOPS (both axes log when they span a decade): x through the tick labels is
    fio's read IOPS as stored (one repetition a point), y the plotted latency the page states."""
    report = report_of("demo000.db", "demo")
    plot = next(p for p in report.plots if p.id == "latiops-0")
    svg = ET.fromstring(to_svg(plot))
    db = sqlite3.connect(f"file:{STORES / 'demo000.db'}?mode=ro", uri=True)
    gid = "latiops-0--bare-baseline-p50"
    axes, pixels = series(svg, gid)
    want = sorted(r[0] for r in db.execute("SELECT read_iops FROM run WHERE target = 'bare' AND workload = "
                                           "'4k-randread' AND status = 'done'"))  # fmt: skip
    x_log = max(want) >= 10 * min(want)
    x0, xs = inverse(ticks(axes, "xtick"), log=x_log)
    y0, ys = inverse(ticks(axes, "ytick"), log=True)
    back = [(x0 + xs * px, y0 + ys * py) for px, py in pixels]
    got_x = sorted(10**x if x_log else x for x, _ in back)
    assert got_x == pytest.approx(want, rel=2e-3)
    stated = plot.values[gid]
    assert [10**y for _, y in back] == pytest.approx([y for _, y in stated], rel=2e-3)


def text_boxes(svg: ET.Element) -> list[tuple[str, float, float, float, float]]:
    """Each text's box (left, top, right, bottom, in points) from the font's own outlines."""
    out = []
    for t in svg.iter(f"{NS}text"):
        size = float(re.search(r"font: ([\d.]+)px", t.get("style", "")).group(1))  # type: ignore[union-attr]
        width, _, _ = text_to_path.get_text_width_height_descent(t.text or "", FONT.copy(), ismath=False)
        width *= size / FONT.get_size_in_points()
        anchor = re.search(r"text-anchor: (\w+)", t.get("style", "")).group(1)  # type: ignore[union-attr]
        x, y = float(t.get("x", "0")), float(t.get("y", "0"))
        start = {"start": 0.0, "middle": -width / 2, "end": -width}[anchor]
        up, down = 0.76 * size, 0.24 * size  # DejaVu Sans' ascent and descent
        if t.get("transform", "").startswith("rotate(-90"):  # reads upwards: its baseline is vertical
            out.append((t.text or "", x - up, y - start - width, x + down, y - start))
        else:
            out.append((t.text or "", x + start, y - up, x + start + width, y + down))
    return out


@pytest.mark.parametrize(("store", "campaign"), [("demo000.db", "demo"), ("v2-campaign.db", "base")])
def test_no_text_overlaps_or_leaves_the_picture(store: str, campaign: str) -> None:
    """Tick labels, axis labels, panel titles, legend entries and the caption of every chart of two real
    reports (seven targets side by side; 21 panels over time): inside the picture and apart."""
    plots = [p for p in report_of(store, campaign).plots if isinstance(p.canvas, chart.Chart)]
    assert len(plots) >= 8
    for plot in plots:
        svg = ET.fromstring(to_svg(plot))
        width, height = (float(v) for v in svg.get("viewBox", "").split()[2:])
        boxes = text_boxes(svg)
        for text, left, top, right, bottom in boxes:
            assert left >= 0 and top >= 0 and right <= width and bottom <= height, (plot.id, text)
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                _, left, top, right, bottom = a
                apart = bottom <= b[2] + 0.3 or b[4] <= top + 0.3 or right <= b[1] + 0.3 or b[3] <= left + 0.3
                assert apart, (plot.id, a, b)


def test_a_report_of_charts_never_imports_matplotlib(tmp_path: Path) -> None:
    """``vmio report`` of the demo (every figure a chart) in a fresh process: matplotlib and numpy stay
    unimported, and the page has its figures."""
    db = tmp_path / "demo.db"
    shutil.copy(STORES / "demo000.db", db)
    out = tmp_path / "r.html"
    code = (
        "import sys; from vmio.cli import main; "
        f"rc = main(['report', 'demo', '-o', {str(out)!r}, '--db', {str(db)!r}]); "
        "print(rc, 'matplotlib' in sys.modules, 'numpy' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.stderr.strip().splitlines()[-1] == "0 False False", done.stderr
    assert out.read_text().count('<figure class="plot"') >= 8


def test_a_charts_png_is_drawn_by_matplotlib_with_the_same_series() -> None:
    """``--png-dir``: a chart's figure is made for matplotlib on demand, with each series' id and values."""
    plot: Plot = next(p for p in report_of("v2-campaign.db", "base").plots if p.id == "qemu-0")
    assert isinstance(plot.canvas, chart.Chart) and plot.replayed is None
    assert to_png(plot).startswith(b"\x89PNG")
    assert plot.figure is not None
    drawn = {
        line.get_gid(): [float(v) for v in line.get_ydata()]
        for ax in plot.figure.axes
        for line in ax.get_lines()
    }
    for gid, pairs in plot.values.items():
        assert drawn[gid] == [y for _, y in pairs]


def test_chosen_ticks_are_matplotlibs_steps() -> None:
    """Ticks chosen on a linear axis: 1, 2, 2.5, 5 or 10 times a power of ten, whole with ``integer``, and as
    many as the room holds."""
    assert chart.nice_step(100, 4, False) == 25 and chart.nice_step(7, 4, True) == 2
    assert chart.nice_step(0.09, 9, False) == pytest.approx(0.01)
    axis = chart.Axis(nbins=10)
    wide = chart._ticks(axis, 0, 100000, 1000, across=True)
    narrow = chart._ticks(axis, 0, 100000, 120, across=True)
    assert [s for _, s in wide][:3] == ["0", "10000", "20000"] and 2 <= len(narrow) < len(wide)


def test_a_log_axis_narrower_than_its_labelled_ticks_still_gets_labels() -> None:
    """Latencies of 70-80 µs on a log axis hold no 10, 20, 50 or 100: evenly stepped labels instead, each
    placed on the log scale (every labelled tick on one line of log10(value) against its position)."""
    fig = chart.Chart(1, 1)
    (panel,) = fig.panels
    (line,) = panel.plot([1, 2, 3], [71.0, 76.5, 79.0], color="#000000", label="p50")
    line.set_gid("x--p50")
    panel.set_yscale("log")
    svg = ET.fromstring(chart.svg(fig, "x"))
    axes, pixels = series(svg, "x--p50")
    labelled = [(px, s) for px, s in ticks(axes, "ytick") if s]
    assert len(labelled) >= 2 and all(70 <= float(s) <= 80 for _, s in labelled)
    y0, ys = inverse(ticks(axes, "ytick"), log=True)
    assert [10 ** (y0 + ys * py) for _, py in pixels] == pytest.approx([71.0, 76.5, 79.0], rel=1e-3)


def test_stacked_bars_end_where_their_sums_do() -> None:
    """The layers' stacked bars: each bar's right edge, read back through the x tick labels, is the running
    sum of the costs stacked before it; the first group sits at the top (an inverted category axis) with
    its name as the tick label."""
    costs = {"bare · max": [110.0, 71.5], "vm · 500": [12.0, 40.0, 250.0]}
    fig = chart.Chart(1, 1)
    (panel,) = fig.panels
    for y, parts in enumerate(costs.values()):
        left = 0.0
        for k, cost in enumerate(parts):
            (bar,) = panel.barh(y, cost, left=left, color="#0072B2", height=0.6).patches
            bar.set_gid(f"b--{y}-{k}")
            left += cost
    panel.set_yticks(range(len(costs)), list(costs))
    panel.invert_yaxis()
    svg = ET.fromstring(chart.svg(fig, "b"))
    (axes,) = [g for g in svg.iter(f"{NS}g") if g.get("id") == "axes_1"]
    x0, xs = inverse(ticks(axes, "xtick"))
    names = ticks(axes, "ytick")
    assert [s for _, s in sorted(names)] == list(costs)  # top (smaller y on the page) first
    for y, parts in enumerate(costs.values()):
        for k in range(len(parts)):
            _, pixels = series(svg, f"b--{y}-{k}")
            right = max(px for px, _ in pixels)
            assert x0 + xs * right == pytest.approx(sum(parts[: k + 1]), abs=0.5)
