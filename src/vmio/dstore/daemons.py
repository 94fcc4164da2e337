"""Ceph daemons of a throwaway cluster: start each with a timeout and a pid file, stop each by its PID.

A PID is only signalled when ``/proc/PID/cmdline`` shows it runs with this cluster's ``ceph.conf``, so a
stale pid file whose number was reused never kills an unrelated process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from vmio.dstore.cephconf import ClusterLayout
from vmio.errors import ClusterError, tail_lines
from vmio.system.process import Runner, alive

START_TIMEOUT = 90.0


def start(runner: Runner, layout: ClusterLayout, kind: str, ident: str) -> int:
    """Start ``ceph-KIND -i IDENT`` (it daemonizes itself); return the PID from its pid file."""
    name = f"{kind}.{ident}"
    argv = [f"ceph-{kind}", "-c", str(layout.conf), "-i", ident]
    if layout.network is not None:  # in its own namespace: it binds that namespace's address
        argv = ["ip", "netns", "exec", layout.network.ns(layout.role(name)), *argv]
    runner.run(argv, timeout=START_TIMEOUT, error=ClusterError, leaves_daemon=True)
    pid_file = layout.pid_file(name)
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:
        pid = owned_pid(pid_file, layout.conf)
        if pid is not None:
            return pid
        time.sleep(0.1)
    log = layout.log_dir / f"{name}.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    raise ClusterError(
        f"{name} did not leave a live pid in {str(pid_file)!r}", argv=argv, output=tail_lines(text, 15)
    )


def owned_pid(pid_file: Path, conf: Path) -> int | None:
    """The PID in ``pid_file`` if that process is alive and runs with ``conf``; else None."""
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    if os.fsencode(str(conf)) not in cmdline:
        return None
    return pid


def running(run_dir: Path, conf: Path) -> dict[str, int]:
    """Daemon name → PID for every pid file in ``run_dir`` whose process is alive and ours."""
    found: dict[str, int] = {}
    for pid_file in sorted(run_dir.glob("*.pid")):
        pid = owned_pid(pid_file, conf)
        if pid is not None:
            found[pid_file.name.removesuffix(".pid")] = pid
    return found


def stop_one(run_dir: Path, conf: Path, name: str, term_wait_s: float = 30.0) -> bool:
    """SIGTERM daemon ``name`` (``osd.1``) as an operator's stop does (an OSD tells the mon it is going
    down), SIGKILL it after ``term_wait_s``; True when it ended by itself. Not running: ClusterError."""
    pid = owned_pid(run_dir / f"{name}.pid", conf)
    if pid is None:
        raise ClusterError(f"{name} is not running (no live pid file in {str(run_dir)!r})")
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + term_wait_s
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.1)
    if not alive(pid):
        return True
    _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.1)
    return False


def cluster_pids(conf: Path, proc: Path = Path("/proc")) -> dict[int, str]:
    """PID → command line of every ``ceph-*`` process running with ``conf``, pid file or not (a daemon
    still starting, or one whose pid file was removed, is found all the same)."""
    needle = os.fsencode(str(conf))
    found: dict[int, str] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and os.path.basename(argv[0]).startswith(b"ceph-")
            and needle in argv
            and alive(int(entry.name))
        ):
            found[int(entry.name)] = b" ".join(argv).decode(errors="replace").strip()
    return found


def stop_all(run_dir: Path, conf: Path, term_wait_s: float) -> list[str]:
    """SIGTERM every live daemon of the cluster, SIGKILL what is left after ``term_wait_s``; return only
    when none is left (ClusterError naming any that outlived SIGKILL)."""
    live = running(run_dir, conf) if run_dir.is_dir() else {}
    # Stop OSDs and the mgr before the mon so they do not spin on reconnects.
    order = sorted(live, key=lambda name: name.startswith("mon."))
    for name in order:
        _signal(live[name], signal.SIGTERM)
    for pid in cluster_pids(conf):  # any without a pid file
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + term_wait_s
    while time.monotonic() < deadline and (any(alive(pid) for pid in live.values()) or cluster_pids(conf)):
        time.sleep(0.2)
    for pid in {*live.values(), *cluster_pids(conf)}:
        if alive(pid):
            _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and (any(alive(pid) for pid in live.values()) or cluster_pids(conf)):
        time.sleep(0.1)
    left = cluster_pids(conf)
    if left:
        shown = "; ".join(f"{pid} {cmd[:120]}" for pid, cmd in sorted(left.items()))
        raise ClusterError(f"{len(left)} Ceph daemon(s) of {str(conf)!r} outlived SIGKILL: {shown}")
    return order


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
