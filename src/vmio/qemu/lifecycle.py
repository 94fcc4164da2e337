"""Launching QEMU so it cannot outlive vmio: its own process group and a parent-death signal."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

PR_SET_PDEATHSIG = 1


def _pdeathsig_hook(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: SIGKILL this child when the parent (the launching thread) dies.

    ``prctl`` is looked up here, in the parent, so the forked child runs no dynamic loading.
    """
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def hook() -> None:
        if prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            os._exit(126)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(125)

    return hook


def spawn(argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session with stdout/stderr to ``log`` and a parent-death SIGKILL.

    The death signal follows the *thread* that forks, so call this from a thread that lives as long as
    the VM (the main thread; ``Fleet`` launches from the calling thread for this reason).
    """
    with open(log, "wb") as out:
        return subprocess.Popen(  # noqa: S603 - an argument list, never a shell
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **env} if env else None,
            preexec_fn=_pdeathsig_hook(os.getpid()),  # noqa: PLW1509 - needed for PR_SET_PDEATHSIG
        )


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``proc`` to exit; True if it did."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def stop(proc: subprocess.Popen[bytes], quit_fn: Callable[[], None] | None, grace: float = 5.0) -> int:
    """Stop ``proc``: ``quit_fn`` (QMP quit) and wait, then SIGTERM the group, then SIGKILL; return code."""
    if proc.poll() is None and quit_fn is not None:
        quit_fn()
        wait_exit(proc, grace)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 30.0)):
        if proc.poll() is not None:
            break
        signal_group(proc, sig)
        wait_exit(proc, wait)
    signal_group(proc, signal.SIGKILL)  # any child QEMU left in its group
    return proc.wait()


def read_tail(path: Path, limit: int = 64 * 1024) -> str:
    """The last ``limit`` bytes of ``path`` as text ('' when it does not exist)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


def monotonic() -> float:
    return time.monotonic()
