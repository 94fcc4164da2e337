"""The supervised runner: a timeout always, nothing left behind unless a daemon is the point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vmio.errors import ToolError
from vmio.system.process import Runner


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
