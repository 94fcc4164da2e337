"""A run's samples in one row (``vmio.store.packed``, migration 13): every sample an older store held survives
the migration, odd values and texts come back as SQLite's per-sample REAL rows gave them, in the order
export wrote them, and a damaged packed row is the store's one error for it.

The references are plain SQLite: the fixture's per-sample rows read with sqlite3 before the migration, and a
table of one REAL-typed row a sample (the form before schema 13) filled with the same samples."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from test_export_tables import SERIES, csv_text  # the standard library's writer, the reference
from vmio.cli import main
from vmio.errors import InputError
from vmio.store import RunRecord, Store

from conftest import store_from_sql

STORES = Path(__file__).parent / "data" / "stores"
# odd numbers and texts: ties in time, source and metric (kept as written), -0.0, NaN, integers, the extremes
ODD = [
    (1.0, "cpu", "usr_pct", 3.0), (0.5, "a\x1fb", "=SUM(A1)", -0.0), (1.0, "cpu", "usr_pct", 1.0),
    (0.5, "é☃", "+x", 1e-300), (2.0, "q\"u\\o", "@m", 1e308), (2.0, "new\nline\r", "\t", 2**62),
    (2.0, "", "", float("nan")), (-1.25, "\x00nul", "\x7f", None), (1e16, "[", '["x"]', 5e-324),
    (1.0, "cpu", "usr_pct", 2), (0.0, "a,b", "null", -1.7976931348623157e308), (0.0, "a,b", "null", 0.1 + 0.2),
]  # fmt: skip


def fixture_store(path: Path) -> Path:
    return store_from_sql("schema-v12-samples.sql", path)


def plain_rows(path: Path) -> list[tuple[Any, ...]]:
    """The per-sample rows of a store from before schema 13, read with sqlite3: point key, t, source, metric,
    value, by run and then as export orders them (ties as written)."""
    c = sqlite3.connect(path)
    rows = c.execute(
        "SELECT r.point_key, s.t, s.source, s.metric, s.value FROM sample s JOIN run r ON r.id = s.run_id "
        "ORDER BY r.id, s.t, s.source, s.metric, s.rowid"
    ).fetchall()
    c.close()
    return rows


def same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    """Equal values of equal types (``repr``: -0.0 is not 0.0, 1 is not 1.0)."""
    return repr(a) == repr(b)


def exported(db: Path, out: Path) -> tuple[str, list[dict[str, Any]]]:
    """The ``.series`` table of campaign ``fixture`` as ``vmio export`` writes it in CSV, and in JSON."""
    assert main(["export", "fixture", "--format", "csv", "-o", str(out / "e.csv"), "--db", str(db)]) == 0
    assert main(["export", "fixture", "--format", "json", "-o", str(out / "e.json"), "--db", str(db)]) == 0
    text = (out / "e.json").read_bytes().decode()
    assert text == json.dumps(json.loads(text), indent=1)
    return (out / "e.series.csv").read_bytes().decode(), json.loads(text)["series"]  # as written: "\r" kept


@pytest.mark.parametrize("readonly", [False, True])
def test_the_migration_keeps_every_sample(tmp_path: Path, readonly: bool) -> None:
    db = fixture_store(tmp_path / "old.db")
    before = plain_rows(db)
    assert len(before) == 19 and {r[4] for r in before} >= {None, 0.0, 1e-300, 1e308, 2.0**62, 5e-324}
    keys = {k: i for i, k in enumerate(dict.fromkeys(r[0] for r in before))}
    with Store(db, readonly=readonly) as s:
        assert s.schema_version == 13
        runs = {r["point_key"]: r["id"] for r in s.runs("fixture")}
        read = [(k, x["t"], x["source"], x["metric"], x["value"]) for k in keys for x in s.samples(runs[k])]
        assert same(read, before)
        by_run = s.campaign_samples("fixture")
        assert same(
            [(k, x["t"], x["source"], x["metric"], x["value"]) for k in keys for x in by_run[runs[k]]], before
        )
        if not readonly:  # the packed rows as stored, read with sqlite3: each run's lists in export order
            stored = s.db.execute(
                "SELECT run_id, n, t, source, metric, value FROM sample ORDER BY run_id"
            ).fetchall()
            assert sum(r[1] for r in stored) == len(before)
            unpacked = [
                (k, *sample)
                for r in stored
                for k in [next(k for k, i in runs.items() if i == r[0])]
                for sample in zip(*(json.loads(r[c]) for c in (2, 3, 4, 5)), strict=True)
            ]
            assert same(sorted(unpacked, key=lambda r: keys[r[0]]), before)
    csv_series, json_series = exported(db, tmp_path)
    assert csv_series == csv_text(SERIES, before)
    assert json_series == [dict(zip(SERIES, r, strict=True)) for r in before]
    assert "'=SUM(A1)" in csv_series and "\x00nul" in csv_series and '"new\nline"' in csv_series


def test_odd_samples_come_back_as_sqlite_kept_them(tmp_path: Path) -> None:
    """A point recorded with odd samples gives back what a REAL-typed row a sample gave back (-0.0 as 0.0, NaN
    as none, an integer as a float), in the order it sorted them (time, source, metric, then as written)."""
    ref = sqlite3.connect(":memory:")
    ref.execute(
        "CREATE TABLE sample (t REAL NOT NULL, source TEXT NOT NULL, metric TEXT NOT NULL, value REAL)"
    )
    ref.executemany("INSERT INTO sample VALUES (?, ?, ?, ?)", ODD)
    want = ref.execute(
        "SELECT 'k', t, source, metric, value FROM sample ORDER BY t, source, metric, rowid"
    ).fetchall()
    db = tmp_path / "s.db"
    with Store(db) as s:
        s.ensure_campaign("fixture", "f.toml", "", json.dumps({"targets": [], "workloads": []}))
        run_id = s.record(
            RunRecord(campaign="fixture", point_key="k", target="t", target_kind="host", workload="w", bs=4096,
                      offered_iops=None, load_processes=0, repetition=1, status="done", started=0.0, ended=1.0,
                      samples=ODD)  # type: ignore[arg-type]
        )  # fmt: skip
        got = [("k", x["t"], x["source"], x["metric"], x["value"]) for x in s.samples(run_id)]
    assert same(got, want)
    assert math.copysign(1.0, got[[r[2] for r in got].index("a\x1fb")][4]) == 1.0  # -0.0 as SQLite kept it
    csv_series, json_series = exported(db, tmp_path)
    assert csv_series == csv_text(SERIES, want)
    assert json_series == [dict(zip(SERIES, r, strict=True)) for r in want]


def recorded(path: Path) -> tuple[Path, int]:
    with Store(path) as s:
        s.ensure_campaign("fixture", "f.toml", "", json.dumps({"targets": [], "workloads": []}))
        run_id = s.record(
            RunRecord(campaign="fixture", point_key="k", target="t", target_kind="host", workload="w", bs=4096,
                      offered_iops=None, load_processes=0, repetition=1, status="done", started=0.0, ended=1.0,
                      samples=[(0.5, "cpu", "usr_pct", 12.5)])
        )  # fmt: skip
    return path, run_id


@pytest.mark.parametrize(
    ("column", "value", "why"),
    [
        ("t", '[0.5,"x"]', "t = '[0.5,\"x\"]' is not a JSON list of the run's 1 samples (n)"),
        ("t", '["x"]', "t holds 'x', which is not a finite number"),
        ("value", "[1e999]", "value holds inf, which is not a finite number"),
        ("value", "[true]", "value holds True, which is not a finite number"),
        ("t", "[null]", "t holds None, which is not a finite number"),
        ("t", "abc", "t = 'abc' is not a JSON list of the run's 1 samples (n)"),
        ("n", 2, "t = '[0.5]' is not a JSON list of the run's 2 samples (n)"),
        ("n", "x", "n = 'x' is not a finite number"),
        ("source", "[5]", "source holds 5, where vmio writes a list of 1 texts"),
        ("metric", "{}", "metric = '{}' is not a JSON list of the run's 1 samples (n)"),
        ("value", b"\x00", "value holds a blob (b'\\x00'), where vmio writes text"),
    ],
)
def test_a_damaged_packed_row_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, value: object, why: str
) -> None:
    db, run_id = recorded(tmp_path / "s.db")
    c = sqlite3.connect(db)
    with c:
        c.execute(f"UPDATE sample SET {column} = ? WHERE run_id = ?", (value, run_id))
    c.close()
    before = db.read_bytes()
    (tmp_path / "out").mkdir()
    for argv in (
        *(
            ["export", "fixture", "--format", f, "-o", str(tmp_path / "out" / f"e.{f}")]
            for f in ("csv", "json", "parquet")
        ),
        ["report", "fixture", "-o", str(tmp_path / "out" / "r.html")],
    ):
        assert main([*argv, "--db", str(db)]) == 2, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert f"(table sample, row {run_id}: {why})" in err, err
        assert f"vmio rm fixture --db {db}" in err
    assert db.read_bytes() == before
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize(
    ("sample", "why"),
    [
        (
            (0.5, "cpu", "usr_pct", "abc"),
            "a sample's time or value is not a number: (0.5, 'cpu', 'usr_pct', 'abc')",
        ),
        ((float("nan"), "cpu", "usr_pct", 1.0), "a sample needs a time, and a source and metric of text"),
        ((0.5, b"cpu", "usr_pct", 1.0), "a sample needs a time, and a source and metric of text"),
    ],
)
def test_a_sample_the_store_cannot_hold_is_refused_and_nothing_written(
    tmp_path: Path, sample: tuple[Any, ...], why: str
) -> None:
    """Not written to be refused later as a damaged row: the point is not stored at all (one transaction)."""
    db, _ = recorded(tmp_path / "s.db")
    with Store(db) as s:
        with pytest.raises(InputError, match=re.escape(why)):
            s.record(
                RunRecord(campaign="fixture", point_key="k2", target="t", target_kind="host", workload="w", bs=4096,
                          offered_iops=None, load_processes=0, repetition=2, status="done", started=0.0, ended=1.0,
                          samples=[(0.0, "cpu", "sys_pct", 1.0), sample])
            )  # fmt: skip
        assert [r["point_key"] for r in s.runs("fixture")] == ["k"]
        assert s.db.execute("SELECT COUNT(*) FROM sample").fetchone()[0] == 1
