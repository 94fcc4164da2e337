"""The report's latency pictures, from a real fio sweep: the plotted values (the page's data and the
SVG's own path vertices) against fio's percentiles, the store's percentiles and fio's histogram logs."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rates import assert_throttled
from vmio.cli import main
from vmio.store import Store

pytestmark = pytest.mark.fio

SPEC = """[campaign]
name = "lat"

[[target]]
name = "bare"
kind = "host"
path = "{scratch}/bare.img"
size = "16M"

[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
iodepth = 1
runtime = "3s"
offered_iops = [150, 300, "max"]
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, list[dict[str, object]]]]:
    """(store, report HTML, show --json rows) after a real run over a 3-level offered sweep."""
    if shutil.which("fio") is None:
        pytest.skip("needs fio")
    work = tmp_path_factory.mktemp("lat")
    scratch = Path("/var/tmp") / f"vmio-lat-{os.getpid()}-{work.name}"
    scratch.mkdir(exist_ok=True)
    (work / "lat.toml").write_text(SPEC.format(scratch=scratch))
    db = work / "vmio.db"
    try:
        assert main(["run", str(work / "lat.toml"), "--db", str(db), "--workdir", str(work / "runs")]) == 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert main(["report", "lat", "--db", str(db), "-o", str(work / "r.html")]) == 0
    with Store(db) as store:
        from vmio.store.rows import point_rows

        rows = [r.to_json() for r in point_rows(store, "lat")]  # as `vmio show --json` gives them
    yield db, (work / "r.html").read_text(), rows


def figure_values(html: str) -> dict[str, dict[str, list[list[float]]]]:
    found = re.findall(r'<figure class="plot" id="([^"]+)" data-series="[^"]*" data-values="([^"]+)"', html)
    return {fid: json.loads(v.replace("&quot;", '"')) for fid, v in found}


def svg_vertices(html: str, gid: str) -> list[tuple[float, float]]:
    """The pixel vertices of a series' line in the SVG (matplotlib writes ``d="M x y L x y ..."``)."""
    block = html.split(f'<g id="{gid}">', 1)[1].split("</g>", 1)[0]
    d = re.search(r'<path d="([^"]+)"', block)
    assert d, f"{gid}: no path"
    nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", d.group(1))]
    return list(zip(nums[0::2], nums[1::2], strict=True))


def assert_affine(xs: list[float], pixels: list[float]) -> None:
    """Pixels are an affine image of the values (what a linear or log axis makes of them)."""
    a = (pixels[-1] - pixels[0]) / (xs[-1] - xs[0])
    for x, px in zip(xs, pixels, strict=True):
        assert abs(pixels[0] + a * (x - xs[0]) - px) < 0.6, (xs, pixels)


def test_sections_and_toc(sweep: tuple[Path, str, list[dict[str, object]]]) -> None:
    _, html, _ = sweep
    for sid in ("latency-distribution", "latency-vs-iops", "latency-over-time"):
        assert f'<section id="{sid}">' in html and f'href="#{sid}"' in html
    assert html.count('id="summary"') == 1 and "summary-text" not in html
    assert html.index('id="summary"') < html.index('id="contents"') < html.index('<section id="iops"')


def test_distribution_is_fios_own_percentiles(sweep: tuple[Path, str, list[dict[str, object]]]) -> None:
    db, html, rows = sweep
    values = figure_values(html)["latdist-0"]
    assert len(values) == 3  # one target, one direction, a panel per offered load
    curve = values["latdist-0--bare-baseline-offered-max"]
    row = next(r for r in rows if r["offered_iops"] == "max")
    with Store(db) as store:
        run = next(r for r in store.runs("lat") if r["point_key"] == row["point"])
        (res,) = store.results(run["id"])  # a single job: fio's own percentiles are exact
    plotted = dict((p, v) for p, v in curve)
    assert plotted[50.0] * 1e3 == pytest.approx(res["p50"]) and plotted[99.0] * 1e3 == pytest.approx(
        res["p99"]
    )
    assert plotted[99.9] * 1e3 == pytest.approx(res["p999"])
    assert list(plotted) == sorted(plotted) and list(plotted.values()) == sorted(plotted.values())
    # the drawing: x affine in -log10(1 - p), y affine in log10(latency)
    pixels = svg_vertices(html, "latdist-0--bare-baseline-offered-max")
    assert len(pixels) == len(curve)
    assert_affine([-math.log10(1 - p / 100) for p, _ in curve], [x for x, _ in pixels])
    assert_affine([math.log10(v) for _, v in curve], [y for _, y in pixels])


def test_latency_against_iops_is_the_stored_sweep(sweep: tuple[Path, str, list[dict[str, object]]]) -> None:
    db, html, rows = sweep
    values = figure_values(html)["latiops-0"]
    ordered = sorted(rows, key=lambda r: (r["offered_iops"] == "max", r["offered_iops"]))
    for name in ("p50", "p99"):
        got = values[f"latiops-0--bare-baseline-{name}"]
        want = [[r["read_iops"], r["read_lat_ns"][name] / 1e3] for r in ordered]  # type: ignore[index]
        assert [v for pair in got for v in pair] == pytest.approx([v for pair in want for v in pair])
        pixels = svg_vertices(html, f"latiops-0--bare-baseline-{name}")
        xs = [x for x, _ in got]  # achieved IOPS: a log axis when they span a decade
        assert_affine([math.log10(x) for x in xs] if max(xs) >= 10 * min(xs) else xs, [x for x, _ in pixels])
        assert_affine([math.log10(y) for _, y in got], [y for _, y in pixels])
    with Store(db) as store:  # rate-limited points keep their rate: asked of fio, not exceeded
        jobs = {r["point_key"]: r["job_file"] for r in store.runs("lat")}
    assert_throttled(float(str(ordered[0]["read_iops"])), 150, jobs[str(ordered[0]["point"])])


def test_latency_over_time_from_fios_histogram_logs(sweep: tuple[Path, str, list[dict[str, object]]]) -> None:
    db, html, rows = sweep
    values = figure_values(html)["lattime-0"]
    row = next(r for r in rows if r["offered_iops"] == 300)
    log = next(p for p in (db.parent / "runs").rglob("hist-0_clat_hist.1.log") if "offered=300" in str(p))
    # fio's log, read here with numpy: bucket i's value (fio's plat_idx_to_val), each line a second
    lines = [[int(x) for x in line.split(",")] for line in log.read_text().splitlines() if line.strip()]
    assert len(lines) >= 2
    counted = sum(sum(line[3:]) for line in lines)
    assert counted <= row["read_ops"] and counted >= 0.5 * row["read_ops"]  # type: ignore[operator]
    idx = np.arange(len(lines[0]) - 3)
    err = np.maximum((idx >> 6) - 1, 0)
    centre = np.where(idx < 128, idx, (1 << (err + 6)) + ((idx % 64) + 0.5) * (1 << err)).astype(np.int64)
    series = values["lattime-0--bare-baseline-p99-offered-300"]
    assert len(series) == len(lines)
    for (t, v), line in zip(series, lines, strict=True):
        samples = np.repeat(centre, line[3:])
        assert t == pytest.approx(round(line[0] / 1000))
        assert v * 1e3 == pytest.approx(float(np.percentile(samples, 99, method="inverted_cdf")))
    del rows


def test_old_store_migrates_to_hist_log() -> None:
    fixture = Path(__file__).parent / "data" / "stores" / "schema-v2-histograms.sql"
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.executescript(fixture.read_text())
    tmp = Path("/tmp") / f"vmio-mig-{id(db)}.db"
    tmp.unlink(missing_ok=True)
    db.execute(f"VACUUM INTO '{tmp}'")
    db.close()
    try:
        with Store(tmp) as store:
            assert store.schema_version >= 3
            (run,) = store.runs("old")
            assert store.hist_log(run["id"]) == []
            assert store.histogram(store.results(run["id"])[0]["id"]) == {200000: 1000, 500000: 1000}
    finally:
        tmp.unlink(missing_ok=True)
