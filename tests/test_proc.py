"""The supervised runner: a timeout always, nothing left behind unless a daemon is the point."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from vmio.errors import FioError, ToolError
from vmio.fio import run as fiorun
from vmio.system.process import Runner, Supervised

from conftest import need


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end and alive(pid):
        time.sleep(0.05)
    return not alive(pid)


def test_failure_carries_argv_code_and_output() -> None:
    with pytest.raises(ToolError) as info:
        Runner().run(["sh", "-c", "echo oops >&2; exit 3"], timeout=10)
    assert info.value.returncode == 3 and info.value.argv[0] == "sh" and "oops" in str(info.value)


def test_missing_program() -> None:
    with pytest.raises(ToolError, match="cannot start 'no-such-program'"):
        Runner().run(["no-such-program"], timeout=10)


def test_timeout_kills_descendants_even_in_new_sessions(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & wait"
    with pytest.raises(ToolError, match="did not finish within 1 s"):
        Runner().run(["sh", "-c", script], timeout=1)
    assert wait_gone(int(pidfile.read_text()))


def test_a_daemon_is_kept_when_that_is_the_point(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' > /dev/null 2>&1 < /dev/null &"
    Runner().run(["sh", "-c", script], timeout=10, leaves_daemon=True)
    for _ in range(50):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    try:
        time.sleep(0.3)
        assert alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_children_die_with_a_killed_parent(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = (
        "from vmio.system.process import Runner\n"
        f"Runner().run(['sh', '-c', \"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & wait\"], timeout=600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.05)
    child = int(pidfile.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    assert wait_gone(child)


def server_jobs(server: int, port: int) -> list[int]:
    """The job processes of a fio server on ``port``: the server forks a process per connection, which
    forks the jobs (fio may reparent the connection's process to init once its client is gone)."""
    mark = f"--server=ip:127.0.0.1,{port}".encode()
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            if mark in (entry / "cmdline").read_bytes().split(b"\0") and alive(int(entry.name)):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return sorted(pid for pid, ppid in parents.items() if ppid in parents and ppid != server)


def job_reads(pids: list[int]) -> int:
    """Bytes the processes read through syscalls (``rchar``)."""
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/io").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total


@dataclass(frozen=True)
class FioServer:
    """A fio server on 127.0.0.1 and a long job file (120 s of 4k random reads) for its clients."""

    process: subprocess.Popen[bytes]
    port: int
    job: Path

    def jobs(self) -> list[int]:
        return server_jobs(self.process.pid, self.port)


@pytest.fixture
def fio_server(tmp_path: Path) -> Iterator[FioServer]:
    need("fio")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    process = subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{port}"], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    (tmp_path / "f.img").write_bytes(b"\0" * (4 << 20))  # a read-only job (fio --readonly) lays out no file
    job = tmp_path / "long.fio"
    job.write_text(f"[j]\nioengine=psync\nrw=randread\nbs=4k\nsize=4M\nfilename={tmp_path}/f.img\n"
                   "runtime=120\ntime_based=1\n")  # fmt: skip
    server = FioServer(process, port, job)
    try:
        yield server
    finally:
        process.terminate()
        process.wait(timeout=20)
        for pid in server.jobs():
            os.kill(pid, signal.SIGKILL)


def gone_within(server: FioServer, seconds: float) -> bool:
    """True once the server has no job left (waiting up to ``seconds``)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and server.jobs():
        time.sleep(0.2)
    return server.jobs() == []


@pytest.mark.fio
@pytest.mark.parametrize("how", ["interrupt", "stop"])
def test_an_interrupted_fio_client_ends_its_servers_job(
    fio_server: FioServer, tmp_path: Path, how: str
) -> None:
    """A fio client interrupted through the supervisor tells its server to end the job, which then stops
    within seconds; a killed client (``stop``) leaves the server's job running until its runtime ends,
    which is why loads of guests are interrupted."""
    client = None
    for _ in range(100):  # until the server listens and has forked the job
        if client is None or client.popen.poll() is not None:
            if client is not None:
                client.stop()  # it did not reach the server yet
            client = Supervised(["fio", f"--client=ip:127.0.0.1,{fio_server.port}", str(fio_server.job)],
                                cwd=str(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        if job_reads(fio_server.jobs()) > 1 << 20:  # the job runs (not only set up)
            break
        time.sleep(0.2)
    assert client is not None and job_reads(fio_server.jobs()) > 1 << 20, "no job ran"
    getattr(client, how)(wait=20.0)
    # killed: still running 5 s on
    assert gone_within(fio_server, 30 if how == "interrupt" else 5) is (how == "interrupt")


@pytest.mark.fio
def test_a_fio_client_past_its_time_ends_its_servers_job(fio_server: FioServer, tmp_path: Path) -> None:
    """A point's fio client that outlives its time limit is interrupted before it is killed, so the job it
    started on a server ends with it instead of running on into the next point."""
    for _ in range(100):  # until the server listens
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", fio_server.port)) == 0:
                break
        time.sleep(0.1)
    endpoint = fiorun.Endpoint(f"ip:127.0.0.1:{fio_server.port}", fio_server.job)
    # 4 s: the client connects to a server already listening, and its job reads the cached file at once
    with pytest.raises(FioError, match="did not finish within 4 s") as caught:
        fiorun.run([endpoint], timeout=4.0, runner=Runner(), cwd=tmp_path)
    # the interrupted client printed the job's figures: it ran, and was ended by the interrupt
    text = caught.value.output
    doc = json.loads(text[text.index("{") : text.rindex("}") + 1])
    assert doc["client_stats"][0]["read"]["io_bytes"] > 1 << 20
    assert gone_within(fio_server, 30)
