"""Issue 13: what "in use" means for a device (a /sys fixture and real loop devices), vmio calibrate with real
fio, the calibration used by diagnose, and vmio advise's ratio from this host's stored campaigns."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from vmio.advise.disk_config import Config
from vmio.advise.measured import measured_ratios, pick
from vmio.cli import main
from vmio.fio.output import JobResult
from vmio.spec import loads_spec
from vmio.store import RunRecord, Store
from vmio.system.blockdev import stable_id, uses

from conftest import make_loop, store_from_sql

DATA = Path(__file__).parent / "data" / "stores"


def fake_sys(root: Path) -> Path:
    """sdb held by dm-0 (LVM), sdc1 held by md0, sdd backs loop3 through a file, sde blank."""
    sysfs = root / "sys"
    for disk in ("sdb", "sdc", "sdd", "sde"):
        (sysfs / "block" / disk / "holders").mkdir(parents=True)
    (sysfs / "block/sdb/holders/dm-0").mkdir()
    (sysfs / "block/sdc/sdc1/holders").mkdir(parents=True)
    (sysfs / "block/sdc/sdc1/partition").write_text("1\n")
    (sysfs / "block/sdc/sdc1/holders/md0").mkdir()
    (sysfs / "block/loop3/loop").mkdir(parents=True)
    (sysfs / "block/loop3/loop/backing_file").write_text("/dev/sdd\n")
    (sysfs / "block/sde/device").mkdir()
    (sysfs / "block/sde/device/wwid").write_text("naa.5000c500a1b2c3d4\n")
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mounts").write_text("")
    (root / "proc/swaps").write_text("Filename Type Size Used Priority\n")
    return sysfs


def test_holders_and_loop_backing_from_a_sys_fixture(tmp_path: Path) -> None:
    sysfs = fake_sys(tmp_path)
    roots = {"sys_root": sysfs, "proc_root": tmp_path / "proc", "dev_root": tmp_path / "dev"}
    assert uses("sdb", **roots) == ["sdb is held by dm-0"]
    assert uses("sdc", **roots) == ["sdc1 is held by md0"]
    assert uses("sdd", **roots) == ["it is /dev/sdd, the backing of loop3"]
    assert uses("sde", **roots) == []
    assert stable_id("sde", sysfs) == "wwid:naa.5000c500a1b2c3d4"
    assert stable_id("loop3", sysfs) == "loop:/dev/sdd"


def test_a_v3_store_migrates_to_device_capacity(tmp_path: Path) -> None:
    db = store_from_sql("schema-v3.sql", tmp_path / "v3.db")
    assert sqlite3.connect(db).execute("SELECT MAX(version) FROM migrations").fetchone()[0] == 3
    with Store(db) as store:
        assert store.schema_version >= 4
        cols = [r[1] for r in store.db.execute("PRAGMA table_info(device_capacity)")]
    assert cols[:2] == ["host", "device_id"] and "capacity_read_iops" in cols


def result(job: str, ddir: str, iops: float) -> JobResult:
    lat = {"min": 1e4, "mean": 1e5, "max": 1e6, "stddev": 1e4}
    return JobResult("local", job, ddir, iops, iops * 4096, int(iops), 1000, lat, 0.0, 0.0)


def store_points(
    db: str, spec: str, points: dict[str, tuple[float, float, str | None]], accel: str = "tcg"
) -> None:
    """Store each point of ``spec`` as done with (read IOPS, write IOPS, device); no fio or VM is run."""
    camp = loads_spec(spec)
    with Store(db) as store:
        store.ensure_campaign(camp.name, "s.toml", spec, camp.canonical())
        for point in camp.points():
            read, write, device = points[point.target]
            kind = "qemu" if point.target.startswith("vm") else "host"
            now = time.time()
            results = [result("measure", "read", read), result("measure", "write", write)]
            store.record(RunRecord(camp.name, point.key, point.target, kind, point.workload, 4096, None, 0, 1,
                                   "done", now, now, accel=accel if kind == "qemu" else None,
                                   qemu_version="7.2.22" if kind == "qemu" else None, device=device,
                                   results=results))  # fmt: skip


def test_advise_json_gives_this_hosts_measured_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "a.db")
    # a missing store, named or the default ./vmio.db, is the same case (issue 38): advice from the paper's
    # ratios, and a note on stderr naming the store that is not there (a mistyped --db is seen); none is made
    assert main(["advise", "--json", "--db", str(tmp_path / "none.db")]) == 0
    assert "no store at" in capsys.readouterr().err and not (tmp_path / "none.db").exists()
    spec = ('[campaign]\nname = "m"\n[[target]]\nname = "bare"\npath = "/var/tmp/m.img"\n'
            '[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["/var/tmp/m.img"]\njobs_per_vm = 4\niothreads = 1\n'
            '[[workload]]\nname = "rw"\nrw = "randrw"\nruntime = "1s"\n')  # fmt: skip
    store_points(db, spec, {"bare": (8000.0, 2000.0, None), "vm": (2000.0, 1500.0, None)})
    assert main(["advise", "--json", "--db", db]) == 0
    ratio = json.loads(capsys.readouterr().out)["expected_ratio"]
    assert ratio["source"] == "measured: m, 1 points, tcg"
    assert (ratio["read"], ratio["write"]) == (2000 / 8000, 1500 / 2000)
    # a store without that configuration beside bare: the seed's figures
    empty = str(tmp_path / "e.db")
    Store(empty).close()
    assert main(["advise", "--json", "--db", empty]) == 0
    assert json.loads(capsys.readouterr().out)["expected_ratio"]["source"] == "hitachi-nvme-2016 (NVMe, KVM)"


def test_measured_ratios_never_mix_targets_of_two_shapes(tmp_path: Path) -> None:
    # one VM x 4 fio with an iothread, its disk on one backing path, and the same on two: two shapes of
    # "N fio/VM + iothread", each with its own ratio (reads 2000/8000 and 6000/8000), never their mean
    db = str(tmp_path / "s.db")
    spec = ('[campaign]\nname = "s"\n[[target]]\nname = "bare"\npath = "/var/tmp/s.img"\n'
            '[[target]]\nname = "vm1"\nkind = "qemu"\nbacking = ["/var/tmp/s.img"]\njobs_per_vm = 4\niothreads = 1\n'
            '[[target]]\nname = "vm2"\nkind = "qemu"\nbacking = ["/var/tmp/s.img", "/var/tmp/t.img"]\n'
            'jobs_per_vm = 4\niothreads = 1\n'
            '[[workload]]\nname = "rw"\nrw = "randrw"\nruntime = "1s"\n')  # fmt: skip
    store_points(db, spec, {"bare": (8000.0, 2000.0, None), "vm1": (2000.0, 1500.0, None),
                            "vm2": (6000.0, 1000.0, None)})  # fmt: skip
    with Store(db) as store:
        ratios = measured_ratios(store)
    by_devices = {m.shape.devices: m.ratio for m in ratios}
    assert (by_devices[1].read, by_devices[1].write) == (2000 / 8000, 1500 / 2000)
    assert (by_devices[2].read, by_devices[2].write) == (6000 / 8000, 1000 / 2000)
    one = Config("N fio/VM + iothread", "virtio-blk", 1, image="/x")
    two = Config("N fio/VM + iothread", "virtio-blk", 1, image="/x", spread_over=("sda", "sdb"))
    four_threads = Config("N fio/VM + iothread", "virtio-blk", 4, True, image="/x")
    assert pick(ratios, one) == by_devices[1] and pick(ratios, two) == by_devices[2]
    assert pick(ratios, four_threads) is None  # no stored target of that shape: the paper's figure then
    # each names its shape and N
    assert "at N = 4 (virtio-blk, 1 iothread(s), 1 queue(s), 1 VM(s) x 4 fio, 1 backing path(s))" in (
        by_devices[1].basis
    )
    assert "2 backing path(s)" in by_devices[2].basis


@pytest.mark.fio
def test_calibrate_a_file_and_a_loop_device_then_diagnose_uses_it(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for a loop device")
    db = str(tmp_path / "c.db")
    image = scratch / "cal.img"
    assert main(["calibrate", str(image), "--size", "16M", "--runtime", "50ms", "--db", db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert image.stat().st_size == 16 << 20 and image.stat().st_blocks * 512 >= 16 << 20  # fully written
    assert {"path", "device", "read_iops", "write_iops", "read_bw", "write_bw", "capacity_read_iops",
            "capacity_write_iops"} <= set(doc)  # fmt: skip
    assert doc["read_bw"] == max(doc["read_bw_by_qd"].values()) > 0 and isinstance(doc["write_bw"], float)
    assert list(doc["read_iops"]) == ["1", "4", "16", "32", "64", "128"] and doc["write_iops"] is not None
    assert doc["capacity_read_iops"] == max(doc["read_iops"].values()) > 0
    loop = make_loop(scratch / "loop.img", 32 << 20)
    try:
        assert main(["calibrate", loop, "--runtime", "50ms", "--db", db, "--json"]) == 0
        blank = json.loads(capsys.readouterr().out)
        assert blank["device"] == Path(loop).name and blank["write_iops"] is not None  # blank: writes allowed
        with Store(db) as store:
            (row,) = store.db.execute("SELECT * FROM device_capacity WHERE device = ?", (Path(loop).name,))
        assert row["device_id"] == f"loop:{scratch / 'loop.img'}"  # the backing file, not /dev/loopN
        assert row["capacity_read_iops"] == blank["capacity_read_iops"]
        # a VM target on the loop device: the device backs a VM disk, so it is not free, and its capacity
        # is the calibrated one, not a bare point of the campaign (there is none)
        spec = (f'[campaign]\nname = "v"\n[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["{loop}"]\n'
                'bus = "block"\n[[workload]]\nname = "rr"\nrw = "randread"\nruntime = "1s"\n')  # fmt: skip
        store_points(db, spec, {"vm": (blank["capacity_read_iops"] * 0.95, 0.0, Path(loop).name)})
        assert main(["diagnose", "v", "--db", db, "--json"]) == 0
        (verdict,) = json.loads(capsys.readouterr().out).values()
        steps = {s["node"]: s for s in verdict["steps"]}
        assert steps["b"]["answer"] == "no: every device is in use"
        cited = {c["figure"]: c["value"] for c in steps["e"]["evidence"]}
        assert cited[f"devices[{Path(loop).name}].capacity_source"] == f"vmio calibrate {loop}"
        assert (verdict["at_limit"], verdict["limit"]) == (True, "device")
        # once the loop device holds a filesystem, calibrate measures reads only
        subprocess.run(["mkfs.ext4", "-q", loop], check=True, timeout=60)
        assert main(["calibrate", loop, "--runtime", "50ms", "--db", db, "--json"]) == 0
        used = json.loads(capsys.readouterr().out)
        assert used["write_iops"] is None and used["capacity_write_iops"] is None and used["read_iops"]
    finally:
        subprocess.run(["losetup", "-d", loop], check=False, timeout=30)
