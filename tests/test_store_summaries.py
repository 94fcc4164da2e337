"""Each point's summary is stored when it is written (migration 8 fills it for older points), and reads the
same as merging the point's histograms again: checked against figures worked out by hand from fio's rule
(the first bucket whose cumulative count reaches p% of the operations) and against the summary recomputed
from the stored results when the stored one is emptied."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.errors import StoreError
from vmio.fio.output import JobResult
from vmio.store import RunRecord, Store
from vmio.store import rows as summary
from vmio.store.summaries import SUMMARY_COLUMNS

from conftest import store_from_sql

STORES = Path(__file__).parent / "data" / "stores"
LAT = {"min": 1000.0, "mean": 2000.0, "max": 9000.0, "stddev": 5.0, "p50": 2.0, "p90": 2.5, "p99": 3.0,
       "p99.9": 3.0, "p99.99": 3.0}  # fmt: skip


def job(
    host: str, ddir: str, total: int, bins: dict[int, int], mean: float, name: str = "measure"
) -> JobResult:
    return JobResult(host=host, job=name, ddir=ddir, iops=total / 10, bw_bytes=total * 409.6,
                     total_ios=total, runtime_ms=10_000, lat_ns={**LAT, "mean": mean}, usr_cpu=1.0, sys_cpu=2.0,
                     bins=bins)  # fmt: skip


def point(key: str, results: list[JobResult]) -> RunRecord:
    return RunRecord(campaign="c", point_key=key, target="t", target_kind="host", workload="w", bs=4096,
                     offered_iops=None, load_processes=0, repetition=1, status="done", started=1.0, ended=2.0,
                     results=results)  # fmt: skip


def test_the_v7_fixture_migrates_with_its_points_summarized(tmp_path: Path) -> None:
    db = store_from_sql("schema-v7.sql", tmp_path / "v7.db")
    with Store(db) as s:
        row = s.db.execute("SELECT * FROM run WHERE point_key = 'host/randread/4k/max/1'").fetchone()
        # the fixture's one job: 5000 reads in bins 395264 x2600, 501760 x2300, 700416 x90, 888832 x10
        assert (row["read_jobs"], row["read_iops"], row["read_ops"]) == (1, 2500.0, 5000)
        assert (row["read_p50"], row["read_p90"], row["read_p99"], row["read_p999"]) == (
            395264.0, 501760.0, 700416.0, 888832.0,
        )  # fmt: skip
        assert (row["write_jobs"], row["write_ops"], row["write_lat_mean"]) == (0, 0, None)
        assert json.loads(row["hosts_json"]) == ["local"]
        failed = s.db.execute("SELECT * FROM run WHERE point_key = 'host/randread/4k/max/2'").fetchone()
        assert (failed["read_jobs"], failed["hosts_json"]) == (0, "[]")


def test_a_recorded_point_stores_its_merged_figures(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as s:
        s.ensure_campaign("c", "c.toml", "text", "{}")
        run_id = s.record(point("p", [
            job("h2", "read", 100, {1000: 60, 3000: 40}, mean=1500.0),
            job("h1", "read", 300, {2000: 270, 8000: 30}, mean=2500.0),
            job("h1", "write", 50, {5000: 50}, mean=5000.0),
            job("h3", "read", 999, {100: 999}, mean=100.0, name="load.1"),  # not measured: left out
        ]))  # fmt: skip
        row = s.db.execute("SELECT * FROM run WHERE id = ?", (run_id,)).fetchone()
        # merged reads: 1000 x60, 2000 x270, 3000 x40, 8000 x30 (400 ops): p50 needs 200 -> 2000; p90 needs
        # 360 -> 3000 (370); p99 needs 396 -> 8000; mean (1500*100 + 2500*300) / 400 = 2250
        assert (row["read_jobs"], row["read_ops"], row["read_iops"]) == (2, 400, 40.0)
        assert (row["read_p50"], row["read_p90"], row["read_p99"], row["read_lat_mean"]) == (
            2000.0, 3000.0, 8000.0, 2250.0,
        )  # fmt: skip
        assert (row["write_jobs"], row["write_ops"], row["write_p50"]) == (1, 50, 5000.0)
        assert json.loads(row["hosts_json"]) == ["h1", "h2"]


def test_emptied_summaries_read_as_the_stored_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    with Store(db) as s:
        s.ensure_campaign("c", "c.toml", "text", "{}")
        s.record(point("p1", [job("h", "read", 100, {1000: 60, 3000: 40}, mean=1500.0)]))
        s.record(point("p2", [job("h", "write", 10, {}, mean=7.0)]))  # no bins: fio's own percentiles
    assert main(["show", "c", "--json", "--db", str(db)]) == 0
    stored = capsys.readouterr().out
    with sqlite3.connect(db) as c:
        c.execute(f"UPDATE run SET {', '.join(f'{col} = NULL' for col in SUMMARY_COLUMNS)}")
    c.close()
    assert main(["show", "c", "--json", "--db", str(db)]) == 0
    assert capsys.readouterr().out == stored
    rows = json.loads(stored)
    assert rows[0]["read_lat_ns"]["p50"] == 1000.0 and rows[0]["write_iops"] == 0
    assert rows[1]["write_lat_ns"]["p99"] == LAT["p99"]  # one job without bins: fio's figure
    with Store(db, readonly=True) as s:
        assert [r.read_ops for r in summary.point_rows(s, "c")] == [100, 0]


def test_a_damaged_detail_row_is_found_by_the_command_that_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """show reads the stored summaries and passes; report merges the histograms and stops with one sentence."""
    db = tmp_path / "s.db"
    with Store(db) as s:
        s.ensure_campaign("c", "c.toml", "text", "{}")
        s.record(point("p1", [job("h", "read", 100, {1000: 60, 3000: 40}, mean=1500.0)]))
    with sqlite3.connect(db) as c:
        c.execute("UPDATE histogram SET bins = '[[1]]'")
    c.close()
    assert main(["show", "c", "--json", "--db", str(db)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["read_lat_ns"]["p50"] == 1000.0
    bad = r"table histogram, row 1: bins = '\[\[1\]\]' is not a list of"
    with Store(db, readonly=True) as s, pytest.raises(StoreError, match=bad):
        s.campaign_histograms("c")
