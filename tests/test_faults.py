"""Faults injected into real campaigns: the point fails naming where, the campaign goes on, nothing is left.

An unreachable remote is a closed port on 127.0.0.1; a fio server is killed while its point runs; fio is
killed at its deadline with its JSON unwritten; QEMU is killed mid-point; a Ceph OSD is killed mid-profile.
Each time the stored or printed outcome is checked, and that no process of the test outlives it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from vmio.campaign import measure
from vmio.cli import main
from vmio.dstore import cluster, daemons
from vmio.store import Store
from vmio.system.ports import free_port
from vmio.system.process import Runner
from vmio.targets.remote import LocalFioServer

from conftest import CEPH_TOOLS, SESSION_MARK, leftover_processes, needs_tools, recovery_unpaced
from qemu_support import needs_qemu

pytestmark = pytest.mark.fio


def spec(tmp: Path, scratch: Path, remote: str, runtime: str = "2s") -> Path:
    (scratch / "remote.img").write_bytes(b"\xa5" * (4 << 20))
    path = tmp / "f.toml"
    path.write_text(
        f'[campaign]\nname = "faults"\n'
        f'[[target]]\nname = "far"\nkind = "remote"\nhosts = ["{remote}"]\npaths = ["{scratch}/remote.img"]\n'
        'size = "4M"\n'
        f'[[target]]\nname = "near"\nkind = "host"\npath = "{scratch}/near.img"\nsize = "4M"\n'
        f'[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\nruntime = "{runtime}"\n'
    )
    return path


def outcome(db: Path) -> dict[str, tuple[str, str | None]]:
    with Store(db, readonly=True) as s:
        return {r["target"]: (r["status"], r["error"]) for r in s.runs("faults")}


def fio_left(marker: Path) -> str:
    """fio processes whose command line contains ``marker`` (a folder of the test, a server's option)."""
    out = subprocess.run(["pgrep", "-af", "fio"], capture_output=True, text=True, timeout=10).stdout
    return "\n".join(line for line in out.splitlines() if str(marker) in line and "pgrep" not in line)


def test_a_closed_port_fails_its_point_by_name_and_the_campaign_goes_on(
    fio: str, scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    db = tmp_path / "f.db"
    code = main(
        ["run", str(spec(tmp_path, scratch, address)), "--db", str(db), "--workdir", str(tmp_path / "w")]
    )
    assert code == 1
    got = outcome(db)
    assert got["far"][0] == "failed" and address in (got["far"][1] or "")
    assert got["near"] == ("done", None)
    assert "failed: far/rr" in capsys.readouterr().out
    assert fio_left(tmp_path) == ""


def test_a_fio_server_dying_mid_point(fio: str, scratch: Path, tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    with LocalFioServer() as server:
        # killed 2 s in, within the far point's 4 s runtime (its job, a process the kill does not reach, runs
        # them out: the point lasts them whatever the kill); the near point's 4 s follow
        killer = threading.Timer(2.0, lambda: os.killpg(server.proc.popen.pid, signal.SIGKILL))
        killer.start()
        try:
            started = time.monotonic()
            code = main(["run", str(spec(tmp_path, scratch, server.address, runtime="4s")), "--db", str(db),
                         "--workdir", str(tmp_path / "w")])  # fmt: skip
        finally:
            killer.cancel()
        assert server.proc.popen.poll() is not None, "the server was not killed during the point"
    assert code == 1
    assert time.monotonic() - started > 2.0
    got = outcome(db)
    assert got["far"][0] == "failed" and server.address in (got["far"][1] or "")
    assert got["near"] == ("done", None)
    # the killed server's job process ends on its own (the kill reached only the server): polled, not a
    # fixed wait, since a loaded host takes its time; what is left after 30 s is a leak
    deadline = time.monotonic() + 30
    while (
        fio_left(tmp_path) or fio_left(Path(f"--server=127.0.0.1,{server.port}"))
    ) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fio_left(tmp_path) == ""
    assert fio_left(Path(f"--server=127.0.0.1,{server.port}")) == ""  # nor any process of the server


def test_fio_killed_at_its_deadline_is_a_failed_point_with_the_reason(
    fio: str, scratch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # deadline = runtime + ramp + grace; a negative grace makes fio overrun a 3 s job by design
    monkeypatch.setattr(measure, "FIO_GRACE_S", -2.0)
    path = tmp_path / "t.toml"
    path.write_text(
        f'[campaign]\nname = "faults"\n[[target]]\nname = "near"\nkind = "host"\npath = "{scratch}/t.img"\n'
        'size = "4M"\n[[workload]]\nname = "slow"\nrw = "randread"\nbs = "4k"\nruntime = "3s"\n'
        '[[workload]]\nname = "ok"\nrw = "randread"\nbs = "4k"\nruntime = "3s"\noffered_iops = [100]\n'
    )
    db = tmp_path / "t.db"
    assert main(["run", str(path), "--db", str(db), "--workdir", str(tmp_path / "w")]) == 1
    with Store(db, readonly=True) as s:
        runs = {r["workload"]: r for r in s.runs("faults")}
    for run in runs.values():  # both overran: each is failed, named, with fio's partial output kept
        assert run["status"] == "failed"
        assert run["error"].startswith("fio on local: fio did not finish within 1 s and was killed")
    assert len(list((tmp_path / "w").glob("*/fio-output.txt"))) == 2
    assert fio_left(tmp_path) == ""


def our_qemus() -> list[int]:
    """This session's QEMU processes (one that exits while they are listed is not)."""
    return [
        pid for pid, _ in leftover_processes(os.environ[SESSION_MARK]) if _comm(pid).startswith("qemu-system")
    ]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text()
    except FileNotFoundError:  # it exited after it was listed (a stopped point's fio, a killed QEMU)
        return ""


@needs_qemu
@pytest.mark.qemu
def test_qemu_dying_mid_point_fails_that_point_with_its_console_and_the_next_boots_afresh(
    fio: str, scratch: Path, tmp_path: Path
) -> None:
    path = tmp_path / "q.toml"
    path.write_text(
        f'[campaign]\nname = "faults"\n[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["{scratch}/q.img"]\n'
        'size = "32M"\n'
        '[[workload]]\nname = "first"\nrw = "randread"\nbs = "4k"\nruntime = "6s"\n'
        '[[workload]]\nname = "second"\nrw = "randread"\nbs = "4k"\nruntime = "1s"\n'
    )  # fmt: skip
    db, work = tmp_path / "q.db", tmp_path / "w"
    killed: list[int] = []
    seen: set[int] = set()

    def kill_qemu_inside_the_first_point() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(work.glob("vm_first_*/job0.fio")):
            seen.update(our_qemus())
            time.sleep(0.05)
        time.sleep(2.0)  # fio is running in the guest
        for pid in our_qemus():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        while time.monotonic() < deadline and not list(work.glob("vm_second_*/job0.fio")):
            seen.update(our_qemus())
            time.sleep(0.05)

    killer = threading.Thread(target=kill_qemu_inside_the_first_point)
    killer.start()
    try:
        code = main(["run", str(path), "--db", str(db), "--workdir", str(work)])
    finally:
        killer.join(timeout=150)
    assert len(killed) == 1, "no QEMU was running during the first point"
    assert code == 1
    with Store(db, readonly=True) as s:
        runs = {r["workload"]: r for r in s.runs("faults")}
    first, second = runs["first"], runs["second"]
    assert first["status"] == "failed"
    assert first["error"].startswith(
        f"QEMU for vmio-0 (pid {killed[0]}) exited (killed by signal 9) during the point"
    ), first["error"]
    assert "console" in (first["log"] or "") and "VMIO-READY" in first["log"]  # the tail of its console
    assert second["status"] == "done", second["error"]
    assert seen - set(killed), "the second point did not boot a QEMU of its own"
    time.sleep(0.5)
    assert our_qemus() == []


def _ceph(conf: Path, *args: str) -> str:
    argv = ["ceph", "-c", str(conf), "--connect-timeout", "20", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout


def _ceph_json(conf: Path, *args: str) -> dict:
    """The cluster's own account (``ceph ... --format json``), asked by the test, not through vmio."""
    return json.loads(_ceph(conf, *args, "--format", "json"))


def _our_fio(conf: Path, top: bool = False) -> list[int]:
    """fio processes of this test run whose environment points at ``conf`` (fio's rbd engine on it); with
    ``top`` only those vmio started (not the job processes a fio forks)."""
    needle = f"CEPH_CONF={conf}".encode()
    out = []
    for pid, _ in leftover_processes(os.environ[SESSION_MARK]):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if Path(f"/proc/{pid}/comm").read_text().strip() != "fio":
                continue
            if needle not in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                continue
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if not top or Path(f"/proc/{ppid}/comm").read_text().strip() != "fio":
                out.append(pid)
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_active_clean(conf: Path, deadline_s: float) -> dict:
    deadline = time.monotonic() + deadline_s
    status: dict = {}
    while time.monotonic() < deadline:
        with contextlib.suppress(subprocess.SubprocessError, ValueError):
            status = _ceph_json(conf, "-s")
            pgmap = status["pgmap"]
            osdmap = status["osdmap"].get("osdmap", status["osdmap"])
            states = {s["state_name"]: s["count"] for s in pgmap.get("pgs_by_state", [])}
            if (
                status["health"]["status"] == "HEALTH_OK"
                and osdmap["num_up_osds"] == osdmap["num_osds"]
                and states == {"active+clean": pgmap["num_pgs"]}
            ):
                return status
        time.sleep(2)
    raise AssertionError(f"the cluster is not HEALTH_OK and active+clean after {deadline_s:g} s: {status}")


@pytest.mark.ceph
@pytest.mark.slow
@needs_tools(*CEPH_TOOLS)
def test_an_osd_killed_mid_profile_is_recorded_and_the_profile_completes(
    live_cluster: cluster.ClusterRef, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL to osd.1 while the profile's second block size runs (3 copies, min_size 2): fio's I/O goes on
    degraded, the profile completes, and the points after the kill say osd.1 was down, as the cluster's own
    map says; the OSD is started again and the cluster left HEALTH_OK, active+clean for later tests."""
    ref, victim = live_cluster, 1
    layout = cluster.layout_of(ref)
    osd_pid = int(layout.pid_file(f"osd.{victim}").read_text())
    assert _alive(osd_pid) and _ceph_json(ref.conf, "health")["status"] == "HEALTH_OK"
    kill: dict[str, object] = {}

    def kill_the_osd_inside_the_second_point() -> None:
        fios: list[int] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(fios) < 2:
            fios += [pid for pid in _our_fio(ref.conf, top=True) if pid not in fios]  # one per point
            time.sleep(0.05)
        if len(fios) < 2:
            return
        time.sleep(1.5)  # fio is past its ramp, measuring
        os.kill(osd_pid, signal.SIGKILL)
        kill.update(at=time.monotonic(), fio=fios[1], fio_alive=_alive(fios[1]))

    out_file = tmp_path / "profile.json"
    killer = threading.Thread(target=kill_the_osd_inside_the_second_point)
    killer.start()
    try:
        code = main(["dstore", "profile", "--dir", str(ref.root), "--bs", "4k,8k,16k", "--runtime", "3s",
                     "--ramp", "500ms", "-o", str(out_file)])  # fmt: skip
        killer.join(timeout=150)
        assert kill.get("fio_alive") is True, (
            f"osd.{victim} was not killed while the second point ran: {kill}"
        )
        # the cluster's own account right after the profile, before anything restarts the OSD
        dump = _ceph_json(ref.conf, "osd", "dump")
        status = _ceph_json(ref.conf, "-s")
        printed = capsys.readouterr()
        assert code == 0, printed.err
        assert not _alive(osd_pid)
        assert {o["osd"]: o["up"] for o in dump["osds"]} == {0: 1, 1: 0, 2: 1}
        osdmap = status["osdmap"].get("osdmap", status["osdmap"])  # nested before Pacific
        assert osdmap["num_up_osds"] == 2 and status["health"]["status"] == "HEALTH_WARN"
        degraded = sum(s["count"] for s in status["pgmap"]["pgs_by_state"] if "degraded" in s["state_name"])
        assert degraded > 0  # three copies, one gone: PGs serve degraded with min_size 2
        points = json.loads(out_file.read_text())["points"]
        assert [p["bs"] for p in points] == [4096, 8192, 16384]
        before, during, after = points
        assert before["osds_down"] == [] and before["health_after"] == "HEALTH_OK"
        assert during["osds_down"] == after["osds_down"] == [victim]
        assert after["health_after"] == status["health"]["status"]
        # the map epoch the profile last read is the mon's own (nothing changed the map since)
        assert after["osdmap_epochs"][1] == dump["epoch"] and before["osdmap_epochs"][1] < dump["epoch"]
        assert all(p["iops"] > 0 for p in points)  # I/O went on (fio would have failed the profile otherwise)
        lines = {
            line.split()[0]: line
            for line in printed.out.splitlines()
            if line.split()[:1] in (["4k"], ["8k"], ["16k"])
        }
        assert "down" not in lines["4k"]
        assert f"osd.{victim} down during the point" in lines["8k"] and f"osd.{victim} down" in lines["16k"]
        assert f"warning: osd.{victim} down while 8k, 16k ran" in printed.err
        assert _our_fio(ref.conf) == []  # no fio outlives the profile
    finally:
        killer.join(timeout=150)
        with recovery_unpaced(ref.conf):  # while the OSD catches up
            if (
                not _alive(osd_pid)
                and daemons.owned_pid(layout.pid_file(f"osd.{victim}"), layout.conf) is None
            ):
                daemons.start(Runner(), layout, "osd", str(victim))
            _wait_active_clean(ref.conf, 180)
    # the cluster's daemons are exactly those of its pid files: the restarted OSD, none orphaned
    live = daemons.running(layout.run_dir, layout.conf)
    assert sorted(live) == ["mgr.x", "mon.a", "osd.0", "osd.1", "osd.2"] and osd_pid not in live.values()
    assert sorted(daemons.cluster_pids(layout.conf)) == sorted(live.values())
