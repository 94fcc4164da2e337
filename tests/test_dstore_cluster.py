"""A real Ceph cluster on loopback: up, status, the seed 002 profile at three block sizes, plots, a QEMU rbd
disk, the striping comparison, and down leaving no process and no file behind."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.dstore import cluster, rbdfio
from vmio.dstore.profile import Criteria, verdict
from vmio.proc import Runner

NEEDED = ("ceph-mon", "ceph-osd", "ceph-mgr", "ceph", "rbd", "monmaptool", "fio", "qemu-img")
MISSING = [tool for tool in NEEDED if shutil.which(tool) is None]

pytestmark = [
    pytest.mark.ceph,
    pytest.mark.fio,
    pytest.mark.slow,
    pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)} (scripts/setup-system.sh full)"),
]


def ceph_processes(marker: str) -> list[str]:
    """Command lines of live ceph-* processes that mention ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        text = b" ".join(argv).decode(errors="replace")
        if argv and Path(argv[0].decode(errors="replace")).name.startswith("ceph-") and marker in text:
            found.append(text)
    return found


@pytest.fixture(scope="session")
def live_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cluster.ClusterRef]:
    root = tmp_path_factory.mktemp("dstore") / "cluster"
    assert main(["dstore", "up", "--dir", str(root), "--osds", "3", "--deadline", "150s"]) == 0
    ref = cluster.load(root)
    try:
        yield ref
    finally:
        if root.exists():
            cluster.down(root)


def test_status_reports_a_clean_size_3_pool(live_cluster: cluster.ClusterRef,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dstore", "status", "--dir", str(live_cluster.root), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["pool_size"] == 3
    assert info["osds_up"] == 3
    assert info["pg_states"] == {"active+clean": info["pgs"]}
    assert sorted(info["daemons"]) == ["mgr.x", "mon.a", "osd.0", "osd.1", "osd.2"]


def test_qemu_reaches_the_rbd_image(live_cluster: cluster.ClusterRef) -> None:
    out = Runner().run(["qemu-img", "info", "--output=json", rbdfio.image_opts(live_cluster)], timeout=60)
    assert json.loads(out.stdout)["virtual-size"] == 1 << 30
    args = rbdfio.blockdev_args(live_cluster)
    assert json.loads(args[1])["driver"] == "rbd"


def test_profile_three_sizes_with_verdicts_plots_and_compare(
        live_cluster: cluster.ClusterRef, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plots = tmp_path / "plots"
    code = main(["dstore", "profile", "--dir", str(live_cluster.root), "--bs", "4k,64k,1m",
                 "--runtime", "2s", "--ramp", "500ms", "--json", "--plot-dir", str(plots),
                 "--compare", "striping", "-o", str(tmp_path / "p.json")])
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
            assert 35 < p["iops"] * p["mean_lat_ms"] / 1e3 < 55
        assert points[2]["mb_s"] > points[0]["mb_s"]  # big blocks move more bytes, fewer I/Os
        assert points[2]["iops"] < points[0]["iops"]
    for name in ("profile.png", "compare.png"):
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the striped variant image was removed again
    images = Runner().run(["rbd", "-c", str(live_cluster.conf), "ls", live_cluster.pool], timeout=60).stdout
    assert images.split() == [live_cluster.image]


def test_down_leaves_no_process_and_no_file(live_cluster: cluster.ClusterRef) -> None:
    root = live_cluster.root
    assert root is not None
    assert ceph_processes(str(root))
    assert main(["dstore", "down", "--dir", str(root)]) == 0
    assert ceph_processes(str(root)) == []
    assert not root.exists()
