"""Run fio for one point: locally, or as a client of one or more ``fio --server`` processes.

All servers of a point start together and report together (fio's client/server protocol).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import FioError
from vmio.fio import output
from vmio.system.process import Runner


@dataclass(frozen=True)
class Endpoint:
    """Where one job file runs: ``None`` for this host, else a fio server's ``host:port``."""

    server: str | None
    job_file: Path


def argv(endpoints: Sequence[Endpoint]) -> list[str]:
    args = ["fio", "--output-format=json+"]
    for ep in endpoints:
        if ep.server is None:
            if len(endpoints) != 1:
                raise ValueError("a local fio run takes exactly one job file")
            return [*args, str(ep.job_file)]
        host, _, port = ep.server.rpartition(":")
        args += [f"--client={host},{port}", str(ep.job_file)]
    return args


def where(endpoints: Sequence[Endpoint]) -> str:
    """The endpoints as a failed point names them: ``local`` or the fio servers' ``host:port``."""
    return ", ".join(ep.server or "local" for ep in endpoints)


def run(
    endpoints: Sequence[Endpoint],
    *,
    timeout: float,
    runner: Runner,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    read_pct: int | None = None,
) -> output.FioOutput:
    """Run fio and parse its output; ``read_pct`` (the workload's read share) also checks that every
    endpoint reported its measured job in each direction the workload does (else a ``FioError``)."""
    at = where(endpoints)
    try:
        done = runner.run(
            argv(endpoints), timeout=timeout, check=False, cwd=str(cwd), env=env, error=FioError
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
