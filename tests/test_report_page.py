"""A report built from a campaign of real fio runs, checked as files, as exports and in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main

pytestmark = pytest.mark.fio

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def spec_text(scratch: Path) -> str:
    targets = "".join(
        f'[[target]]\nname = "{name}"\nkind = "host"\npath = "{scratch}/{name}.img"\nsize = "32M"\n\n'
        for name in ("bare", "other")
    )
    return f"""[campaign]
name = "real"
repetitions = 2

{targets}
[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "2s"  # fio logs whole seconds only: #latency-over-time needs a second logged
offered_iops = [300, "max"]

[[workload]]
name = "ops"
rw = "randread"
bs = "4k"
ops = 40
load_processes = [0, 1]
"""


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(store, report folder) after ``vmio run`` and ``vmio report`` with PNGs."""
    if shutil.which("fio") is None:
        pytest.skip("needs fio, which is not installed (make test installs it)")
    work = tmp_path_factory.mktemp("report")
    data_dir = Path(tempfile.mkdtemp(prefix="vmio-report-", dir="/var/tmp"))  # a real disk: O_DIRECT
    spec = work / "real.toml"
    spec.write_text(spec_text(data_dir))
    db = work / "vmio.db"
    try:
        assert main(["run", str(spec), "--db", str(db), "--interval", "200ms"]) == 0
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    out = work / "out"
    assert (
        main(
            ["report", "real", "--db", str(db), "-o", str(out / "report.html"), "--png-dir", str(out / "png")]
        )
        == 0
    )
    yield db, out


def figures(html: str) -> list[tuple[str, list[str]]]:
    found = re.findall(r'<figure class="plot" id="([^"]+)" data-series="([^"]+)"', html)
    return [(fid, json.loads(series.replace("&quot;", '"'))) for fid, series in found]


def test_report_files(real: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    db, out = real
    html = (out / "report.html").read_text()
    figs = figures(html)
    kinds = {fid.rsplit("-", 1)[0] for fid, _ in figs}
    assert kinds >= {"iops", "busy-cpu", "oplat", "time", "latdist", "latiops"}  # no QEMU threads: no VM here
    assert "qemu-threads" not in kinds
    assert sorted(p.stem for p in (out / "png").iterdir()) == sorted(fid for fid, _ in figs)
    assert all((out / "png" / f"{fid}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for fid, _ in figs)
    assert not [p for p in out.rglob(".*")], "a temporary file was left behind"
    assert "<script" not in html and not re.search(r'(src|href)="(?!#)', html)  # nothing to fetch
    iops = dict(figs)["iops-0"]
    assert iops == ["iops-0--bare-baseline", "iops-0--other", "iops-0--offered"]
    assert "accel: bare=host, other=host" in html and "fio-3" in html and "median of 2 repetitions" in html
    # the summary table in the page is the one the terminal gets
    assert main(["report", "real", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1].split()[:4] == ["workload", "bs", "load", "target"]
    [bare] = [line for line in text.splitlines() if line.startswith("rr        4k  0     bare    ")]
    # achieved or not is fio's own figure for the throttled point against the documented 95 % rule: on a busy
    # machine fio may fall short of 300 IOPS, and then the report must say "no"
    achieved = fio_iops(db, "bare/rr/bs=4k/offered=300/load=0/rep=")
    verdict = "yes" if statistics.median(achieved) >= 0.95 * 300 else "no"
    assert f"300 {verdict} ({statistics.median(achieved):.0f})" in bare


def fio_iops(db: Path, prefix: str) -> list[float]:
    """Read + write IOPS fio reported for the measured jobs of each repetition whose point key starts so."""
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT run.point_key, SUM(result.iops) FROM run JOIN result ON result.run_id = run.id "
            "WHERE run.point_key LIKE ? AND result.role = 'measure' GROUP BY run.id",
            (prefix + "%",),
        ).fetchall()
    assert len(rows) == 2, rows  # both repetitions
    return [float(iops) for _, iops in rows]


@pytest.mark.browser
def test_report_renders_in_chromium(real: tuple[Path, Path], tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("needs chromium (Debian package chromium; scripts/setup-system.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    _, out = real
    expected = figures((out / "report.html").read_text())
    problems: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
        )
        try:
            page = ctx.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto((out / "report.html").as_uri(), wait_until="load")
            rendered = page.evaluate(RENDERED_JS)
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            ctx.close()
    assert problems == []
    assert requests == [(out / "report.html").as_uri()], "the page fetched something besides itself"
    assert [r["id"] for r in rendered] == [fid for fid, _ in expected]
    for fig, (_, series) in zip(rendered, expected, strict=True):
        assert fig["width"] > 300 and fig["height"] > 150, fig
        assert fig["axes"] >= 1 and fig["ticks"] >= 4, fig
        assert fig["drawn"] == series, f"{fig['id']}: a series has no visible path"
    iops = next(f for f in rendered if f["id"] == "iops-0")
    assert {"bare (baseline)", "other", "offered", "offered IOPS", "max", "300"} <= set(iops["texts"])
    assert (tmp_path / "report.png").stat().st_size > 10_000


RENDERED_JS = """() => [...document.querySelectorAll('figure.plot')].map(fig => {
  const svg = fig.querySelector('svg');
  const box = svg.getBoundingClientRect();
  const drawn = JSON.parse(fig.dataset.series).filter(id => {
    const el = svg.querySelector('[id="' + id + '"]');
    const marks = el ? [el, ...el.querySelectorAll('path, use')] : [];
    return marks.some(m => (m.tagName === 'path' || m.tagName === 'use') && m.getBBox().width + m.getBBox().height > 0);
  });
  return {id: fig.id, width: box.width, height: box.height, drawn,
          axes: svg.querySelectorAll('g[id^="axes_"]').length,
          ticks: svg.querySelectorAll('g[id^="xtick_"], g[id^="ytick_"]').length,
          texts: [...svg.querySelectorAll('text')].map(t => t.textContent.trim())};
})"""


def test_export_keeps_what_the_report_draws(real: tuple[Path, Path], tmp_path: Path) -> None:
    db, _ = real
    assert main(["export", "real", "--db", str(db), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(doc["oplat"]) == 2 * 2 * 2 * 40  # targets × load-process counts × repetitions × ops
    assert {o["point"].split("/")[1] for o in doc["oplat"]} == {"ops"}
    assert (
        main(["export", "real", "--db", str(db), "--format", "parquet", "-o", str(tmp_path / "r.parquet")])
        == 0
    )
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "r.oplat.parquet").num_rows == len(doc["oplat"])


@pytest.mark.browser
@pytest.mark.parametrize("section", ["latency-vs-iops", "latency-distribution", "latency-over-time"])
def test_latency_sections_render_in_chromium(real: tuple[Path, Path], tmp_path: Path, section: str) -> None:
    """Each latency section, screenshotted alone at 1280 px: its plots have a size, every series a visible
    path, and the picture is not blank (many colours, lines in more than one place)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("needs chromium (Debian package chromium; scripts/setup-system.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    image = pytest.importorskip("PIL.Image", reason="needs Pillow (matplotlib's dependency)")
    _, out = real
    html = (out / "report.html").read_text()
    body = re.search(rf'<section id="{section}">.*?</section>', html, flags=re.S)
    assert body is not None, f"the report has no #{section}"
    expected = figures(body.group(0))
    shot = tmp_path / f"{section}.png"
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        try:
            page = ctx.new_page()
            page.goto((out / "report.html").as_uri(), wait_until="load")
            page.evaluate("document.querySelector('#appendix').open = true")  # per-second figures are folded
            element = page.locator(f"section#{section}")
            element.screenshot(path=str(shot))
            rendered = page.evaluate(
                RENDERED_JS.replace(
                    "document.querySelectorAll('figure.plot')",
                    f"document.querySelectorAll('section#{section} figure.plot')",
                )  # fmt: skip
            )
        finally:
            ctx.close()
    assert expected, f"the report has no {section} plot"
    assert [r["id"] for r in rendered] == [fid for fid, _ in expected]
    for fig, (_, series) in zip(rendered, expected, strict=True):
        assert 300 < fig["width"] <= 1280 and fig["height"] > 150, fig
        assert fig["drawn"] == series, f"{fig['id']}: a series has no visible path"
    with image.open(shot) as png:
        rgb = png.convert("RGB")
        assert rgb.width <= 1280 and rgb.height > 200
        colours = rgb.getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 50  # drawn lines and text, not an empty box
