"""diagnose CAMPAIGN: evidence built from real stored runs, dumped, and read back by --evidence."""

from __future__ import annotations

import json
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
        '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\niodepth = 8\nruntime = "1s"\n'
        'offered_iops = [300, "max"]\n'
    )
    db = str(tmp_path / "d.db")
    assert main(["run", str(spec), "--db", db]) == 0
    capsys.readouterr()
    assert main(["diagnose", "d", "--db", db, "--json"]) == 0
    verdicts = json.loads(capsys.readouterr().out)
    assert list(verdicts) == ["bare/rr/bs=4096/offered=max/load=0/rep=1"]  # the unthrottled point by default
    (verdict,) = verdicts.values()
    assert verdict["limit"] in ("device", "host-cpu", "none") and verdict["steps"]
    key = "bare/rr/bs=4096/offered=300/load=0/rep=1"
    dump = tmp_path / "ev.json"
    assert main(["diagnose", "d", "--db", db, "--point", key, "--dump-evidence", str(dump)]) == 0
    evidence = json.loads(dump.read_text())
    assert evidence["vm"] is None and evidence["workload"] == {"read_pct": 100, "bs": 4096, "iodepth": 8}
    with sqlite3.connect(db) as con:  # fio's own figure for the point, as the store keeps it
        (fio_iops,) = con.execute(
            "SELECT SUM(iops) FROM result JOIN run ON run.id = result.run_id WHERE point_key = ? AND role = ?",
            (key, "measure"),
        ).fetchone()
    assert evidence["measured"]["read_iops"] == pytest.approx(fio_iops) and fio_iops <= 300 * 1.05
    # the capacity is the unthrottled point's IOPS, so 300 offered IOPS is far from the device's limit
    assert evidence["devices"][0]["capacity_read_iops"] > evidence["measured"]["read_iops"]
    capsys.readouterr()
    assert main(["diagnose", "--evidence", str(dump), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["limit"] != "device"
    assert main(["diagnose", "d", "--db", db, "--point", "nope"]) == 2
