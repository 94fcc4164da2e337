"""A store written by hand can hold what an export format has no form for: a blob in a text column (JSON holds
text and numbers only; a CSV cell would show Python's repr of bytes), refused where the store is opened, as
every damaged row is; an integer beyond 2^53 in a column that also holds decimals (a Parquet column of
doubles cannot hold it exactly), refused by the Parquet export. Each is one error naming the table, the row or
point, the column and the value, and no file is written; the store is read, never changed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.store import RunRecord, Store

KEYS = ("t/w/bs=4096/offered=max/load=0/rep=1", "t/w/bs=4096/offered=max/load=0/rep=2")


def store(path: Path, *sql: tuple[str, tuple[object, ...]]) -> Path:
    """Two points recorded by vmio with a sample each, then ``sql`` run on the file with sqlite3 (``{1}``,
    ``{2}``: the runs' ids)."""
    with Store(path) as s:
        s.ensure_campaign("c", "c.toml", "", json.dumps({"targets": [], "workloads": []}))
        for rep, key in enumerate(KEYS, 1):
            s.record(RunRecord(
                campaign="c", point_key=key, target="t", target_kind="host", workload="w", bs=4096,
                offered_iops=None, load_processes=0, repetition=rep, status="done", started=0.0, ended=1.0,
                samples=[(0.5, "dev:vda", "read_iops", 10.5)], metrics={("cpu", "usr_pct"): 12.5},
            ))  # fmt: skip
    db = sqlite3.connect(path)
    with db:
        ids = [r[0] for r in db.execute("SELECT id FROM run ORDER BY id")]
        for statement, args in sql:
            db.execute(statement.format(None, *ids), args)
    db.close()
    return path


def export(db: Path, fmt: str, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``vmio export`` that must fail with exit 2 and write nothing: its one error line."""
    before = db.read_bytes()
    assert main(["export", "c", "--format", fmt, "-o", str(out), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not list(out.parent.glob(f"{out.stem}*{out.suffix}")), "a file was written"
    assert db.read_bytes() == before
    return err


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv"])
def test_a_blob_in_the_points_text_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    db = store(tmp_path / "s.db", ("UPDATE run SET accel = X'01ff' WHERE id = {2}", ()))
    (tmp_path / "out").mkdir()
    err = export(db, fmt, tmp_path / "out" / f"e.{fmt}", capsys)
    # refused where the store is opened (store.integrity): the row, the column, the value, the way out
    assert (
        "campaign 'c' (table run, row 2: accel holds a blob (b'\\x01\\xff'), where vmio writes text)" in err
    )
    assert f"vmio rm c --db {db}" in err
    # so is every other reader of the store
    for args in (["show", "c", "--json"], ["report", "c", "-o", str(tmp_path / "out" / "r.html")]):
        assert main([*args, "--db", str(db)]) == 2
        assert "accel holds a blob" in capsys.readouterr().err
    assert not list((tmp_path / "out").iterdir())


def test_a_blob_in_a_sample_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = store(tmp_path / "s.db", ("UPDATE sample SET source = X'00' WHERE run_id = {2}", ()))
    (tmp_path / "out").mkdir()
    err = export(db, "json", tmp_path / "out" / "e.json", capsys)
    assert "(table sample, row 2: source holds a blob (b'\\x00'), where vmio writes text)" in err
    # vmio rm takes the damaged campaign out; the store reads again
    assert main(["rm", "c", "--db", str(db)]) == 0
    assert main(["ls", "--db", str(db)]) == 0


def test_an_integer_beyond_2_53_among_decimals_is_one_parquet_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow")
    big = 2**53 + 1  # no double holds it: Parquet's column of doubles would change it
    ops = "INSERT INTO oplat (run_id, host, job, seq, t_ms, lat_ns, ddir, offset) VALUES ({}, 'h', 'j', ?, ?, 9, 'read', 0)"
    db = store(
        tmp_path / "s.db", (ops.replace("{}", "{1}"), (1, 1000.5)), (ops.replace("{}", "{2}"), (2, big))
    )
    (tmp_path / "out").mkdir()
    err = export(db, "parquet", tmp_path / "out" / "e.parquet", capsys)
    assert "table oplat" in err and f"point {KEYS[1]!r}, column t_ms: {big}" in err
    # csv and json keep it as stored
    assert main(["export", "c", "--format", "json", "-o", str(tmp_path / "e.json"), "--db", str(db)]) == 0
    assert [o["t_ms"] for o in json.loads((tmp_path / "e.json").read_text())["oplat"]] == [1000.5, big]
