"""``compare`` reads each point through ``rows.summary_rows`` (no device, CPU or QEMU-process figures, a point
with a stored summary read from its tuple of columns): every other field as ``point_rows`` reads it, for points
recorded by vmio (host and QEMU targets, odd host facts, optional fields, a summary emptied as an old store
has it) and for the stores of tests/data/stores."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

from vmio.fio.output import JobResult
from vmio.store import RunRecord, Store
from vmio.store.rows import point_rows, summary_rows

LAT = {"min": 1e4, "mean": 2e5, "max": 9e5, "stddev": 1.0, "p50": 2e5, "p90": 3e5, "p99": 5e5, "p99.9": 8e5,
       "p99.99": 9e5}  # fmt: skip


def record(path: Path) -> None:
    with Store(path) as s:
        s.ensure_campaign("c", "c.toml", "", json.dumps({"targets": [], "workloads": []}))
        for rep in range(1, 9):
            vm = rep % 2 == 0
            ddir = "read" if rep < 5 else "write"
            res = JobResult("local", "measure", ddir, 480.0 + rep, 4096 * 480.0, 4800, 10_000, LAT, 1.0, 2.0,
                            {200_000: 980, 500_000: 19, 800_000: 1})  # fmt: skip
            s.record(RunRecord(
                campaign="c", point_key=f"t/w/bs=4096/offered=max/load=0/rep={rep}", target="t",
                target_kind="qemu" if vm else "host", workload="w", bs=4096, offered_iops=None if rep < 3 else 500,
                load_processes=0, repetition=rep, status="done" if rep != 3 else "failed", started=0.0, ended=1.0,
                host={"hostname": "h", **({"qemu_machine": "microvm", "guest_io_warnings": 2} if rep == 4 else {})},
                accel="tcg" if vm else None, qemu_version="10.0.2" if vm else None, results=[res],
                metrics={("cpu", "usr_pct"): 12.5, ("qemu:vmio-0", "vcpu_pct"): 80.0},
            ))  # fmt: skip
    db = sqlite3.connect(path)
    with db:
        ids = [r[0] for r in db.execute("SELECT id FROM run ORDER BY id")]
        db.execute("UPDATE run SET iodepth = 8, steady_json = ? WHERE id = ?", ('{"reached": true}', ids[4]))
        db.execute(
            "UPDATE run SET layers_json = ? WHERE id = ?", ('{"guest": {"read": {"mean_us": 2}}}', ids[5])
        )
        db.execute("UPDATE run SET read_jobs = NULL WHERE id = ?", (ids[6],))  # summed again from its results
        db.execute(
            "UPDATE run SET host_json = ? WHERE id = ?", ('{"storage": [{"filesystem": "xfs"}]}', ids[7])
        )
    db.close()


def test_summary_rows_are_the_point_rows_without_their_figures(tmp_path: Path) -> None:
    stores = [tmp_path / "s.db"]
    record(stores[0])
    for fixture in sorted(Path(__file__).parent.glob("data/stores/*.db")):
        stores.append(tmp_path / fixture.name)
        stores[-1].write_bytes(fixture.read_bytes())
    for path in stores:
        with Store(path) as s:
            for name in s.campaigns():
                full = [
                    dataclasses.replace(r, device_metrics={}, cpu={}, qemu_cpu_pct=None)
                    for r in point_rows(s, name)
                ]
                assert full
                assert repr(summary_rows(s, name)) == repr(full), (path, name)
    with Store(stores[0]) as s:
        rows = summary_rows(s, "c")
    assert [r.qemu_machine for r in rows[2:4]] == [None, "microvm"] and rows[3].guest_io_warnings == 2
    assert rows[4].iodepth == 8 and rows[4].steady == {"reached": True} and rows[5].layers is not None
    assert rows[7].storage is not None and rows[7].storage["filesystem"] == "xfs"
    assert rows[0].read_lat_ns is not None and rows[0].read_lat_ns["p50"] > 0 and rows[0].write_lat_ns is None
