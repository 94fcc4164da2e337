"""diagnose CAMPAIGN: evidence built from real stored runs, dumped, and read back by --evidence."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from vmio.cli import main

pytestmark = pytest.mark.fio


def test_diagnose_a_stored_campaign_and_its_dumped_evidence(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "d.toml"
    spec.write_text(
        f'[campaign]\nname = "d"\n[[target]]\nname = "bare"\npath = "{scratch}/d.img"\nsize = "32M"\n'
        '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\niodepth = 1\nruntime = "1s"\n'
        'offered_iops = [300, "max"]\n'
    )
    db = str(tmp_path / "d.db")
    assert main(["run", str(spec), "--db", db]) == 0
    capsys.readouterr()
    assert main(["diagnose", "d", "--db", db, "--json"]) == 0
    verdicts = json.loads(capsys.readouterr().out)
    assert list(verdicts) == ["bare/rr/bs=4k/offered=max/load=0/rep=1"]  # the unthrottled point by default
    (verdict,) = verdicts.values()
    # issue 26: no calibration and no declared capacity -> the best (and only) unthrottled point at queue
    # depth 1 is never "at the device limit" against itself; the verdict says how to measure the capacity
    assert verdict["limit"] != "device" and verdict["steps"]
    (device,) = [s for s in verdict["steps"] if s["node"] == "e"]  # a host target's device is always asked
    assert device["answer"].startswith("unknown: the device's capacity is unknown")
    assert "vmio calibrate /dev/" in device["answer"] and "at the limit" not in device["answer"]
    assert verdict["at_limit"] is False and verdict["lift"].startswith("measure the device's capacity")
    key = "bare/rr/bs=4k/offered=300/load=0/rep=1"
    dump = tmp_path / "ev.json"
    assert main(["diagnose", "d", "--db", db, "--point", key, "--dump-evidence", str(dump)]) == 0
    evidence = json.loads(dump.read_text())
    assert evidence["vm"] is None and evidence["workload"] == {"read_pct": 100, "bs": 4096, "iodepth": 1}
    with sqlite3.connect(db) as con:  # fio's own figure for the point, as the store keeps it
        (fio_iops,) = con.execute(
            "SELECT SUM(iops) FROM result JOIN run ON run.id = result.run_id WHERE point_key = ? AND role = ?",
            (key, "measure"),
        ).fetchone()
    assert evidence["measured"]["read_iops"] == pytest.approx(fio_iops) and fio_iops <= 300 * 1.05
    assert evidence["devices"][0]["capacity_read_iops"] is None  # never the campaign's own best point
    # fio's own CPU, as fio reported it for the one job
    assert evidence["measured"]["fio_usr_pct"] is not None and evidence["measured"]["fio_sys_pct"] is not None
    capsys.readouterr()
    assert main(["diagnose", "--evidence", str(dump), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["limit"] != "device"
    assert main(["diagnose", "d", "--db", db, "--point", "nope"]) == 2
    # a declared capacity is judged against: fio's own IOPS of a declared 1.05 times them is at the limit,
    # of 100 times them it is not (relative to what fio achieved, so a busy machine changes nothing)
    capsys.readouterr()
    for declared, at_device in ((str(round(fio_iops * 1.05)), True), (str(round(fio_iops * 100)), False)):
        args = ["diagnose", "d", "--db", db, "--point", key, "--json", "--capacity-read-iops", declared]
        assert main(args) == 0
        (verdict,) = json.loads(capsys.readouterr().out).values()
        assert (verdict["limit"] == "device") is at_device
        (step,) = [s for s in verdict["steps"] if s["node"] == "e"]
        assert "declared with --capacity-read-iops" in step["answer"]


def test_a_host_targets_declared_capacity_is_judged_against(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "c.toml"
    spec.write_text(
        f'[campaign]\nname = "c"\n[[target]]\nname = "bare"\npath = "{scratch}/c.img"\nsize = "16M"\n'
        "capacity_read_iops = 310\n"
        '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\niodepth = 1\nruntime = "1s"\n'
        "offered_iops = [300]\n"
    )
    db = str(tmp_path / "c.db")
    assert main(["run", str(spec), "--db", db]) == 0
    capsys.readouterr()
    assert main(["diagnose", "c", "--db", db, "--json"]) == 0
    (verdict,) = json.loads(capsys.readouterr().out).values()
    (step,) = [s for s in verdict["steps"] if s["node"] == "e"]
    assert "declared by target 'bare'" in step["answer"]
    fraction = next(c for c in step["evidence"] if c["figure"] == "capacity_fraction")
    # the fraction is fio's IOPS over the declared 310, worked out here from what fio measured
    measured = next(c for c in step["evidence"] if c["figure"] == "measured.read_iops")["value"]
    assert fraction["value"] == pytest.approx(measured / 310, abs=1e-3)
    assert (verdict["limit"] == "device") is (measured / 310 >= 0.85)


def test_a_tcg_campaigns_verdicts_say_tcg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.db"
    shutil.copy(Path(__file__).parent / "data" / "stores" / "demo000.db", db)
    with sqlite3.connect(db) as con:
        query = ("SELECT point_key FROM run JOIN campaign ON campaign.id = run.campaign_id WHERE name = 'demo' "
                 "AND accel = 'tcg' AND offered_iops IS NULL AND status = 'done'")  # fmt: skip
        tcg = {k for (k,) in con.execute(query)}
    assert tcg
    assert main(["diagnose", "demo", "--db", str(db), "--json"]) == 0
    verdicts = json.loads(capsys.readouterr().out)
    assert tcg <= set(verdicts)
    for key, verdict in verdicts.items():
        if key in tcg:
            assert verdict["accel"] == "tcg" and "measured.qemu_vcpu_cpu_pct" in verdict["tcg_affects"]
            assert any(w.startswith("TCG") for w in verdict["warnings"])
        else:
            assert verdict["tcg_affects"] == []
    assert main(["diagnose", "demo", "--db", str(db)]) == 0
    blocks = capsys.readouterr().out.split("\n== ")
    for block in blocks:
        key = block.removeprefix("== ").split("\n", 1)[0].split("  [")[0]
        assert ("Accelerator: TCG" in block) is (key in tcg), key
