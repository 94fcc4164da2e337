"""Run one command so that nothing it starts outlives vmio.

Usage: python -S supervise.py CONTROL_FD -- ARGV...

This process becomes a child subreaper, so every descendant of the command (fio's forked jobs call
setsid, QEMU's helpers) stays below it. It runs the command and kills every descendant when:
the command exits (leftovers), or the control pipe from vmio reaches EOF (vmio closed it on a
timeout, or vmio died, even by SIGKILL), or it gets SIGTERM. SIGINT is passed on to the command, to stop
it its own way (a fio client tells its servers to end their jobs, which a killed client leaves running
until their runtime ends). Its exit code is the command's
(128 + signal when the command was killed). Standard library only; started with ``-S``.
"""

import contextlib
import ctypes
import os
import select
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for kid in children.get(todo.pop(), []):
            found.append(kid)
            todo.append(kid)
    return found


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_all() -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        kids = descendants(os.getpid())
        if not kids:
            return
        for pid in kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
        reap()


def main() -> int:
    control = int(sys.argv[1])
    argv = sys.argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    interrupt = []
    signal.signal(signal.SIGINT, lambda *_: interrupt.append(1))
    child = os.fork()
    if child == 0:
        os.close(control)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot start {argv[0]!r}: {exc.strerror}\n".encode())
        os._exit(127)
    while True:
        ready, _, _ = select.select([control, wake_r], [], [], 1.0)
        if wake_r in ready:
            os.read(wake_r, 512)
        if interrupt:
            interrupt.clear()
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGINT)
        if stop or (control in ready and os.read(control, 1) == b""):
            kill_all()
            return 137
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            kill_all()
            code = os.waitstatus_to_exitcode(status)
            return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
