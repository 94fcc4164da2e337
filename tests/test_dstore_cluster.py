"""A real Ceph cluster on loopback: up, status, the bitisle-dstore-2014 profile at three block sizes, plots, a QEMU rbd
disk, the striping comparison, and down leaving no process and no file behind."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.dstore import cluster, daemons, rbdfio
from vmio.dstore.cephconf import ClusterLayout
from vmio.dstore.profile import Criteria, verdict
from vmio.errors import ClusterError
from vmio.system.process import Runner

from conftest import CEPH_TOOLS, ceph_processes, needs_tools

pytestmark = [
    pytest.mark.ceph,
    pytest.mark.fio,
    pytest.mark.slow,
    needs_tools(*CEPH_TOOLS, "qemu-img"),
]


def test_status_reports_a_clean_size_3_pool(
    live_cluster: cluster.ClusterRef, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dstore", "status", "--dir", str(live_cluster.root), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["pool_size"] == 3
    assert info["osds_up"] == 3
    assert info["pg_states"] == {"active+clean": info["pgs"]}
    assert sorted(info["daemons"]) == ["mgr.x", "mon.a", "osd.0", "osd.1", "osd.2"]
    # the same cluster reached as an existing one, through its ceph.conf
    assert (
        main(
            [
                "dstore",
                "status",
                "--conf",
                str(live_cluster.conf),
                "--pool",
                live_cluster.pool,
                "--image",
                live_cluster.image,
                "--json",
            ]
        )
        == 0
    )
    same = json.loads(capsys.readouterr().out)
    assert same["pgs"] == info["pgs"] and "daemons" not in same


def listening_addresses(pids: list[int]) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp*) of the TCP sockets these processes listen on."""
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                found.add(fields[1].rsplit(":", 1)[0])
    return found


def test_every_daemon_listens_on_loopback_only(live_cluster: cluster.ClusterRef) -> None:
    assert live_cluster.root is not None
    pids = list(daemons.running(live_cluster.root / "run", live_cluster.conf).values())
    assert len(pids) == 5
    assert listening_addresses(pids) == {"0100007F"}  # 127.0.0.1, nothing on 0.0.0.0 or IPv6


def test_qemu_reaches_the_rbd_image(live_cluster: cluster.ClusterRef) -> None:
    runner = Runner()
    out = runner.run(["qemu-img", "info", "--output=json", rbdfio.image_opts(live_cluster)], timeout=60)
    assert json.loads(out.stdout)["virtual-size"] == 1 << 30
    drive = rbdfio.drive_args(live_cluster)[1]
    legacy = runner.run(
        ["qemu-img", "info", "--output=json", drive.split(",")[0].removeprefix("file=")], timeout=60
    )
    assert json.loads(legacy.stdout)["virtual-size"] == 1 << 30
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("needs qemu-system-x86_64 for the -blockdev check")
    commands = ("qmp_capabilities", "query-named-block-nodes", "quit")
    qmp = "\n".join(json.dumps({"execute": c}) for c in commands)
    argv = [
        "qemu-system-x86_64",
        "-M",
        "none",
        "-nodefaults",
        "-display",
        "none",
        "-qmp",
        "stdio",
        *rbdfio.blockdev_args(live_cluster)[:2],
    ]
    done = runner.run(argv, timeout=60, input_text=qmp + "\n")
    nodes = [json.loads(line) for line in done.stdout.splitlines() if '"return"' in line][1]["return"]
    seen = [(n["node-name"], n["drv"], n["image"]["virtual-size"]) for n in nodes]
    assert seen == [("disk0", "rbd", 1 << 30)]


def test_profile_three_sizes_with_verdicts_plots_and_compare(
    live_cluster: cluster.ClusterRef, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plots = tmp_path / "plots"
    code = main(
        [
            "dstore",
            "profile",
            "--dir",
            str(live_cluster.root),
            "--bs",
            "4k,64k,1m",
            "--runtime",
            "2s",
            "--ramp",
            "500ms",
            "--json",
            "--plot-dir",
            str(plots),
            "--compare",
            "striping",
            "-o",
            str(tmp_path / "p.json"),
            "--name",
            "striping",
            "--db",
            str(tmp_path / "vmio.db"),
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out == json.loads((tmp_path / "p.json").read_text())
    criteria = Criteria(**out["criteria"])
    for profile in (out, out["compare"]["other"]):
        points = profile["points"]
        assert [p["bs"] for p in points] == [4096, 65536, 1 << 20]
        for p in points:
            assert p["iops"] > 0 and p["mean_lat_ms"] > 0 and p["p99_lat_ms"] >= p["mean_lat_ms"] * 0.5
            assert p["verdict"] == verdict(p["mean_lat_ms"], p["iops"], criteria)
            # Little's law: 50 outstanding I/Os = IOPS x mean latency, within fio's bookkeeping
            # the ends of a short run weigh more on a busy host (55, 66 seen at load 9)
            assert 35 < p["iops"] * p["mean_lat_ms"] / 1e3 < 70
        assert points[2]["mb_s"] > points[0]["mb_s"]  # big blocks move more bytes, fewer I/Os
        assert points[2]["iops"] < points[0]["iops"]
    for name in ("profile.png", "compare.png"):
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # stored (--name): both configurations are targets of the campaign, each point as the JSON has it
    assert main(["show", "striping", "--db", str(tmp_path / "vmio.db"), "--json"]) == 0
    rows = {(r["target"], r["bs"]): r for r in json.loads(capsys.readouterr().out)}
    for target, profile in (("host-librbd", out), ("host-librbd-striped", out["compare"]["other"])):
        for p in profile["points"]:
            row = rows[(target, p["bs"])]
            assert row["read_iops"] + row["write_iops"] == pytest.approx(p["iops"], rel=1e-6)
            assert (
                row["dstore"]["image"] == profile["setup"]["image"]
                and row["dstore"]["config"] == (profile["setup"]["config"])
            )
    # the striped variant image was removed again
    images = Runner().run(["rbd", "-c", str(live_cluster.conf), "ls", live_cluster.pool], timeout=60).stdout
    assert images.split() == [live_cluster.image]


def test_rbd_target_in_a_campaign(live_cluster: cluster.ClusterRef, tmp_path: Path) -> None:
    """kind = "rbd": the same spec, store and show as every other target, through fio's rbd engine."""
    from vmio.store import Store
    from vmio.store.rows import point_rows

    spec = tmp_path / "rbd.toml"
    spec.write_text(
        '[campaign]\nname = "rbd"\n[[target]]\nname = "ceph"\nkind = "rbd"\n'
        f'conf = "{live_cluster.conf}"\npool = "{live_cluster.pool}"\nimage = "{live_cluster.image}"\n'
        '[[workload]]\nname = "seed002"\nrw = "randrw"\nrwmixread = 30\nbs = "16k"\niodepth = 50\n'
        'runtime = "2s"\n'
    )
    db = tmp_path / "rbd.db"
    assert main(["run", str(spec), "--db", str(db)]) == 0
    with Store(db) as store:
        (row,) = point_rows(store, "rbd")
        assert row.status == "done" and row.read_iops > 0 and row.write_iops > 0
        assert row.write_iops > row.read_iops  # 30 % reads
        assert row.device is not None and row.metric("cpu_usr_pct") is not None
        (run,) = store.runs("rbd")
        assert "ioengine=rbd" in run["job_file"] and f"rbdname={live_cluster.image}" in run["job_file"]
    # the model calibrates on the stored campaign as it does on a profile file
    from vmio.dstore.from_campaign import profile_from_campaign

    with Store(db) as store:
        (point,) = profile_from_campaign(store, "rbd").points
    assert point.bs == 16384 and point.iops == pytest.approx(row.read_iops + row.write_iops)
    assert main(["dstore", "model", "--calibrate", "rbd", "--db", str(db), "--replicas", "2", "--json"]) == 0


@pytest.mark.qemu
def test_vm_disk_on_rbd_in_a_campaign(live_cluster: cluster.ClusterRef, tmp_path: Path) -> None:
    """bitisle-dstore-2014's case: a guest whose disk lives on the replicated store, through QEMU's rbd driver."""
    from vmio.store import Store
    from vmio.store.rows import point_rows

    from qemu_support import MISSING

    if MISSING:
        pytest.skip(f"needs {', '.join(MISSING)}")
    spec = tmp_path / "vmrbd.toml"
    spec.write_text(
        '[campaign]\nname = "vmrbd"\n[[target]]\nname = "vm-on-ceph"\nkind = "qemu"\n'
        f'backing = ["rbd:{live_cluster.pool}/{live_cluster.image}"]\nconf = "{live_cluster.conf}"\n'
        'size = "256M"\n[[workload]]\nname = "seed002"\nrw = "randrw"\nrwmixread = 30\nbs = "16k"\n'
        'iodepth = 16\nruntime = "2s"\n'
    )
    db = tmp_path / "vmrbd.db"
    assert main(["run", str(spec), "--db", str(db)]) == 0
    with Store(db) as store:
        (row,) = point_rows(store, "vmrbd")
        assert row.status == "done" and row.accel in ("kvm", "tcg")
        assert row.read_iops > 0 and row.write_iops > 0
        (run,) = store.runs("vmrbd")
        assert '"driver":"rbd"' in run["qemu_argv"].replace(" ", "").replace("\\", "")


def test_a_failed_up_removes_what_it_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``up`` fails after its mon, mgr and OSD started (the deadline for active+clean has passed): it stops
    every daemon it started, pid file or not, before it reports the failure."""
    root = tmp_path / "doomed"
    started: list[str] = []
    real_start = daemons.start

    def start_and_note(runner: Runner, layout: ClusterLayout, kind: str, ident: str) -> int:
        pid = real_start(runner, layout, kind, ident)
        started.append(f"{kind}.{ident}")
        return pid

    monkeypatch.setattr(daemons, "start", start_and_note)
    with pytest.raises(ClusterError, match="active.clean"):
        cluster.up(root, osds=1, deadline_s=0.1)
    assert started == ["mon.a", "mgr.x", "osd.0"]
    assert ceph_processes(str(root)) == []
