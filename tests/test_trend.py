"""``vmio trend``: runs made without vmio (real fio JSON output, one throttled with fio's ``rate_iops`` as a
regression looks) imported as a series; the trend names the throttled campaign with the fact that changed, and
the nightly gate exits 1 for it and 0 before it. The references are fio's own JSON figures, read here with the
json module, and the job options the test gave fio."""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from vmio.cli import main

from conftest import need

# The nights before the regression run at fio's rate_iops = BASE (so that a busy machine, where unthrottled
# page-cache reads vary by half between runs, still gives nights that agree); the regression is the same job
# throttled to RATE, as a slower device or a throttled volume looks.
BASE, RATE = 2000, 300


def fio_json(scratch: Path, out: Path, *options: str) -> float:
    """Run fio (as a person would, without vmio) into ``out``; fio's own read IOPS of it."""
    need("fio")
    argv = ["fio", "--name=rr", f"--filename={scratch / 'data.img'}", "--size=8M", "--rw=randread", "--bs=4k",
            "--ioengine=psync", "--runtime=500ms", "--time_based", "--output-format=json", f"--output={out}", *options]  # fmt: skip
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return float(json.loads(out.read_text())["jobs"][0]["read"]["iops"])


def night(tmp_path: Path, db: Path, name: str, reps: int, *options: str) -> list[float]:
    """One campaign of the series: ``reps`` fio runs imported as its repetitions; fio's IOPS of each."""
    files = [tmp_path / f"{name}.rep{i}.json" for i in range(reps)]  # not bench-fio names
    iops = [fio_json(tmp_path, f, *options) for f in files]
    argv = ["import", *map(str, files), "--campaign", name, "--series", "nightly", "--db", str(db)]
    assert main(argv) == 0
    return iops


def trend(db: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["trend", "nightly", "--db", str(db), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_a_throttled_night_is_named_with_its_changed_option_and_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    base = night(tmp_path, db, "night-1", 2, f"--rate_iops={BASE}")
    base += night(tmp_path, db, "night-2", 2, f"--rate_iops={BASE}")
    # before the throttled night: the gate passes
    code, doc = trend(db, capsys, "--fail-on-change", "50")
    assert code == 0, doc["gate"]
    assert doc["gate"]["campaign"] == "night-2" and doc["gate"]["worse"] == []
    assert [c["name"] for c in doc["campaigns"]] == ["night-1", "night-2"]

    slow = night(tmp_path, db, "night-3", 2, f"--rate_iops={RATE}")
    code, doc = trend(db, capsys, "--fail-on-change", "50")
    assert code == 1
    [point] = doc["points"]
    assert (point["target"], point["workload"], point["bs"]) == ("fio", "rr", 4096)
    iops = [e["values"] for e in point["figures"]["read_iops"]]
    assert iops[2] == pytest.approx(slow)  # fio's own figures, per repetition
    change = next(c for c in doc["changes"] if c["figure"] == "read_iops")
    assert (change["campaign"], change["verdict"], change["worse"]) == ("night-3", "lower", True)
    assert change["size"] == pytest.approx(statistics.fmean(slow) / statistics.fmean(base) - 1)
    assert {"fact": "fio job option rate_iops", "before": str(BASE), "after": str(RATE)} in change["facts"]
    assert [w["figure"] for w in doc["gate"]["worse"] if w["figure"].endswith("iops")] == ["read_iops"]
    # the text says the same, naming the campaign and the changed option
    capsys.readouterr()
    assert main(["trend", "nightly", "--db", str(db), "--fail-on-change", "50"]) == 1
    text = capsys.readouterr().out
    assert "night-3: fio/rr/bs=4k/load=0 read_iops lower" in text
    assert f"changed with it: fio job option rate_iops: {BASE} -> {RATE}" in text

    # the exports carry the series, so a dashboard draws the same line
    assert (
        main(["export", "night-3", "--db", str(db), "--format", "ndjson", "-o", str(tmp_path / "n.ndjson")])
        == 0
    )
    samples = [json.loads(line) for line in (tmp_path / "n.ndjson").read_text().splitlines()]
    assert samples and {s["labels"]["series"] for s in samples} == {"nightly"}
    assert (
        main(["export", "night-3", "--db", str(db), "--format", "prometheus", "-o", str(tmp_path / "n.prom")])
        == 0
    )
    gauges = [
        g
        for g in (tmp_path / "n.prom").read_text().splitlines()
        if g.startswith("vmio_read_operations_per_second{")
    ]
    assert len(gauges) == 2 and all(',series="nightly"}' in g for g in gauges)

    # a fourth night as slow: still worse against the nights before the change, until it is accepted
    night(tmp_path, db, "night-4", 2, f"--rate_iops={RATE}")
    code, doc = trend(db, capsys, "--fail-on-change", "50")
    assert code == 1 and doc["gate"]["campaign"] == "night-4"
    code, doc = trend(db, capsys, "--fail-on-change", "50", "--accept", "night-3")
    assert code == 0, doc["gate"]
    fourth = doc["points"][0]["figures"]["read_iops"][3]
    assert (
        fourth["window"] == ["night-3"] and fourth["verdict"] != "lower"
    )  # unchanged, or a stall: inconclusive

    # the report draws each figure over the series: one line per point, values on hover, the change marked
    page = tmp_path / "series.html"
    assert main(["report", "--series", "nightly", "--db", str(db), "-o", str(page)]) == 0
    body = page.read_text()
    iops_figure = body.split("<figure id='read_iops'>")[1].split("</figure>")[0]
    assert (
        iops_figure.count("<polyline") == 1 and iops_figure.count("<circle") == 4 + 1
    )  # 4 nights, a ring on 3
    # the hover says the mean and each repetition as fio reported them
    assert f"fio/rr/bs=4k/load=0 / night-3: {statistics.fmean(slow):.4g} IOPS" in iops_figure
    assert f"{slow[0]:.4g}, {slow[1]:.4g}" in iops_figure
    assert f"changed with it: fio job option rate_iops: {BASE} -&gt; {RATE}" in iops_figure

    # one repetition cannot tell: said, and a failure only with --fail-on-inconclusive
    night(tmp_path, db, "night-5", 1, f"--rate_iops={RATE}")
    code, doc = trend(db, capsys, "--fail-on-change", "50")
    assert code == 0 and "read_iops" in [u["figure"] for u in doc["gate"]["inconclusive"]]
    code, doc = trend(db, capsys, "--fail-on-change", "50", "--fail-on-inconclusive")
    assert code == 1


def test_bad_trend_arguments_are_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "v.db"
    night(tmp_path, db, "night-1", 1, f"--rate_iops={BASE}")
    for argv, said in (
        (["trend", "weekly"], "no campaign in"),
        (["trend", "nightly", "--fail-on-change", "x"], "--fail-on-change 'x' is not a percentage"),
        (["trend", "nightly", "--fail-on-inconclusive"], "--fail-on-inconclusive goes with --fail-on-change"),
        (["trend", "nightly", "--accept", "nope"], "no campaign 'nope'"),
        (["trend", "bad name"], "series 'bad name'"),
    ):
        capsys.readouterr()
        assert main([*argv, "--db", str(db)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0], err
    # rename keeps a campaign in its series; rm takes it out
    assert main(["rename", "night-1", "first-night", "--db", str(db)]) == 0
    code, doc = trend(db, capsys)
    assert code == 0 and [c["name"] for c in doc["campaigns"]] == ["first-night"]
    # a run imported late takes its place by the time fio ran it, not by when it was imported
    time.sleep(1.1)  # fio's timestamp counts seconds
    night(tmp_path, db, "later", 1, f"--rate_iops={BASE}")
    assert main(["import", str(tmp_path / "night-1.rep0.json"), "--campaign", "again", "--series", "nightly",
                 "--db", str(db)]) == 0  # fmt: skip
    code, doc = trend(db, capsys)
    assert [c["name"] for c in doc["campaigns"]] == ["first-night", "again", "later"]
    assert main(["rm", "first-night", "--db", str(db)]) == 0
    code, doc = trend(db, capsys)
    assert [c["name"] for c in doc["campaigns"]] == ["again", "later"]
    capsys.readouterr()
    assert main(["ls", "--db", str(db), "--json"]) == 0
    listed = [(c["name"], c["series"]) for c in json.loads(capsys.readouterr().out)]
    assert listed == [("later", "nightly"), ("again", "nightly")]
