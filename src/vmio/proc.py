"""Running external programs: argument lists, a timeout always, failures with their output.

``Runner`` is the seam: tests and features take a runner rather than calling ``subprocess``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vmio.errors import ToolError


@dataclass(frozen=True)
class Completed:
    """What a finished program left: argv, exit code, stdout and stderr as text."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


class Runner:
    """Runs programs with a timeout; kills the whole process group when the time is up."""

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
    ) -> Completed:
        """Run ``argv`` to completion; raise ``error`` on timeout or (with ``check``) failure."""
        argv = [str(a) for a in argv]
        full_env = None if env is None else {**os.environ, **env}
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=full_env,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise error(f"cannot start {argv[0]!r}: {exc.strerror}", argv=argv) from exc
        try:
            out, err = proc.communicate(input_text, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            kill_group(proc)
            out, err = proc.communicate()
            raise error(
                f"{argv[0]} did not finish within {timeout:g} s and was killed",
                argv=argv,
                output=(out or "") + (err or ""),
            ) from exc
        except BaseException:
            kill_group(proc)
            proc.wait()
            raise
        done = Completed(argv, proc.returncode, out, err)
        if check and proc.returncode != 0:
            raise error(f"{argv[0]} failed", argv=argv, returncode=proc.returncode, output=out + err)
        return done


def kill_group(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (it was started with a new session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
