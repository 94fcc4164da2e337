"""Shared fixtures: real fio, real loop devices, real stores, at small scale."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time
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


def only_this_thread(seconds: float = 20.0) -> None:
    """Wait for the threads an earlier test of this worker left ending (a campaign's progress or sampler
    thread, daemons that end on their own): vmio forks a helper only from a single-threaded process
    (``system.forked.may_fork``); fail naming any still running after ``seconds``."""
    end = time.monotonic() + seconds
    while threading.active_count() > 1 and time.monotonic() < end:
        time.sleep(0.05)
    assert threading.active_count() == 1, f"threads still running: {threading.enumerate()}"


STORES = Path(__file__).parent / "data" / "stores"


def store_from_sql(name: str, db: Path) -> Path:
    """A store file ``db`` holding ``tests/data/stores/<name>`` as it was written (a fixture of an older schema:
    vmio migrates it when it opens it)."""
    with contextlib.closing(sqlite3.connect(db)) as c:
        c.executescript((STORES / name).read_text())
    return db


def make_loop(image: Path, size: int) -> str:
    """A loop device over a new blank file, marked as vmio's scratch file (``files.MARK``): a loop device
    is judged by its backing file, and this one holds nothing."""
    with open(image, "wb") as f:
        f.truncate(size)
        os.setxattr(f.fileno(), "user.vmio.scratch", b"vmio")
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


@pytest.hookimpl(tryfirst=True)  # after pytest-randomly's shuffle (a wrapper), before the other plugins
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-randomly (dev extra) shuffles the tests before this runs (``--randomly-seed=N`` replays an
    order, ``-p no:randomly`` keeps the written one). Tests marked ``ceph`` share a real cluster per
    module whose state one test may leave for the next (an OSD stopped and restarted): they run after the others, together, in the order they are written.
    In a pytest-xdist worker of ``--dist loadgroup`` (``make test``) each test also gets its group
    (``shared_groups``: the Ceph tests on the suite's cluster are one, still in the order written; those
    with a cluster of their own another), left for the controller's
    scheduler (``pytest_xdist_make_scheduler``), and the groups holding a slow test come first."""
    ceph = [item for item in items if item.get_closest_marker("ceph")]
    if ceph:
        written = {item.nodeid: i for i, item in enumerate(sorted(ceph, key=_written_order))}
        items[:] = [item for item in items if not item.get_closest_marker("ceph")] + sorted(
            ceph, key=lambda item: written[item.nodeid]
        )
    target = os.environ.get(GROUPS)
    if target and getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        groups = shared_groups(items)
        group = {item.nodeid: groups.get(item.nodeid, item.nodeid) for item in items}
        alone = {group[item.nodeid] for item in items if item.get_closest_marker("alone")}
        # every test marked alone and every group holding one (its shared fixture is made in whichever of its
        # tests runs first, so all of them are alone) make one group, the first handed out: one worker runs
        # them back to back, keeping the other's tests out throughout (``pytest_runtest_protocol``), and the
        # other worker waits for them once, not once for each
        for item in items:
            if group[item.nodeid] in alone:
                group[item.nodeid] = groups[item.nodeid] = ALONE
                if not item.get_closest_marker("alone"):
                    item.add_marker(pytest.mark.alone)
        slow = {group[item.nodeid] for item in items if item.get_closest_marker("slow")}
        size = collections.Counter(group.values())
        # then the longest (groups holding a slow test, the largest of them first; the scheduler keeps this
        # order), so that no long test starts last beside an idle worker
        items.sort(
            key=lambda item: (
                group[item.nodeid] != ALONE,
                group[item.nodeid] not in slow,
                -size[group[item.nodeid]],
            )
        )
        mine = f"{target}.{os.getpid()}"  # every worker writes the same map; each one whole, then renamed
        Path(mine).write_text(json.dumps(groups))
        os.replace(mine, target)


# the group of every test marked alone
ALONE = "alone"

# where the workers leave each test's group for the controller (xdist's own xdist_group marks need the test's
# nodeid to change, which pytest 9 no longer allows)
GROUPS = "VMIO_TEST_GROUPS"


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("dist", "no") == "loadgroup" and not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tempfile.mkdtemp(prefix="vmio-test-groups-")
        os.environ[GROUPS] = str(Path(folder) / "groups.json")  # the workers, started later, inherit it
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup``'s scheduler, with the groups of ``shared_groups``: a group's tests go to one
    worker together, one group or test at a time to whichever worker is nearly out of work, in the workers'
    order (slow groups first)."""
    if config.getoption("dist", "no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedGroups(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # every worker has written it before it reports its collection
                self.groups = json.loads(Path(os.environ[GROUPS]).read_text())
            return self.groups.get(nodeid, nodeid)

    config.option.loadscopereorder = False
    return SharedGroups(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """In ``make test``'s workers a test marked ``alone`` (it measures a CPU share that a test beside it would
    take) runs with no test of the other worker beside it: it waits for the one running there to end, and the
    next one there waits for it; consecutive ``alone`` tests (their group) keep the other worker out from the
    first to the last. Every other test runs beside any other. A gate taken before the shared lock keeps a
    waiting ``alone`` test from being passed over by the tests that keep coming."""
    with _timeline(item):
        return (yield from _beside_or_alone(item, nextitem))


def _beside_or_alone(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    shared = os.environ.get(GROUPS)
    if not shared or not os.environ.get("PYTEST_XDIST_WORKER"):
        return (yield)
    import fcntl

    alone = item.get_closest_marker("alone") is not None
    waiting = time.monotonic()
    began = Path(f"{shared}.alone-began")
    if not alone and not _started:
        _started.append(item.nodeid)
        _first_after_alone(item.session, began)
    if _held:  # the previous test, alone, kept both locked for this one
        locks = _held.pop()
    else:
        locks = contextlib.ExitStack()
        gate, beside = (
            os.open(f"{shared}.{name}", os.O_WRONLY | os.O_CREAT, 0o600) for name in ("gate", "beside")
        )
        locks.callback(os.close, gate)
        locks.callback(os.close, beside)
        fcntl.flock(gate, fcntl.LOCK_EX)
        locks.callback(fcntl.flock, gate, fcntl.LOCK_UN)
        fcntl.flock(beside, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        locks.callback(fcntl.flock, beside, fcntl.LOCK_UN)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
    if alone:
        began.touch()
    _waited[item.nodeid] = time.monotonic() - waiting
    try:
        return (yield)
    finally:
        if alone and nextitem is not None and nextitem.get_closest_marker("alone"):
            _held.append(locks)  # alone tests back to back: the other worker waits for them once
        else:
            locks.close()


def _first_after_alone(session: pytest.Session, began: Path, deadline: float = 300.0) -> None:
    """A worker's first test waits for the alone group to begin (handed out first, to the other worker: both
    start together) when the run holds one: else the first alone test would wait for it to end, one worker
    idle, then run while the other waits (at the suite's start, the Ceph group's first test with its cluster:
    30-50 s of one worker lost). Past ``deadline`` (the alone worker stuck) it goes on."""
    if not any(item.get_closest_marker("alone") for item in session.items):
        return
    end = time.monotonic() + deadline
    while not began.exists() and time.monotonic() < end:
        time.sleep(0.1)


# the first test this worker ran that was not alone (a worker's first test waits for the alone group to begin)
_started: list[str] = []
# the gate and the shared lock as an alone test left them, held for the next test of its worker (also alone)
_held: list[contextlib.ExitStack] = []
# seconds each test of this worker waited for the gate and the shared lock (the other worker's alone tests)
_waited: dict[str, float] = {}


# -- where the suite's time goes: each test's wall and CPU time, by worker ----------------------------------

# a file to which every worker appends one JSON line a test (``VMIO_TEST_TIMELINE=path make test``)
TIMELINE = "VMIO_TEST_TIMELINE"


def _cpu_seconds() -> float:
    """User + system CPU of this worker and of its children that have ended (fio, QEMU, Ceph, once reaped)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _running_cpu() -> dict[int, float]:
    """pid -> CPU seconds so far of every fio, QEMU and Ceph process of this worker still running (a session's
    cluster or guest, a daemon no longer its child: ``_cpu_seconds`` never sees those)."""
    mark = os.environ.get(SESSION_MARK)
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid, _ in leftover_processes(mark) if mark else []:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return out


@contextlib.contextmanager
def _timeline(item: pytest.Item) -> Iterator[None]:
    """With ``VMIO_TEST_TIMELINE`` set, one line for the test: its start and end (wall clock), its wait for
    the other worker's alone tests, its setup, call and teardown seconds and the CPU used meanwhile by its
    worker, the children it reaped and its fio, QEMU and Ceph processes still running (the CPU of a
    daemon that was not its child and ended within the test is missed); ``scripts/suite_timeline.py``
    reads the lines."""
    path = os.environ.get(TIMELINE)
    if not path:
        yield
        return
    start, cpu, running = time.time(), _cpu_seconds(), _running_cpu()
    try:
        yield
    finally:
        end = time.time()  # before the look at /proc below (tens of ms on a busy host)
        after = _running_cpu()
        beside = sum(t - running.get(pid, 0.0) for pid, t in after.items())
        line = {
            "test": item.nodeid,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "start": round(start, 3),
            "end": round(end, 3),
            "cpu": round(_cpu_seconds() - cpu + beside, 3),
            "waited": round(_waited.pop(item.nodeid, 0.0), 3),
            "alone": item.get_closest_marker("alone") is not None,
            **{phase: round(_phases.pop((item.nodeid, phase), 0.0), 3) for phase in PHASES},
        }
        with open(path, "a") as f:  # one short write a line: the workers' lines do not interleave
            f.write(json.dumps(line) + "\n")


PHASES = ("setup", "call", "teardown")
_phases: dict[tuple[str, str], float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get(TIMELINE):
        _phases[(report.nodeid, report.when)] = report.duration


def _written_order(item: pytest.Item) -> tuple[str, int, str]:
    path, line, name = item.location
    return path, line if line is not None else -1, name


def shared_groups(items: list[pytest.Item]) -> dict[str, str]:
    """nodeid -> the xdist group of each test that shares something with another, so that a worker runs
    all of them: every test marked ``ceph`` that uses the suite's cluster (``live_cluster``, in written
    order: one test may leave its state for the next), every other test marked ``ceph`` (each starts a
    cluster or shaped network of its own: one at a time, since ``dstore up --network netns`` sweeps what
    another left, but beside the suite's cluster, so that they are not waited for in its long group), and
    the tests that use one module- or session-scoped fixture of this folder (built once, by one worker: a
    reproduction, a campaign, libvirtd), named by the ``uses`` marker where a test asks for it by name
    (``request.getfixturevalue``). Tests in no group are handed out one by one."""
    here = Path(__file__).parent
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    shared: dict[str, list[str]] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        keys = []
        if item.get_closest_marker("ceph"):  # the suite's cluster, or a test's own (see above)
            keys.append("ceph" if "live_cluster" in item.fixturenames else "ceph-own")
        keys += [f"{module}::{name}" for mark in item.iter_markers("uses") for name in mark.args]
        infos = getattr(item, "_fixtureinfo", None)
        for name, found in (infos.name2fixturedefs if infos else {}).items():
            fixture = found[-1]
            code = getattr(fixture.func, "__code__", None)
            if (
                fixture.scope in ("module", "package", "session")
                and code
                and here in Path(code.co_filename).parents
            ):
                keys.append(f"{fixture.baseid or module}::{name}")
        if keys:
            shared[item.nodeid] = keys
            for key in keys[1:]:
                parent[find(key)] = find(keys[0])
    return {
        nodeid: "ceph" if find(keys[0]) == find("ceph") else find(keys[0]) for nodeid, keys in shared.items()
    }


# -- no fio, QEMU or Ceph process of the test run outlives it ------------------------------------------------

SESSION_MARK = "VMIO_TEST_SESSION"
TOOLS = ("fio", "qemu-system", "ceph-", "rados", "rbd", "blktrace")


def pytest_sessionstart(session: pytest.Session) -> None:
    # children inherit the environment, so the mark tells this run's processes from other users' on the host;
    # a pytest-xdist worker inherits its controller's mark and adds its own name (its tests count only the
    # processes of their own worker; the controller checks the whole run's at the end)
    worker, run = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(SESSION_MARK)
    if worker and run:
        os.environ[SESSION_MARK] = f"{run}-{worker}"
    else:
        os.environ[SESSION_MARK] = f"{os.getpid()}-{os.urandom(6).hex()}"


def leftover_processes(mark: str, proc: Path = Path("/proc"), workers: bool = False) -> list[tuple[int, str]]:
    """(pid, command line) of every fio/QEMU/Ceph process whose environment carries ``mark`` (with
    ``workers``, also the marks of the pytest-xdist workers of the run that ``mark`` names)."""
    found = []
    needle = f"{SESSION_MARK}={mark}".encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            if not comm.startswith(TOOLS):
                continue
            env = (entry / "environ").read_bytes().split(b"\0")
            if needle not in env and not (workers and any(v.startswith(needle + b"-") for v in env)):
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
    if not mark or os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker's processes are its controller's to find, after every worker has ended
    deadline = time.monotonic() + 5  # a process being torn down may take a moment to go
    left = leftover_processes(mark, workers=True)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftover_processes(mark, workers=True)
    if not left:
        return
    for pid, _ in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)  # ours (it carries this run's mark): leave the machine clean
    listing = "\n".join(f"  {pid} {cmd[:200]}" for pid, cmd in left)
    print(f"\nvmio tests left {len(left)} process(es) running (now killed):\n{listing}")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- Debian's libvirtd, started once for the test run -------------------------------------------------------

LIBVIRT_URI = "qemu:///system"
LIBVIRT_TOOLS = ("/usr/sbin/libvirtd", "/usr/sbin/virtlogd", "virsh", "/usr/bin/qemu-system-x86_64")


def virsh(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["virsh", "-c", LIBVIRT_URI, *args], capture_output=True, text=True, timeout=timeout
    )


def _libvirt_answers() -> bool:
    try:
        return virsh("version", timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


@contextlib.contextmanager
def _kvm_for_libvirt_qemu() -> Iterator[None]:
    """Debian's udev gives /dev/kvm to group kvm (mode 0660); a host without udev may leave it root's
    alone, and then libvirt 9.0 finds "KVM was enabled when probing, but it is not available now" and
    probes QEMU again (~50 s) on every call. Debian's setting for the run (domains stay TCG), put back after."""
    kvm = Path("/dev/kvm")
    try:
        info = kvm.stat()
    except OSError:
        yield
        return
    import grp
    import stat as st

    group = grp.getgrnam("kvm").gr_gid if "kvm" in {g.gr_name for g in grp.getgrall()} else None
    if group is None or (info.st_gid == group and info.st_mode & 0o060 == 0o060):
        yield
        return
    os.chown(kvm, -1, group)
    os.chmod(kvm, st.S_IMODE(info.st_mode) | 0o060)
    try:
        yield
    finally:
        now = kvm.stat()
        if now.st_gid == group:  # unless someone else changed it meanwhile
            os.chown(kvm, -1, info.st_gid)
            os.chmod(kvm, st.S_IMODE(info.st_mode))


@pytest.fixture(scope="session")
def libvirtd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """libvirtd and virtlogd (QEMU's console log goes through it), started once for the run unless already
    running; the ones started here are stopped at the end. Gives the URI."""
    import signal
    import time

    for tool in LIBVIRT_TOOLS:
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (libvirt-daemon-system, libvirt-daemon-driver-qemu, qemu-system-x86)")
    if os.geteuid() != 0:
        pytest.skip("starts the system libvirtd: needs root")
    folder = tmp_path_factory.mktemp("libvirtd")
    started: list[int] = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(_kvm_for_libvirt_qemu())
        for daemon in ("virtlogd", "libvirtd"):
            if daemon == "virtlogd" and Path("/run/libvirt/virtlogd-sock").exists():
                continue
            if daemon == "libvirtd" and _libvirt_answers():
                continue
            pidfile = folder / f"{daemon}.pid"
            subprocess.run(
                [f"/usr/sbin/{daemon}", "--daemon", "--pid-file", str(pidfile)], check=True, timeout=30
            )
            for _ in range(100):
                if pidfile.exists() and pidfile.read_text().strip():
                    break
                time.sleep(0.1)
            started.append(int(pidfile.read_text()))
        for _ in range(100):
            if _libvirt_answers():
                break
            time.sleep(0.3)
        else:
            pytest.fail("libvirtd started but virsh gets no answer")
        try:
            yield LIBVIRT_URI
        finally:
            for pid in reversed(started):
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.1)


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


@contextlib.contextmanager
def recovery_unpaced(conf: Path) -> Iterator[None]:
    """Ceph's recovery unpaced while the block runs, then the cluster's default again: the suite's OSDs are
    files on a disk the kernel calls rotational, so they count as "hdd" and wait 0.1 s between recovery ops
    (``osd_recovery_sleep_hdd``), a pace that protects clients of a real disk and that no test's figure
    reads. A returning OSD catches up in 18-20 s instead of 58-86 s (``test_dstore_failure.py``'s outage, by
    turns on one cluster)."""
    ceph = ["ceph", "-c", str(conf), "--connect-timeout", "20", "config"]
    subprocess.run([*ceph, "set", "osd", "osd_recovery_sleep_hdd", "0"], check=True, timeout=60)
    try:
        yield
    finally:
        subprocess.run([*ceph, "rm", "osd", "osd_recovery_sleep_hdd"], check=True, timeout=60)


DSTORE_GOLDEN_JSON = Path(__file__).parent / "data" / "dstore" / "profile-before-43.json"


def json_shape(value: object) -> object:
    """A JSON document with every figure replaced by its kind: keys (in order), list lengths, nulls kept (the
    golden of a document whose figures differ run to run)."""
    if isinstance(value, dict):
        return {k: json_shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_shape(v) for v in value]
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, int | float) else type(value).__name__
