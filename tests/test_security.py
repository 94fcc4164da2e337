"""vmio beside unprivileged local users: each attack replayed as ``nobody``, the victim checked after."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vmio.advise.live_sample import Seams, diagnose_live
from vmio.cli import main
from vmio.dstore import cluster
from vmio.errors import ToolError
from vmio.guest.image import READY_MARKER
from vmio.qemu.running import Monitor, QemuProcess
from vmio.system import guard, rbdimage
from vmio.targets.remote import LocalFioServer

from qemu_support import needs_qemu

# Part 2: isolation ------------------------------------------------------------------------------------
# Nothing vmio starts is usable by another local user: guests' fio servers (a forwarded loopback port that
# only vmio's user may connect to), QMP/agent/console sockets (a 0700 folder), RBD images holding data,
# the throwaway Ceph cluster (cephx), diagnose --live's choice of QEMUs.

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
ATTACK_JOB = "[attack]\nfilename={path}\nrw=write\nbs=64k\nsize=64k\ndirect={direct}\nbuffer_pattern=0x5a\n"


def nobody_runs(argv: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=timeout, cwd="/")


def attack_fio(port: int, job: Path) -> subprocess.CompletedProcess[str]:
    """``nobody`` runs a write job on whatever fio server listens at ``127.0.0.1:port``."""
    return nobody_runs(["fio", f"--client=127.0.0.1,{port}", str(job)], timeout=40)


def job_file(folder: Path, path: str, direct: int = 1) -> Path:
    job = folder / "attack.fio"
    job.write_text(ATTACK_JOB.format(path=path, direct=direct))
    job.chmod(0o644)
    folder.chmod(0o755)
    return job


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (read from /proc)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, pp in parent.items() if pp == pid]
        found += kids
        todo += kids
    return found


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with_fds = Path(f"/proc/{pid}/fd")
    for fd in with_fds.iterdir() if with_fds.is_dir() else []:
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return inodes


def listening(pids: list[int]) -> tuple[set[int], set[str]]:
    """The TCP ports and unix socket paths these processes listen on (/proc/net/tcp*, /proc/net/unix)."""
    inodes = set().union(*(socket_inodes(p) for p in pids)) if pids else set()
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    paths = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 8 and cols[6] in inodes and cols[7].startswith("/"):
            paths.add(cols[7])
    return ports, paths


def qemu_disks(argv: list[str]) -> list[Path]:
    return [
        Path(part[len("filename=") :])
        for arg in argv
        for part in arg.split(",")
        if part.startswith("filename=") and Path(part[len("filename=") :]).is_file()
    ]


def ready_vms(timeout: float = 150.0, count: int = 1) -> list[int]:
    """Wait until ``count`` QEMUs this test started have guests whose fio server is up."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        vms = [p for p in descendants(os.getpid()) if "-kernel" in cmdline(p)]  # not a caps probe
        consoles = [
            Path(a.split("path=", 1)[1].split(",")[0]) for p in vms for a in cmdline(p) if "id=console" in a
        ]
        if len(vms) >= count and all(c.is_file() and READY_MARKER in c.read_text(errors="replace")
                                     for c in consoles):  # fmt: skip
            return vms
        time.sleep(0.5)
    raise AssertionError(f"no {count} ready VM(s) within {timeout:g} s")


def attack_running_vms(scratch: Path, count: int = 1) -> tuple[list[Path], dict[Path, str]]:
    """As ``nobody``: a write job against every TCP port the run's processes listen on, and a connect to
    every unix socket they hold; the backing images' digests taken before. Returns (disks, digests)."""
    vms = ready_vms(count=count)
    disks = [d for p in vms for d in qemu_disks(cmdline(p))]
    before = {d: digest(d) for d in disks}
    ports, paths = listening([*vms, *descendants(os.getpid())])
    assert ports, "the run's QEMUs listen on no TCP port"
    job = job_file(scratch, "/dev/vda")
    for port in sorted(ports):
        done = attack_fio(port, job)
        assert "attack: (groupid" not in done.stdout, f"nobody ran a job on port {port}:\n{done.stdout}"
    assert paths, "the run's QEMUs hold no unix socket"
    for path in sorted(paths):
        probe = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({path!r})"
        refused = nobody_runs(["/usr/bin/python3", "-c", probe])
        assert refused.returncode != 0 and "PermissionError" in refused.stderr, path
    assert {d: digest(d) for d in disks} == before  # while the VMs still run
    return disks, before


def run_in_thread(fn: Callable[[], int]) -> tuple[threading.Thread, list[int]]:
    code: list[int] = []
    thread = threading.Thread(target=lambda: code.append(fn()), daemon=True)
    thread.start()
    return thread, code


@pytest.fixture
def open_scratch() -> Iterator[Path]:
    """A folder ``nobody`` can read (for its job file)."""
    base = Path("/var/tmp") / f"vmio-sec-{os.getpid()}-{os.urandom(3).hex()}"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.fio
def test_a_guarded_fio_server_refuses_other_users_and_the_guard_can_fail(
    open_scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = open_scratch / "victim.bin"
    victim.write_bytes(b"\0" * (64 << 10))
    victim.chmod(0o644)  # root's file; nobody cannot write it itself
    job = job_file(open_scratch, str(victim), direct=0)
    with LocalFioServer() as server:
        done = attack_fio(server.port, job)
    assert done.returncode != 0 and victim.read_bytes() == b"\0" * (64 << 10), done.stdout
    monkeypatch.setattr(guard.PortGuard, "add", lambda self, port: None)  # the rule switched off
    with LocalFioServer() as server:
        done = attack_fio(server.port, job)
    assert done.returncode == 0 and victim.read_bytes() == b"\x5a" * (64 << 10), done.stdout + done.stderr


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_nobody_cannot_use_a_campaign_guests_fio_server(open_scratch: Path, tmp_path: Path) -> None:
    disk_dir = open_scratch / "disks"
    disk_dir.mkdir(mode=0o700)
    img = disk_dir / "backing.img"
    spec = tmp_path / "vm.toml"
    spec.write_text(
        '[campaign]\nname = "sec"\n\n[[target]]\nname = "vm"\nkind = "qemu"\n'
        f'backing = ["{img}"]\nsize = "32M"\n\n'
        '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\niodepth = 2\nruntime = "12s"\n'
    )
    thread, code = run_in_thread(lambda: main(["run", str(spec), "--db", str(tmp_path / "sec.db")]))
    try:
        disks, before = attack_running_vms(open_scratch)
        assert img in disks
    finally:
        thread.join(300)
    assert code == [0]
    assert {d: digest(d) for d in disks} == before  # the randread campaign and nobody wrote nothing


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_nobody_cannot_use_membals_load_run_guests(open_scratch: Path, tmp_path: Path) -> None:
    config = tmp_path / "live.toml"
    config.write_text(
        '[run]\npolicy = "equal"\ninterval = "1s"\nduration = "10s"\n\n'
        '[[vm]]\nfloor = "256M"\nload = "64M"\n\n[[vm]]\nfloor = "256M"\nload = "64M"\n'
    )
    argv = ["membal", "run", "--config", str(config), "--memory", "400M", "--db", str(tmp_path / "m.db")]
    thread, code = run_in_thread(lambda: main(argv))
    try:
        disks, before = attack_running_vms(open_scratch, count=2)
    finally:
        thread.join(300)
    assert code == [0] and disks


# Part 2: RBD images on the suite's Ceph cluster ------------------------------------------------------


def rbd(ref: cluster.ClusterRef, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["rbd", "-c", str(ref.conf), *args], capture_output=True, text=True, timeout=120, **kw
    )


def image_digest(ref: cluster.ClusterRef, image: str) -> str:
    out = subprocess.run(["rbd", "-c", str(ref.conf), "export", "--no-progress", f"{ref.pool}/{image}", "-"],
                         capture_output=True, timeout=120, check=True).stdout  # fmt: skip
    return hashlib.sha256(out).hexdigest()


def profile(ref: cluster.ClusterRef, *extra: str) -> list[str]:
    return ["dstore", "profile", "--conf", str(ref.conf), "--pool", ref.pool, "--bs", "4k",
            "--runtime", "1s", "--ramp", "0s", "--iodepth", "4", "--json", *extra]  # fmt: skip


@pytest.fixture
def rbd_victim(live_cluster: cluster.ClusterRef, tmp_path: Path) -> Iterator[str]:
    """An image with data a user imported (``rbd import``): no vmio mark, used space."""
    name = f"victim-{os.urandom(4).hex()}"
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(4 << 20))
    rbd(live_cluster, "import", "--no-progress", str(data), f"{live_cluster.pool}/{name}", check=True)
    yield name
    rbd(live_cluster, "rm", "--no-progress", f"{live_cluster.pool}/{name}")


@pytest.mark.ceph
def test_dstore_profile_refuses_an_image_holding_data_and_the_rule_can_fail(
    live_cluster: cluster.ClusterRef,
    rbd_victim: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = image_digest(live_cluster, rbd_victim)
    assert main(profile(live_cluster, "--image", rbd_victim)) == 3
    err = capsys.readouterr().err
    assert f"refusing to write to RBD image {live_cluster.pool}/{rbd_victim}" in err
    assert f"--destroy-data rbd:{live_cluster.pool}/{rbd_victim}" in err and "Traceback" not in err
    assert image_digest(live_cluster, rbd_victim) == before
    monkeypatch.setattr(rbdimage, "check_write", lambda *a, **k: None)  # the rule switched off
    assert main(profile(live_cluster, "--image", rbd_victim)) == 0
    assert image_digest(live_cluster, rbd_victim) != before


@pytest.mark.ceph
def test_dstore_profile_on_an_existing_cluster_uses_its_own_scratch_image_and_removes_it(
    live_cluster: cluster.ClusterRef, capsys: pytest.CaptureFixture[str]
) -> None:
    images = set(rbd(live_cluster, "ls", live_cluster.pool, check=True).stdout.split())
    assert main(profile(live_cluster)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["setup"]["image"].startswith("vmio-scratch-") and out["points"][0]["iops"] > 0
    assert set(rbd(live_cluster, "ls", live_cluster.pool, check=True).stdout.split()) == images


@pytest.mark.ceph
def test_rbd_targets_and_rbd_backings_refuse_an_image_holding_data(
    live_cluster: cluster.ClusterRef, rbd_victim: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = image_digest(live_cluster, rbd_victim)
    pool, conf = live_cluster.pool, live_cluster.conf
    workload = '[[workload]]\nname = "w"\nrw = "randwrite"\nbs = "4k"\nruntime = "1s"\n'
    targets = {
        "rbd": f'name = "r"\nkind = "rbd"\npool = "{pool}"\nimage = "{rbd_victim}"\nconf = "{conf}"\n',
        "backing": f'name = "q"\nkind = "qemu"\nbacking = ["rbd:{pool}/{rbd_victim}"]\nconf = "{conf}"\nsize = "4M"\n',
    }
    for kind, target in targets.items():
        spec = tmp_path / f"{kind}.toml"
        spec.write_text(f'[campaign]\nname = "{kind}"\n\n[[target]]\n{target}\n{workload}')
        assert main(["run", str(spec), "--db", str(tmp_path / f"{kind}.db")]) == 3, kind
        err = capsys.readouterr().err
        assert f"--destroy-data rbd:{pool}/{rbd_victim}" in err and "Traceback" not in err, err
    assert image_digest(live_cluster, rbd_victim) == before


# Part 2: the throwaway cluster --------------------------------------------------------------------------


@pytest.mark.ceph
def test_the_throwaway_cluster_refuses_a_client_without_its_key(
    live_cluster: cluster.ClusterRef, tmp_path: Path
) -> None:
    assert live_cluster.root is not None
    assert live_cluster.root.stat().st_mode & 0o777 == 0o700
    assert (live_cluster.root / "keyring").stat().st_mode & 0o777 == 0o600
    mon_host = next(
        line.split("=", 1)[1].strip()
        for line in live_cluster.conf.read_text().splitlines()
        if line.startswith("mon host")
    )
    keyed = subprocess.run(["ceph", "-c", str(live_cluster.conf), "--connect-timeout", "15", "osd", "ls"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert keyed.returncode == 0 and keyed.stdout.split(), keyed.stderr  # the port answers a keyed client
    for auth in ("cephx", "none"):  # no key; or no authentication at all
        conf = tmp_path / f"{auth}.conf"
        conf.write_text(f"[global]\nmon host = {mon_host}\nauth client required = {auth}\n"
                        f"keyring = {tmp_path}/none\n")  # fmt: skip
        conf.chmod(0o644)
        tmp_path.chmod(0o755)
        unkeyed = nobody_runs(["ceph", "-c", str(conf), "--connect-timeout", "10", "osd", "ls"], timeout=60)
        assert unkeyed.returncode != 0 and not unkeyed.stdout.split(), (auth, unkeyed.stdout)


def test_dstore_up_refuses_a_folder_another_user_owns_or_can_write(
    open_scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    theirs = open_scratch / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    shared = open_scratch / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    below = shared / "cluster"  # below a folder anyone can write (not sticky)
    for folder in (theirs, shared, below):
        assert main(["dstore", "up", "--dir", str(folder), "--osds", "1"]) == 3
        err = capsys.readouterr().err
        assert "refusing --dir" in err and "another user" in err and "Traceback" not in err
        assert not (folder / "ceph.conf").exists() and not below.exists()


def test_without_the_folder_rule_dstore_up_writes_into_another_users_folder(
    open_scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = open_scratch / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    written: list[bool] = []

    def stop_before_daemons(runner: object, layout: object, replicas: int, deadline: float) -> None:
        written.append((theirs / "ceph.conf").is_file())
        raise KeyboardInterrupt  # nothing started: `up` tears down what it wrote

    monkeypatch.setattr(cluster, "check_own_folder", lambda root: None)  # the rule switched off
    monkeypatch.setattr(cluster, "_bootstrap", stop_before_daemons)
    with pytest.raises(KeyboardInterrupt):
        cluster.up(theirs, osds=1)
    assert written == [True]  # the conf (and soon the keys) would have sat in nobody's folder


# Part 2: diagnose --live ---------------------------------------------------------------------------------


@pytest.fixture
def foreign_qemu(open_scratch: Path) -> Iterator[tuple[int, socket.socket]]:
    """A process of ``nobody`` named qemu-system-x86_64 whose command line names a QMP socket of its
    choosing; the socket listens (root's test holds it) to see whether vmio connects."""
    path = open_scratch / "chosen.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(4)
    listener.setblocking(False)
    proc = subprocess.Popen([*NOBODY, "bash", "-c", f'exec -a qemu-system-x86_64 /usr/bin/python3 -c "import time; time.sleep(60)" '
             f'-name evil -qmp "unix:{path},server=on,wait=off"'])  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while "qemu-system" not in " ".join(cmdline(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield proc.pid, listener
    finally:
        proc.kill()
        proc.wait(10)
        listener.close()


def connected(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def test_diagnose_live_contacts_no_qemu_of_another_user_unless_named(
    foreign_qemu: tuple[int, socket.socket],
) -> None:
    pid, listener = foreign_qemu
    asked: list[int] = []

    def record(proc: QemuProcess) -> Monitor:  # other QEMUs on this shared host are not disturbed
        asked.append(proc.pid)
        raise ToolError("not asked in this test")

    vms = diagnose_live(0.2, Seams(open_monitor=record))
    assert pid not in {vm.proc.pid for vm in vms} and pid not in asked and not connected(listener)
    named = diagnose_live(0.2, Seams(), pids=[pid])  # named with --pid: asked, over its QMP socket
    assert [vm.proc.pid for vm in named] == [pid] and connected(listener)
    trusting = Seams(open_monitor=record, trusted=frozenset({0, os.getuid(), 65534}))  # the rule off
    diagnose_live(0.2, trusting)
    assert pid in asked
