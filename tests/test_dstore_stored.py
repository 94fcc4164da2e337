"""A dstore profile stored as a campaign (``dstore profile --name``) on the suite's Ceph cluster, read back
by ``show --json`` and ``export`` as any campaign is, beside the JSON the command keeps writing."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.dstore import cluster
from vmio.errors import VmioError
from vmio.store import Store
from vmio.system.process import Runner
from vmio.targets.host import prepare_file

from conftest import CEPH_TOOLS, DSTORE_GOLDEN_JSON, json_shape, needs_tools

pytestmark = [pytest.mark.ceph, pytest.mark.fio, pytest.mark.slow, needs_tools(*CEPH_TOOLS)]


def test_a_stored_profile_reads_back_with_show_and_export(
    live_cluster: cluster.ClusterRef, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, base = tmp_path / "vmio.db", tmp_path / "base.img"
    prepare_file(base, 64 << 20)  # a file vmio made: the baseline uses it as it is (no 1 GiB to write)
    argv = ["dstore", "profile", "--dir", str(live_cluster.root), "--bs", "4k,64k", "--runtime", "2s",
            "--ramp", "500ms", "--baseline", f"file:{base}", "--json", "-o", str(tmp_path / "p.json"),
            "--name", "ceph-profile", "--db", str(db)]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out == json.loads((tmp_path / "p.json").read_text())  # the JSON for scripts, as before
    assert "stored as campaign 'ceph-profile' (4 points)" in captured.err

    assert main(["show", "ceph-profile", "--db", str(db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by = {(r["target"], r["bs"]): r for r in rows}
    assert sorted(by) == [("host-file", 4096), ("host-file", 65536), ("host-librbd", 4096),
                          ("host-librbd", 65536)]  # fmt: skip
    client = Runner().run(["ceph", "--version"], timeout=30).stdout.strip()
    for target, points in (("host-librbd", out["points"]), ("host-file", out["baseline"]["points"])):
        for p in points:
            row = by[(target, p["bs"])]
            assert (row["workload"], row["status"], row["offered_iops"], row["repetition"]) == (
                "randrw", "done", "max", 1,
            )  # fmt: skip
            assert (row["target_kind"], row["iodepth"]) == (
                ("rbd" if target == "host-librbd" else "host"),
                50,
            )
            # the store's sums of fio's per-job figures are the profile's totals
            assert row["read_iops"] == pytest.approx(p["read_iops"], rel=1e-6)
            assert row["write_iops"] == pytest.approx(p["write_iops"], rel=1e-6)
            # 30 % reads asked of fio, and the stored mean is the profile's (fio's own means, by operations)
            ops = row["read_ops"] + row["write_ops"]
            assert 0.2 < row["read_ops"] / ops < 0.4
            mean_ms = (row["read_lat_ns"]["mean"] * row["read_ops"] + row["write_lat_ns"]["mean"]
                       * row["write_ops"]) / ops / 1e6  # fmt: skip
            assert mean_ms == pytest.approx(p["mean_lat_ms"], rel=1e-6)
            # percentiles from the stored histograms: the mix's p99 lies between its two directions'
            p99s = sorted(row[f"{d}_lat_ns"]["p99"] / 1e6 for d in ("read", "write"))
            assert p99s[0] - 1e-6 <= p["p99_lat_ms"] <= p99s[1] + 1e-6
            assert row["read_lat_ns"]["p50"] <= row["read_lat_ns"]["p99"] <= row["read_lat_ns"]["max"]
            ran_on = row["dstore"]
            assert ran_on["verdict"] == p["verdict"] and ran_on["rwmixread"] == 30 and ran_on["iodepth"] == 50
            assert ran_on["ceph_client_version"] == client
            assert ran_on["ceph_version"].startswith(client.split(" (")[0])  # the one release of this host
            assert row["fio_version"]
        assert by[(target, 4096)]["dstore"]["config"] == (
            "as configured" if target == "host-librbd" else f"file:{base}"
        )
    librbd = by[("host-librbd", 4096)]["dstore"]
    assert (librbd["pool"], librbd["image"], librbd["replicas"], librbd["osds"]) == (
        live_cluster.pool, live_cluster.image, 3, 3,
    )  # fmt: skip
    assert librbd["osds_down"] == []  # the cluster's own map was watched, and was healthy

    csv_path = tmp_path / "points.csv"
    assert main(["export", "ceph-profile", "--db", str(db), "--format", "csv", "-o", str(csv_path)]) == 0
    capsys.readouterr()
    with csv_path.open() as fh:
        exported = {(r["target"], int(r["bs"])): r for r in csv.DictReader(fh)}
    assert sorted(exported) == sorted(by)
    for key, row in by.items():
        assert float(exported[key]["write_iops"]) == pytest.approx(row["write_iops"], rel=1e-9)
        assert exported[key]["dstore_pool"] == (live_cluster.pool if key[0] == "host-librbd" else "")
        assert exported[key]["dstore_ceph_version"] == row["dstore"]["ceph_version"]

    # the other store commands read it as any campaign: ls names its targets, the model calibrates on it
    assert main(["ls", "--db", str(db), "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["name"], listed["targets"], listed["workloads"]) == (
        "ceph-profile",
        ["host-librbd", "host-file"],
        ["randrw"],
    )
    model = [
        "dstore",
        "model",
        "--calibrate",
        "ceph-profile",
        "--db",
        str(db),
        "--target",
        "host-librbd",
        "--json",
    ]
    assert main(model) == 0
    assert json.loads(capsys.readouterr().out)["fit"]["fit_bs"] == [4096, 65536]

    # compare: the pool against the local file per block size and direction, from the stored figures
    assert main(["compare", "ceph-profile", "--baseline", "host-file", "--db", str(db), "--json"]) == 0
    ratios = {
        (r["bs"], r["ddir"]): r["ratio"]["IOPS"]["median"]
        for r in json.loads(capsys.readouterr().out)["rows"]
    }
    assert sorted(ratios) == [(4096, "read"), (4096, "write"), (65536, "read"), (65536, "write")]
    for (bs, ddir), value in ratios.items():
        mine, theirs = by[("host-librbd", bs)], by[("host-file", bs)]
        assert value == pytest.approx(mine[f"{ddir}_iops"] / theirs[f"{ddir}_iops"], rel=1e-9)

    # the JSON keeps the shape and keys vmio printed before its profiles were campaigns (the golden, from
    # the same options with --compare as well), and each configuration's setup now names the network its
    # replicas crossed (the file baseline none); a profile stored before that prints none
    golden = json_shape(json.loads(DSTORE_GOLDEN_JSON.read_text()))
    assert isinstance(golden, dict)
    golden["setup"] |= {"network": {"kind": "str", "rate": None, "delay_ms": None}}
    golden["baseline"]["setup"] |= {"network": None}
    assert json_shape(out) == {k: v for k, v in golden.items() if k != "compare"}
    assert out["setup"]["network"] == {"kind": "loopback", "rate": None, "delay_ms": None}

    # the same profile again resumes the stored one: nothing is measured, the same profile is printed
    with Store(str(db), readonly=True) as store:
        first = {r["point_key"]: r["started"] for r in store.runs("ceph-profile")}
    assert main([a for a in argv if a not in ("-o", str(tmp_path / "p.json"))]) == 0
    again = capsys.readouterr()
    assert json.loads(again.out) == out and "  bs " not in again.err
    with Store(str(db), readonly=True) as store:
        assert {r["point_key"]: r["started"] for r in store.runs("ceph-profile")} == first
    # another profile under the name is refused before anything runs
    assert main([*argv[:5], "4k", *argv[6:]]) == 2
    err = capsys.readouterr().err
    assert "--name 'ceph-profile': a different profile of that name is already stored" in err
    assert err.count("\n") == 1


def test_a_profile_killed_midway_resumes(
    live_cluster: cluster.ClusterRef, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 of ``dstore profile --name`` in the middle keeps the points it finished; the same command
    measures only the rest, and prints the whole profile."""
    db = tmp_path / "vmio.db"
    argv = ["dstore", "profile", "--dir", str(live_cluster.root), "--bs", "4k,8k", "--runtime", "1s",
            "--ramp", "0s", "--json", "--name", "killed", "--db", str(db)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "vmio", *argv], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _done(db, "killed"):
            assert proc.poll() is None, "the profile ended before it could be killed"
            time.sleep(0.2)
        done = _done(db, "killed")
        assert len(done) == 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert [p["bs"] for p in out["points"]] == [4096, 8192]
    assert captured.err.count("  bs ") == 1  # the progress line of the one point measured now
    with Store(str(db), readonly=True) as store:
        runs = store.runs("killed")
    assert sorted(r["point_key"] for r in runs if r["status"] == "done") == sorted(
        f"host-librbd/randrw/bs={b}/offered=max/load=0/rep=1" for b in ("4k", "8k")
    )
    assert {r["point_key"]: r["started"] for r in runs if r["point_key"] in done} == done


def _done(db: Path, name: str) -> dict[str, float]:
    """The done points of campaign ``name`` and when each started (nothing while the store is not there)."""
    if not db.exists():
        return {}
    try:
        with Store(str(db), readonly=True) as store:
            if store.campaign(name) is None:
                return {}
            return {r["point_key"]: r["started"] for r in store.runs(name) if r["status"] == "done"}
    except VmioError:
        return {}
