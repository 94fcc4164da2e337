"""Shared fixtures: real fio, real loop devices, real stores, at small scale."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.dstore import cluster
from vmio.store import Store

# the shared real traces: beside the repository (its parent folder's shared/traces), or VMIO_TRACES
TRACES = Path(os.environ.get("VMIO_TRACES") or Path(__file__).resolve().parents[2] / "shared" / "traces")
CLOUDPHYSICS_SAMPLE = TRACES / "cloudphysics_vscsi_sample.csv"


CEPH_TOOLS = ("ceph-mon", "ceph-osd", "ceph-mgr", "ceph", "rbd", "monmaptool", "fio")


def needs_tools(*tools: str) -> pytest.MarkDecorator:
    """Skip where any of ``tools`` is not installed (``make test`` installs them all)."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    return pytest.mark.skipif(
        bool(missing), reason=f"needs {', '.join(missing)} (scripts/setup-system.sh full)"
    )


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"needs {tool}, which is not installed (make test installs it)")


@pytest.fixture
def fio() -> str:
    need("fio")
    return "fio"


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(":memory:") as s:
        yield s


@contextlib.contextmanager
def disk_folder() -> Iterator[Path]:
    """A folder on a real disk (not tmpfs), so O_DIRECT works; removed after (for any fixture scope)."""
    base = Path(os.environ.get("VMIO_TEST_SCRATCH", "/var/tmp"))
    base.mkdir(parents=True, exist_ok=True)
    path = Path(subprocess.check_output(["mktemp", "-d", str(base / "vmio-test.XXXXXX")], text=True).strip())
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder on a real disk (not tmpfs), so O_DIRECT works."""
    with disk_folder() as path:
        yield path


def make_loop(image: Path, size: int) -> str:
    with open(image, "wb") as f:
        f.truncate(size)
    return subprocess.check_output(["losetup", "-f", "--show", str(image)], text=True, timeout=30).strip()


@pytest.fixture
def loopdev(scratch: Path) -> Iterator[str]:
    """A blank 64 MiB loop device over a file in ``scratch``."""
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    need("losetup")
    dev = make_loop(scratch / "loop.img", 64 << 20)
    yield dev
    subprocess.run(["losetup", "-d", dev], check=False, timeout=30)


# -- any order for the rest; Ceph tests last, together, as written -----------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-randomly (dev extra) shuffles the tests before this runs (``--randomly-seed=N`` replays an
    order, ``-p no:randomly`` keeps the written one). Tests marked ``ceph`` share a real cluster per
    module whose state one test may leave for the next (an OSD stopped and restarted): they run after the others, together, in the order they are written."""
    ceph = [item for item in items if item.get_closest_marker("ceph")]
    if not ceph:
        return
    written = {item.nodeid: i for i, item in enumerate(sorted(ceph, key=_written_order))}
    items[:] = [item for item in items if not item.get_closest_marker("ceph")] + sorted(
        ceph, key=lambda item: written[item.nodeid]
    )


def _written_order(item: pytest.Item) -> tuple[str, int, str]:
    path, line, name = item.location
    return path, line if line is not None else -1, name


# -- no fio, QEMU or Ceph process of the test run outlives it ------------------------------------------------

SESSION_MARK = "VMIO_TEST_SESSION"
TOOLS = ("fio", "qemu-system", "ceph-", "rados", "rbd", "blktrace")


def pytest_sessionstart(session: pytest.Session) -> None:
    # children inherit the environment, so the mark tells this run's processes from other users' on the host
    os.environ[SESSION_MARK] = f"{os.getpid()}-{os.urandom(6).hex()}"


def leftover_processes(mark: str, proc: Path = Path("/proc")) -> list[tuple[int, str]]:
    """(pid, command line) of every fio/QEMU/Ceph process whose environment carries ``mark``."""
    found = []
    needle = f"{SESSION_MARK}={mark}".encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            if not comm.startswith(TOOLS):
                continue
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # exited meanwhile, or not ours to read
        found.append((int(entry.name), cmdline))
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import signal
    import time

    mark = os.environ.get(SESSION_MARK)
    if not mark:
        return
    deadline = time.monotonic() + 5  # a process being torn down may take a moment to go
    left = leftover_processes(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftover_processes(mark)
    if not left:
        return
    for pid, _ in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)  # ours (it carries this run's mark): leave the machine clean
    listing = "\n".join(f"  {pid} {cmd[:200]}" for pid, cmd in left)
    print(f"\nvmio tests left {len(left)} process(es) running (now killed):\n{listing}")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- one local Ceph cluster for every test that needs one (Ceph tests run last, together) -------------------


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
        # `dstore down` returns only when every daemon of the cluster has exited, and leaves no file
        assert ceph_processes(str(root))
        assert main(["dstore", "down", "--dir", str(root)]) == 0
        assert ceph_processes(str(root)) == []
        assert not root.exists()
