"""A report's figures drawn as SVG, in two processes when this one may run on two CPUs.

Drawing is most of a report's time and each figure is drawn alone, so a forked child (it inherits the built
figures) draws about half of them while this process draws the rest, and sends its SVGs back through a
pipe. The SVGs are the same text either way (ids are salted with the plot's id, not with the process). The
child dies with vmio (a parent-death SIGKILL) and is given ``TIMEOUT`` seconds; if it fails or runs out of
time, this process draws its share too.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import threading
import time

from vmio.report.figure import Plot, to_svg

PR_SET_PDEATHSIG = 1
TIMEOUT = 300.0  # seconds the child may take: a report of 1000 points draws in well under a minute
FIXED_COST = 4  # a figure's drawing cost beside one unit per panel (title, caption, page layout)


def svgs(plots: list[Plot]) -> dict[str, str]:
    """Each plot's SVG by plot id (forked only from a single-threaded process: a lock another thread holds
    would stay held in the child)."""
    if len(plots) < 2 or len(os.sched_getaffinity(0)) < 2 or threading.active_count() > 1:
        return {p.id: to_svg(p) for p in plots}
    mine, theirs = halves(plots)
    child, pipe = _fork(theirs)
    try:
        drawn = {p.id: to_svg(p) for p in mine}
        sent = _collect(child, pipe)
    finally:
        _end(child, pipe)
    return drawn | (sent if sent is not None else {p.id: to_svg(p) for p in theirs})


def halves(plots: list[Plot]) -> tuple[list[Plot], list[Plot]]:
    """Two shares of about equal drawing cost (the costliest first, each to the lighter share)."""
    shares: tuple[list[Plot], list[Plot]] = ([], [])
    loads = [0, 0]
    for plot in sorted(plots, key=cost, reverse=True):
        lighter = loads.index(min(loads))
        shares[lighter].append(plot)
        loads[lighter] += cost(plot)
    return shares


def cost(plot: Plot) -> int:
    return FIXED_COST + len(plot.figure.axes)


def _fork(plots: list[Plot]) -> tuple[int, int]:
    """Start the child drawing ``plots``; return its pid and the pipe's reading end."""
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
                out.write(json.dumps({p.id: to_svg(p) for p in plots}).encode())
            code = 0
    finally:
        os._exit(code)


def _collect(pid: int, pipe: int) -> dict[str, str] | None:
    """The child's SVGs, or None when it failed or took more than ``TIMEOUT`` seconds."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    while (left := deadline - time.monotonic()) > 0 and select.select([pipe], [], [], left)[0]:
        chunk = os.read(pipe, 1 << 20)
        if not chunk:
            _, status = os.waitpid(pid, 0)
            return json.loads(b"".join(chunks)) if os.waitstatus_to_exitcode(status) == 0 else None
        chunks.append(chunk)
    return None


def _end(pid: int, pipe: int) -> None:
    """Close the pipe and make sure the child is gone (killed if it still runs) and reaped."""
    os.close(pipe)
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
