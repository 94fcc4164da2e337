"""Every fio vmio starts: locally, or as a client of one or more ``fio --server`` processes.

This is the one place vmio launches fio (``tests/test_fio_launch.py`` holds every other module to it): the
argument list, the job files checked against the engines vmio runs, the program run through
``system.process`` with a timeout (it dies with vmio), its output parsed by ``output.parse`` (json+, the
latency histograms kept). ``run`` waits for a point's fio, ``run_job`` writes one job file and runs it,
``Background`` starts a fio that runs while the caller works (a degraded-store run, membal's loads),
``serve`` starts a ``fio --server``, ``stdin_argv`` is the fio a guest's agent starts, and ``version``
asks a fio binary its version. All servers of a point start together and report together (fio's
client/server protocol).
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeVar

from vmio.errors import FioError, ToolError, UnsafeTargetError
from vmio.fio import options, output
from vmio.spec.fields import ENGINES
from vmio.system.process import Runner, Supervised

FIO = "fio"
INTERRUPT_S = 20.0  # a client past its time: SIGINT, so its servers end their jobs, then this long to end
OUTPUT_FORMAT = "--output-format=json+"  # json with the latency histograms' bins
VERSION_TIMEOUT_S = 30.0
T = TypeVar("T")
# fio options that run a program (a shell line): no job vmio starts has one
PROGRAMS = frozenset(["exec_prerun", "exec_postrun"])


@dataclass(frozen=True)
class Endpoint:
    """Where one job file runs: ``None`` for this host, else a fio server's ``host:port``."""

    server: str | None
    job_file: Path


def check_job(text: str, where: str = "the job file") -> None:
    """Refuse a job file that names an ``ioengine`` vmio does not run (``spec.fields.ENGINES``: no
    ``external:`` library, no ``exec`` program) or a program to run (``exec_prerun``, ``exec_postrun``),
    before fio reads it: every job vmio starts passes here."""
    names = options.names()  # by fio's own names: an alias of one of these is refused as well
    name = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1]
            continue
        key, eq, value = line.partition("=")
        option = names.canonical(key.strip())
        if option in PROGRAMS:
            raise UnsafeTargetError(
                f"{where}: section [{name}] asks fio to run a program ({key.strip()}); vmio runs no program "
                "from a job"
            )
        if eq and option == "ioengine":
            engine = value.strip()
            if engine not in ENGINES:
                raise UnsafeTargetError(
                    f"{where}: section [{name}] asks fio for ioengine={engine}, which vmio does not run; "
                    f"use one of {', '.join(ENGINES)}"
                )


def read_only(text: str) -> bool:
    """Whether every job section of job file ``text`` only reads, as fio reads it: the value in force of
    ``rw`` (by any of its names, ``[global]`` first, the last wins) is ``read`` or ``randread``, or unset
    (fio's default, ``read``). Such a job runs under fio's own ``--readonly`` (``argv``)."""
    names = options.names()
    glob: str | None = None
    current: str | None = None
    sections: list[str | None] = []
    in_global = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            if not in_global and sections:
                sections[-1] = current
            in_global = line[1:-1].strip() == "global"
            if not in_global:
                current = glob
                sections.append(current)
            continue
        key, eq, value = line.partition("=")
        if names.canonical(key.strip()) == "rw":
            if in_global:
                glob = value.strip() if eq else None
            else:
                current = value.strip() if eq else None
    if sections and not in_global:
        sections[-1] = current
    return bool(sections) and all((rw or "read").split(":")[0] in READS for rw in sections)


READS = ("read", "randread")


def argv(endpoints: Sequence[Endpoint]) -> list[str]:
    """fio's arguments for the endpoints' job files (each checked first, ``check_job``). A job that only
    reads (``read_only``) runs under fio's ``--readonly``, given after its ``--client`` where fio's client
    hands it to that server (given before any ``--client``, a server does not see it)."""
    texts = [ep.job_file.read_text() for ep in endpoints]
    for ep, text in zip(endpoints, texts, strict=True):
        check_job(text, str(ep.job_file))
    args = [FIO, OUTPUT_FORMAT]
    for ep, text in zip(endpoints, texts, strict=True):
        guard = [READONLY] if read_only(text) else []
        if ep.server is None:
            if len(endpoints) != 1:
                raise ValueError("a local fio run takes exactly one job file")
            return [*args, *guard, str(ep.job_file)]
        host, _, port = ep.server.rpartition(":")
        args += [f"--client={host},{port}", str(ep.job_file), *guard]
    return args


READONLY = "--readonly"  # fio's own guard: it refuses a job that writes or trims, and skips a log's writes


def where(endpoints: Sequence[Endpoint]) -> str:
    """The endpoints as a failed point names them: ``local`` or the fio servers' ``host:port``."""
    return ", ".join(ep.server or "local" for ep in endpoints)


def stdin_argv(text: str) -> list[str]:
    """fio reading its one job, ``text``, from stdin, as a guest's agent starts it (``libvirt.guest_fio``);
    under ``--readonly`` when the job only reads (``read_only``)."""
    check_job(text)
    return [FIO, OUTPUT_FORMAT, *([READONLY] if read_only(text) else []), "-"]


def run(
    endpoints: Sequence[Endpoint],
    *,
    timeout: float,
    runner: Runner,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    read_pct: int | None = None,
    what: str | None = None,
) -> output.FioOutput:
    """Run fio and parse its output; ``read_pct`` (the workload's read share) also checks that every
    endpoint reported its measured job in each direction the workload does (else a ``FioError``).
    Errors name ``what`` ran (default: the endpoints, ``where``); the output is kept in ``cwd/fio-output.txt``."""
    at = what or where(endpoints)
    try:
        done = runner.run(
            argv(endpoints),
            timeout=timeout,
            check=False,
            cwd=str(cwd),
            env=env,
            error=FioError,
            interrupt=INTERRUPT_S if any(ep.server for ep in endpoints) else 0.0,
        )
    except FioError as exc:
        (cwd / "fio-output.txt").write_text(exc.output)
        raise FioError(f"fio on {at}: {str(exc).splitlines()[0]}", argv=exc.argv, output=exc.output) from None
    text = done.stdout + ("\n" + done.stderr if done.stderr.strip() else "")
    (cwd / "fio-output.txt").write_text(text)
    if done.returncode != 0:
        raise FioError(f"fio failed on {at}", argv=done.argv, returncode=done.returncode, output=text)
    try:
        result = output.parse(text)
    except FioError as exc:
        raise FioError(f"fio on {at}: {str(exc).splitlines()[0]}", output=exc.output) from None
    if read_pct is not None:
        missing = output.missing(result, [ep.server for ep in endpoints], read_pct)
        if missing:
            raise FioError(
                f"fio on {at} reported no {missing}; the point has no figures", output=text[-4000:]
            )
    return result


def run_job(
    text: str,
    *,
    timeout: float,
    runner: Runner,
    server: str | None = None,
    env: Mapping[str, str] | None = None,
    what: str | None = None,
) -> output.FioOutput:
    """Write ``text`` as a job file in a private folder of its own and ``run`` it (on this host, or on the
    fio server ``host:port``); the folder is removed after."""
    with tempfile.TemporaryDirectory(prefix="vmio-fio-") as tmp:
        path = Path(tmp) / "job.fio"
        path.write_text(text)
        return run(
            [Endpoint(server, path)], timeout=timeout, runner=runner, cwd=Path(tmp), env=env, what=what
        )


class Background:
    """fio started without waiting for it: its output (stdout and stderr) into ``log``; it is interrupted
    after ``timeout`` seconds (``timed_out``; killed if it does not end), stopped by ``stop`` or
    ``interrupt``, and killed with vmio (``Supervised``)."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        *,
        timeout: float,
        cwd: Path,
        log: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.argv = argv(endpoints)
        self.log = log
        self.timed_out = False
        self._lock = threading.Lock()
        self._ended = False
        with open(log, "wb") as out:  # the child keeps its own copy of the descriptor
            try:
                self.proc = Supervised(
                    self.argv, env=env, cwd=str(cwd), stdout=out.fileno(), stderr=subprocess.STDOUT
                )
            except OSError as exc:
                raise FioError(f"cannot start fio: {exc.strerror}", argv=self.argv) from exc
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if not self._ended:
                self.timed_out = True
                self._ended = True
                self.proc.interrupt()

    def running(self) -> bool:
        return self.proc.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.proc.popen.returncode

    def finished(self) -> None:
        """fio has ended by itself (``running()`` said so): release it."""
        self._end("finished")

    def stop(self, wait: float = 15.0) -> None:
        """Kill fio (if still running) and everything it started."""
        self._end("stop", wait)

    def interrupt(self, wait: float = 15.0) -> None:
        """Stop fio its own way (SIGINT: a client tells its servers to end their jobs), killed after ``wait``
        seconds if it has not ended (``Supervised.interrupt``)."""
        self._end("interrupt", wait)

    def _end(self, how: str, wait: float = 15.0) -> None:
        self._timer.cancel()
        with self._lock:
            if self._ended:
                return
            self._ended = True
            if how == "stop":
                self.proc.stop(wait=wait)
            elif how == "interrupt":
                self.proc.interrupt(wait=wait)
            else:
                self.proc.finished()

    def text(self) -> str:
        """Everything fio printed so far."""
        return self.log.read_text(errors="replace")


def serve(host: str, port: int) -> Supervised:
    """``fio --server`` on ``host:port``, its output left to vmio's; it dies with vmio (the caller stops it)."""
    return Supervised([FIO, f"--server={host},{port}"], stdout=None, stderr=None)


@cache
def _version(runner: Runner, binary: str) -> str | None:
    try:
        return runner.run([binary, "--version"], timeout=VERSION_TIMEOUT_S).stdout.strip() or None
    except ToolError:
        return None


def loads(runner: Runner, binary: str, env: Mapping[str, str]) -> bool:
    """Whether ``binary`` (a fio) starts with ``env`` (a library path of stand-ins): its loader satisfied,
    ``fio --version`` exits 0."""
    done = runner.run([binary, "--version"], timeout=VERSION_TIMEOUT_S, env=env, check=False)
    return done.returncode == 0


def start_via(start: Callable[[str, list[str], str], T], job: str, where: str) -> T:
    """fio started by another program's hands (a libvirt guest's agent): ``start(program, args, job)``
    with fio reading ``job`` on stdin (``stdin_argv``: under ``--readonly`` when it only reads), the job
    checked first like every job vmio runs."""
    check_job(job, where)
    program, *args = stdin_argv(job)
    return start(program, args, job)


def version(runner: Runner, binary: str = FIO) -> str | None:
    """``fio --version`` of ``binary`` (a name on PATH or a path), asked once per runner; None when it cannot
    say."""
    return _version(runner, binary)


OpLatency = tuple[str, str, int, int, str, int | None]  # host, job, t ms, latency ns, ddir, offset


def op_latencies(rundir: Path, servers: Sequence[str | None]) -> list[OpLatency]:
    """Every operation from the latency logs of an ``ops`` run: (host, job, t ms, latency ns, ddir,
    offset; None when the log has no offsets).

    Endpoint ``i`` logs under the prefix ``ops-i`` (fio's client appends the server's address, which is
    the same for every VM on 127.0.0.1, so the prefix tells them apart).
    """
    ops = []
    for i, server in enumerate(servers):
        for log in sorted(rundir.glob(f"ops-{i}_lat.*.log*")):
            job = "measure." + log.name.split("_lat.")[1].split(".")[0]
            for t, ns, ddir, offset in output.parse_op_log(log.read_text(), str(log)):
                ops.append((server or "local", job, t, ns, ddir, offset))
    return ops


def hist_logs(rundir: Path, servers: Sequence[str | None]) -> list[tuple[str, str, int, str, dict[int, int]]]:
    """The per-interval latency histograms of a timed run: (host, job, t ms, ddir, bins).

    Endpoint ``i`` logs under the prefix ``hist-i`` (``write_hist_log``, ``log_hist_msec``).
    """
    out = []
    for i, server in enumerate(servers):
        for log in sorted(rundir.glob(f"hist-{i}_clat_hist.*.log*")):
            job = "measure." + log.name.split("_clat_hist.")[1].split(".")[0]
            for t, ddir, bins in output.parse_hist_log(log.read_text(), str(log)):
                out.append((server or "local", job, t, ddir, bins))
    return out
