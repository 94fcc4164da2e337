"""Running external programs: argument lists, a timeout always, failures with their output.

Every program runs under ``supervise.py``, a child subreaper that kills the program and everything
it started when the program ends, on a timeout, or when vmio itself dies (even by SIGKILL): no fio
job or QEMU outlives vmio. ``Runner`` is the seam: features take a runner rather than calling
``subprocess``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import ToolError

SUPERVISOR = str(Path(__file__).with_name("supervise.py"))


@dataclass(frozen=True)
class Completed:
    """What a finished program left: argv, exit code, stdout and stderr as text."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


class Supervised:
    """A program started under the supervisor. ``stop()`` kills it and its descendants."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | None = subprocess.PIPE,
        stderr: int | None = subprocess.PIPE,
        supervise: bool = True,
    ) -> None:
        self.argv = [str(a) for a in argv]
        self.supervised = supervise
        control_r, self._control = os.pipe()
        wrapper = [sys.executable, "-S", SUPERVISOR, str(control_r), "--"] if supervise else []
        try:
            self.popen = subprocess.Popen(
                [*wrapper, *self.argv],
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                text=True,
                errors="replace",
                env=None if env is None else {**os.environ, **env},
                cwd=cwd,
                pass_fds=(control_r,),
                start_new_session=True,
            )
        except OSError:
            os.close(self._control)
            raise
        finally:
            os.close(control_r)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def stop(self, wait: float = 15.0) -> None:
        """Kill the program and everything it started; wait for the supervisor to finish."""
        self._release()
        if not self.supervised:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
        try:
            self.popen.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()

    def interrupt(self, wait: float = 15.0) -> tuple[str, str]:
        """Ask the program to stop (SIGINT, passed on by the supervisor), give it ``wait`` seconds to end, then
        :meth:`stop` it; what it wrote to its pipes ("" where it has none). A fio client stopped so tells its
        servers to end their jobs."""
        done: tuple[str | None, str | None] | None = None
        if self.supervised and self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.popen.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):  # read while it ends: a full pipe blocks it
                done = self.popen.communicate(timeout=wait)
        self.stop(wait)
        out, err = done if done is not None else self.popen.communicate()
        return out or "", err or ""

    def _release(self) -> None:
        if self._control >= 0:
            os.close(self._control)
            self._control = -1

    def finished(self) -> None:
        """The program has ended by itself: close the control pipe."""
        self._release()


class Runner:
    """Runs programs to completion with a timeout."""

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        input_text: str | None = None,
        error: type[ToolError] = ToolError,
        leaves_daemon: bool = False,
        interrupt: float = 0.0,
    ) -> Completed:
        """Run ``argv``; raise ``error`` on timeout or (with ``check``) on a non-zero exit.

        ``leaves_daemon``: the program's job is to start a daemon that outlives it (``ceph-mon`` forks
        and exits), so its descendants are not killed when it returns; the caller owns the daemon.
        ``interrupt``: past its time the program is first asked to stop (SIGINT) and given these seconds
        before it is killed (a fio client so stopped tells its servers to end their jobs).
        """
        argv = [str(a) for a in argv]
        stdin = subprocess.PIPE if input_text is not None else subprocess.DEVNULL
        try:
            proc = Supervised(argv, env=env, cwd=cwd, stdin=stdin, supervise=not leaves_daemon)
        except OSError as exc:
            raise error(f"cannot start {argv[0]!r}: {exc.strerror}", argv=argv) from exc
        try:
            out, err = proc.popen.communicate(input_text, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            out, err = proc.interrupt(interrupt) if interrupt > 0 else _killed(proc)
            raise error(
                f"{argv[0]} did not finish within {timeout:g} s and was killed",
                argv=argv,
                output=(out or "") + (err or ""),
            ) from exc
        except BaseException:
            proc.stop()
            raise
        proc.finished()
        code = proc.popen.returncode
        if code == 127 and err.startswith("cannot start"):
            raise error(err.strip(), argv=argv, returncode=code)
        if check and code != 0:
            raise error(f"{argv[0]} failed", argv=argv, returncode=code, output=out + err)
        return Completed(argv, code, out, err)


def _killed(proc: Supervised) -> tuple[str, str]:
    """Kill a program past its time; what it wrote."""
    proc.stop()
    out, err = proc.popen.communicate()
    return out or "", err or ""


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (whoever owns it)."""
    if pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
