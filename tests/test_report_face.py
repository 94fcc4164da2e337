"""The report's face, on real small campaigns (a queue-depth sweep; two targets at three offered loads) and on
the demo's store: ``#answer`` comes before any figure, one row set per campaign; ``#curves`` holds one figure
per swept axis whose points' hover titles carry ``show --json``'s figures; no panel has more than 8 lines;
no text is under 10 px; in Chromium at 1,400 × 900 the demo's page is at most 5 screens above its folded
appendix, its answer fits one screen and no figure overflows its column."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.report import curves, data, figure
from vmio.store import Store

pytestmark = pytest.mark.fio

STORES = Path(__file__).parent / "data" / "stores"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
SVG_NS = "{http://www.w3.org/2000/svg}"
COLUMN_PX = 1360  # the page's column at 1,400 px (max-width 1400px, 1em padding each side)


def specs(scratch: Path) -> dict[str, str]:
    head = '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\nruntime = "400ms"\n'
    return {
        "qd": f'[campaign]\nname = "qd"\nsla = "p99=500ms"\n[[target]]\nname = "disk"\npath = "{scratch}/qd.img"\nsize = "16M"\n'
        f"{head}iodepth = [1, 4, 16]\n",
        "loads": '[campaign]\nname = "loads"\n'
        + "".join(f'[[target]]\nname = "{t}"\npath = "{scratch}/{t}.img"\nsize = "16M"\n' for t in ("a", "b"))
        + f'{head}iodepth = 4\noffered_iops = [200, 2000, "max"]\n',
    }


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(store, folder) after ``vmio run`` of both campaigns."""
    if shutil.which("fio") is None:
        pytest.skip("needs fio, which is not installed (make test installs it)")
    work = tmp_path_factory.mktemp("face")
    scratch = Path(tempfile.mkdtemp(prefix="vmio-face-", dir="/var/tmp"))  # a real disk: O_DIRECT
    db = work / "v.db"
    try:
        for name, text in specs(scratch).items():
            (work / f"{name}.toml").write_text(text)
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["run", str(work / f"{name}.toml"), "--db", str(db)]) == 0
        yield db, work
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_cli(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return out.getvalue()


def figures(page: str) -> dict[str, str]:
    """Each figure's id → its HTML."""
    return {
        m.group(1): m.group(0)
        for m in re.finditer(r'<figure class="plot" id="([^"]+)".*?</figure>', page, re.S)
    }


def svg_of(figure_html: str) -> ET.Element:
    return ET.fromstring(figure_html[figure_html.index("<svg") : figure_html.rindex("</svg>") + 6])


def lines_per_panel(fig_id: str, svg: ET.Element) -> list[int]:
    """Per panel (matplotlib's ``axes_N`` group), the series it draws (their ids: ``<plot>--<series>``)."""
    counts = []
    for axes in svg.iter(f"{SVG_NS}g"):
        if re.fullmatch(r"axes_\d+", axes.get("id", "")):
            ids = {g.get("id") for g in axes.iter() if (g.get("id") or "").startswith(f"{fig_id}--")}
            counts.append(len(ids))
    return counts


def smallest_text_px(svg: ET.Element) -> float:
    """The smallest font of the SVG's text as the page shows it: SVG units are points; a figure wider
    than the column is scaled down to it."""
    width_pt = float(svg.get("width", "0").removesuffix("pt"))
    scale = 96 / 72 * min(1.0, COLUMN_PX / (width_pt * 96 / 72))
    sizes = []
    for text in svg.iter(f"{SVG_NS}text"):
        found = re.search(r"font(?:-size)?:\s*([\d.]+)px", text.get("style", ""))
        assert found is not None, text.get("style")
        sizes.append(float(found.group(1)))
    return min(sizes) * scale


def titles(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG_NS}title")]


def check_face(page: str, swept: dict[str, set[str]]) -> dict[str, str]:
    """What every page must be: answer first, one curve figure per swept axis, ≤ 8 lines a panel, no small
    text. ``swept``: campaign → the axes it sweeps."""
    assert page.index('<section id="answer">') < page.index("<figure")
    assert page.index('id="summary"') > page.index('<section id="answer">')  # the old anchor, inside it
    curves = re.search(r'<section id="curves">.*?</section>', page, re.S)
    assert curves is not None
    ids = set(figures(curves.group(0)))
    assert ids == {f"curve-{axis}" for axes in swept.values() for axis in axes}
    for fig_id, fig in figures(page).items():
        svg = svg_of(fig)
        assert max(lines_per_panel(fig_id, svg), default=0) <= 8, fig_id
        assert smallest_text_px(svg) >= 10, fig_id
    return {i: f for i, f in figures(page).items() if i.startswith("curve-")}


def expected_titles(points: list[dict[str, object]], axis: str) -> set[str]:
    """Each point's hover texts as the figures of ``show --json`` give them (one repetition each)."""
    out = set()
    for p in points:
        read = p["read_lat_ns"]
        assert isinstance(read, dict)
        if axis == "iodepth":
            where = f"iodepth {p['iodepth']}"
        elif p["offered_iops"] == "max":
            where = f"offered max (achieved {p['read_iops']:,.0f} IOPS)"
        else:
            where = f"offered {p['offered_iops']:,} IOPS"
        head = f"{p['target']} · {where}: "
        out |= {head + f"{p['read_iops']:,.0f} IOPS", head + f"{read['p50'] / 1e6:.3f} ms"}
        out.add(head + f"{read['p99'] / 1e6:.3f} ms")
    return out


def test_a_campaign_answers_first_and_draws_its_sweep(campaigns: tuple[Path, Path]) -> None:
    db, work = campaigns
    out = work / "qd.html"
    run_cli(["report", "qd", "-o", str(out), "--db", str(db)])
    page = out.read_text()
    curve = check_face(page, {"qd": {"iodepth"}})
    points = json.loads(run_cli(["show", "qd", "--json", "--db", str(db)]))
    assert set(titles(svg_of(curve["curve-iodepth"]))) == expected_titles(points, "iodepth")
    answer = page[page.index('<section id="answer">') : page.index("</section>")]
    assert "IOPS within p99 &lt;= 500 ms" in answer  # the spec's sla
    for p in points:  # each queue depth is a workload of its own: its IOPS at the highest load, with the unit
        assert f"{p['read_iops']:,.0f} read IOPS (at max)" in answer
        assert f"read {p['read_iops']:,.0f} IOPS (never over)" in answer  # p99 stays far under 500 ms
    assert "limit (vmio diagnose)" in answer and "not diagnosed" not in answer
    assert '<tr class="campaign">' not in answer  # one campaign: no heading rows


def test_a_page_of_two_campaigns_has_a_row_set_each(campaigns: tuple[Path, Path]) -> None:
    db, work = campaigns
    out = work / "both.html"
    run_cli(["report", "qd", "loads", "-o", str(out), "--db", str(db)])
    page = out.read_text()
    curve = check_face(page, {"qd": {"iodepth"}, "loads": {"offered"}})
    points = json.loads(run_cli(["show", "loads", "--json", "--db", str(db)]))
    # qd's point at queue depth 4 is the same workload at the same depth: it joins the offered-load figure
    qd4 = [p for p in json.loads(run_cli(["show", "qd", "--json", "--db", str(db)])) if p["iodepth"] == 4]
    for p in points + qd4:  # targets are named CAMPAIGN:TARGET on a page of several
        p["target"] = f"{p['campaign']}:{p['target']}"
    assert set(titles(svg_of(curve["curve-offered"]))) == expected_titles(points + qd4, "offered")
    answer = page[page.index('<section id="answer">') : page.index("</section>")]
    assert re.findall(r'<tr class="campaign"><th colspan="\d+">campaign (\w+)</th>', answer) == [
        "qd",
        "loads",
    ]
    rows = re.findall(r'<tr data-campaign="(\w+)" data-target="(\w+)"', answer)
    assert rows == [("qd", "disk")] * 3 + [("loads", "a"), ("loads", "b")]
    for p in points:
        if p["offered_iops"] == "max":
            assert f"{p['read_iops']:,.0f} read IOPS (at max)" in answer


def test_single_points_draw_no_curve() -> None:
    """v2's store sweeps offered load for one workload (rr: 500 and max) and not for the other (rw: max
    only): #curves draws one figure, whose only row of panels is rr's."""
    with Store(STORES / "v2-campaign.db", readonly=True) as store:
        loaded = data.load(store, "base")
    (plot,) = curves.curve_plots(loaded, "bare")
    svg = ET.fromstring(figure.to_svg(plot))
    assert plot.id == "curve-offered" and len(lines_per_panel(plot.id, svg)) == 3  # rr's IOPS, p50, p99
    assert all(t.startswith(("bare · offered", "vblk · offered")) for t in titles(svg))
    assert not any("write" in (t.text or "") for t in svg.iter(f"{SVG_NS}text"))
    assert max(lines_per_panel(plot.id, svg)) <= 8 and smallest_text_px(svg) >= 10


PAGE_JS = """() => {
  const top = el => el.getBoundingClientRect().top + window.scrollY;
  const answer = document.querySelector('#answer');
  const figs = [...document.querySelectorAll('figure.plot')].filter(f => f.offsetParent !== null);
  const texts = figs.flatMap(f => [...f.querySelectorAll('svg text')]).filter(t => t.textContent.trim());
  return {
    aboveAppendix: top(document.querySelector('#appendix')),
    answer: answer.getBoundingClientRect().height,
    overflow: figs.filter(f => {
      const svg = f.querySelector('svg').getBoundingClientRect();
      const column = f.parentElement.getBoundingClientRect();
      return svg.right > column.right + 0.5 || svg.right > window.innerWidth;
    }).map(f => f.id),
    // the font's size on screen (the text's scale, rotated or not), and its box across the lines
    smallest: Math.min(...texts.map(t => {
      const m = t.getScreenCTM();
      return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    })),
    smallestBox: Math.min(...texts.map(t => {
      const m = t.getScreenCTM(), box = t.getBoundingClientRect();
      return Math.abs(m.b) > Math.abs(m.a) ? box.width : box.height;
    })),
    shown: figs.length,
  };
}"""


@pytest.mark.browser
def test_the_demo_page_in_chromium(tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("needs chromium (Debian package chromium; scripts/setup-system.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    db = tmp_path / "demo.db"
    shutil.copy(STORES / "demo000.db", db)
    out = tmp_path / "demo.html"
    run_cli(["report", "demo", "-o", str(out), "--db", str(db)])
    for fig_id, fig in figures(out.read_text()).items():  # 7 targets: their p50 and p99 are 14 lines
        assert max(lines_per_panel(fig_id, svg_of(fig)), default=0) <= 8, fig_id
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(out.as_uri(), wait_until="load")
            seen = page.evaluate(PAGE_JS)
        finally:
            browser.close()
    assert seen["shown"] >= 5  # the answer's evidence is drawn above the appendix
    assert seen["aboveAppendix"] <= 5 * 900, seen
    assert seen["answer"] <= 900, seen
    assert seen["overflow"] == [], seen
    assert seen["smallest"] >= 10 and seen["smallestBox"] >= 10, seen
