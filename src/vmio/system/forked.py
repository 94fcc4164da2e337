"""Work shared with a forked child on the second CPU (a report's figures, a big export's points).

``start`` forks a child that does its work and sends back the bytes it returns through a pipe; ``collect``
waits for them; ``end`` closes the pipe and reaps the child, killing it if it still runs. The child dies
with vmio (a parent-death SIGKILL), never returns into the caller, and runs none of this process' exit
handlers or buffer flushes. A child that fails or runs out of time sends nothing: the caller then does the
work itself, so what comes out is the same either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import threading
import time
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def may_fork() -> bool:
    """Two CPUs for this process, and a single thread (a lock another thread holds would stay held in
    the child)."""
    return len(os.sched_getaffinity(0)) >= 2 and threading.active_count() == 1


def start(work: Callable[[], bytes]) -> tuple[int, int]:
    """Start a child doing ``work``; return its pid and the reading end of the pipe its bytes come through."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child loads nothing
    parent = os.getpid()
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    code = 1
    try:  # the child: never returns, never runs the parent's exit handlers or flushes its buffers
        os.close(read)
        if prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0 and os.getppid() == parent:
            with os.fdopen(write, "wb") as out:
                out.write(work())
            code = 0
    finally:
        os._exit(code)


def collect(pid: int, pipe: int, timeout: float) -> bytes | None:
    """The bytes the child's work returned, or None when it failed or took more than ``timeout`` seconds."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0 and select.select([pipe], [], [], left)[0]:
        chunk = os.read(pipe, 1 << 20)
        if not chunk:
            _, status = os.waitpid(pid, 0)
            return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None
        chunks.append(chunk)
    return None


def end(pid: int, pipe: int) -> None:
    """Close the pipe and make sure the child is gone (killed if it still runs) and reaped."""
    os.close(pipe)
    stop(pid)


def stop(pid: int) -> None:
    """Make sure the child is gone (killed if it still runs) and reaped; nothing if it already was."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
