"""``vmio report A B -o page.html``: two campaigns of real fio side by side, checked in headless Chromium
(screenshot read, sections present, plotted values equal to ``vmio show --json``)."""

from __future__ import annotations

import html as htmllib
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from test_report_page import CHROMIUM, FLAGS, RENDERED_JS, figures
from vmio.cli import main

from conftest import need

SPEC = """[campaign]
name = "before"
repetitions = 2

[[target]]
name = "bare"
kind = "host"
path = "{scratch}/bare.img"
size = "16M"

[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
ioengine = "psync"
runtime = "1s"
offered_iops = [300, "max"]
"""
SECTIONS = ("campaigns", "summary", "welch", "iops", "latency-vs-iops", "latency-distribution")


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    need("fio")
    from conftest import disk_folder

    work = tmp_path_factory.mktemp("side")
    db, spec = work / "v.db", work / "s.toml"
    with disk_folder() as scratch:
        spec.write_text(SPEC.format(scratch=scratch))
        for name in ("before", "after"):
            assert main(["run", str(spec), "--name", name, "--db", str(db)]) == 0
    page = work / "page.html"
    assert main(["report", "before", "after", "--db", str(db), "-o", str(page)]) == 0
    return db, page


def shown(db: Path, name: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["show", name, "--db", str(db), "--json"]) == 0
    return list(json.loads(capsys.readouterr().out))


def values(page: str, figure: str) -> dict[str, list[list[float]]]:
    found = re.search(rf'<figure class="plot" id="{figure}" data-series="[^"]*" data-values="([^"]*)"', page)
    assert found is not None, figure
    return dict(json.loads(htmllib.unescape(found.group(1))))


@pytest.mark.fio
def test_the_page_plots_what_show_json_gives(
    two: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    db, page_file = two
    page = page_file.read_text()
    for section in SECTIONS:
        assert f'id="{section}"' in page, section
    assert "before (reference)" in page and "vmio report: campaigns before vs after" in page
    iops = values(page, "iops-0")
    latiops = values(page, "latiops-0")
    for name, series in (("before", "before-bare-baseline"), ("after", "after-bare")):
        rows = shown(db, name, capsys)
        by_offered = {o: [r for r in rows if r["offered_iops"] == o] for o in (300, "max")}
        medians = [statistics.median(r["read_iops"] for r in by_offered[o]) for o in (300, "max")]
        assert iops[f"iops-0--{series}"] == [[0.0, medians[0]], [1.0, medians[1]]]
        # latency against achieved IOPS: x the IOPS show --json gives, y its p99 (us)
        xs = [x for x, _ in latiops[f"latiops-0--{series}-p99"]]
        assert xs == pytest.approx(sorted(medians))
    # each pair of points has Welch's verdict inline (2 repetitions a side)
    welch = re.search(r'<section id="welch">.*?</section>', page, re.S)
    assert welch is not None
    verdicts = re.findall(r'<td class="verdict[^"]*">([^<]+)</td>', welch.group(0))
    assert len(verdicts) == 2 * 4  # offered 300 and max × IOPS, bandwidth, p50, p99
    assert all(v in ("no change", "inconclusive") or v.startswith(("higher", "lower")) for v in verdicts)


@pytest.mark.fio
@pytest.mark.browser
def test_the_two_campaign_page_renders_in_chromium(two: tuple[Path, Path], tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("needs chromium (Debian package chromium; scripts/setup-system.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    image = pytest.importorskip("PIL.Image", reason="needs Pillow (matplotlib's dependency)")
    _, page_file = two
    expected = figures(page_file.read_text())
    shot = tmp_path / "page.png"
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        try:
            page = ctx.new_page()
            page.goto(page_file.as_uri(), wait_until="load")
            page.evaluate("document.querySelector('#appendix').open = true")  # #iops is folded there
            rendered = page.evaluate(RENDERED_JS)
            present = page.evaluate(f"() => {list(SECTIONS)!r}.filter(id => document.getElementById(id))")
            page.locator("section#iops").screenshot(path=str(shot))
        finally:
            ctx.close()
    assert present == list(SECTIONS)
    assert [r["id"] for r in rendered] == [fid for fid, _ in expected]
    for fig, (_, series) in zip(rendered, expected, strict=True):
        assert fig["drawn"] == series, f"{fig['id']}: a series has no visible path"
    iops = next(f for f in rendered if f["id"] == "iops-0")
    assert {"before:bare (baseline)", "after:bare", "max", "300"} <= set(iops["texts"])
    with image.open(shot) as png:  # the screenshot read: a drawn plot, both campaigns' colours in it
        rgb = png.convert("RGB")
        colours = {c for _, c in rgb.getcolors(maxcolors=1 << 20) or []}
        assert len(colours) > 50
        assert (0, 0, 0) in colours  # the reference campaign's baseline is drawn in black
        assert any(abs(r - 0x00) < 12 and abs(g - 0x72) < 12 and abs(b - 0xB2) < 12 for r, g, b in colours)
