"""Each point's device, CPU and QEMU-process figures are stored when it is written (migration 9 fills them for
older points) and show the same as reading them from the point's metrics: checked against figures worked out
by hand and against ``show --json`` with the stored figures emptied (read from ``run_metric`` again)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.store import RunRecord, Store
from vmio.store.point_metrics import METRIC_COLUMNS
from vmio.store.schema import SCHEMA_VERSION

STORES = Path(__file__).parent / "data" / "stores"
VM_METRICS = [
    ("dev:loop0", "busy_pct", 42.5),
    ("qemu:vmio-0", "vcpu_pct", 80.004),
    ("qemu:vmio-1", "vcpu_pct", 20.0),
    ("qemu:vmio-1", "iothread1_pct", 30.0),
    ("qemu:vmio-0", "main_pct", 1.5),
]


def show_json(db: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["show", "fixture", "--json", "--db", str(db)]) == 0
    return capsys.readouterr().out


def emptied(db: Path) -> None:
    with sqlite3.connect(db) as c:
        c.execute(f"UPDATE run SET {', '.join(f'{col} = NULL' for col in METRIC_COLUMNS)}")
    c.close()


def test_the_v8_fixture_migrates_and_shows_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v8.db"
    with sqlite3.connect(db) as c:
        c.executescript((STORES / "schema-v8.sql").read_text())
        # the fixture's point 1 as a VM point: a device figure and two VMs' QEMU threads
        c.execute("UPDATE run SET target_kind = 'qemu', qemu_version = '10.0.2' WHERE id = 1")
        c.executemany("INSERT INTO run_metric VALUES (1, ?, ?, ?)", VM_METRICS)
    c.close()
    with Store(db) as s:
        assert s.schema_version == SCHEMA_VERSION  # migrated to the newest
        row = s.db.execute("SELECT * FROM run WHERE id = 1").fetchone()
        assert (row["dev_busy_pct"], row["cpu_usr_pct"], row["dev_read_iops"]) == (42.5, 13.0, None)
        # vCPUs 80.004 + 20.0 = 100.004 -> 100.0; iothread1 of vmio-1 alone, iothread0 none
        assert json.loads(row["qemu_cpu_json"]) == {"vcpu": 100.0, "main_loop": 1.5, "iothreads": [0.0, 30.0],
                                                    "other": 0.0}  # fmt: skip
        failed = s.db.execute("SELECT * FROM run WHERE id = 2").fetchone()
        assert (failed["cpu_usr_pct"], failed["qemu_cpu_json"]) == (None, "null")
    migrated = show_json(db, capsys)
    point = json.loads(migrated)[0]
    assert (point["dev_busy_pct"], point["cpu_usr_pct"], point["qemu_cpu_pct"]["iothreads"]) == (
        42.5,
        13.0,
        [0.0, 30.0],
    )
    emptied(db)
    assert show_json(db, capsys) == migrated  # read from run_metric as before migration 9


def test_a_recorded_point_stores_its_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    with Store(db) as s:
        s.ensure_campaign("fixture", "f.toml", "text", "{}")
        for key, kind, device in (("vm", "qemu", "vda"), ("bare", "host", None)):
            s.record(RunRecord(
                campaign="fixture", point_key=key, target=key, target_kind=kind, workload="w", bs=4096,
                offered_iops=None, load_processes=0, repetition=1, status="done", started=1.0, ended=2.0,
                device=device,
                metrics={("dev:vda", "await_ms"): 0.25, ("cpu", "iowait_pct"): 7.0, ("qemu:vmio-0", "other_pct"): 2.345},
            ))  # fmt: skip
        rows = {r["point_key"]: r for r in s.db.execute("SELECT * FROM run")}
    assert (rows["vm"]["dev_await_ms"], rows["vm"]["cpu_iowait_pct"]) == (0.25, 7.0)
    assert json.loads(rows["vm"]["qemu_cpu_json"])["other"] == 2.35
    assert (rows["bare"]["dev_await_ms"], rows["bare"]["cpu_iowait_pct"]) == (None, 7.0)  # no device: none
    stored = show_json(db, capsys)
    points = json.loads(stored)
    assert points[0]["qemu_cpu_pct"]["other"] == 2.35 and points[1]["qemu_cpu_pct"] is None  # a host target
    emptied(db)
    assert show_json(db, capsys) == stored
