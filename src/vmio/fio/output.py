"""Parse fio's JSON / json+ output, tolerating text around the JSON (client banners, warnings).

Each job × direction becomes a ``JobResult``; client/server output yields one per server and job, with
the server's ``host:port``. fio's own "All clients" aggregate is skipped: vmio merges histograms itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from vmio.errors import FioError
from vmio.stats import histogram

DIRECTIONS = ("read", "write")
NO_JOBS = "fio JSON has no 'jobs' list; expected fio --output-format=json"


@dataclass
class JobResult:
    """One fio job's figures for one direction."""

    host: str
    job: str
    ddir: str
    iops: float
    bw_bytes: float
    total_ios: int
    runtime_ms: int
    lat_ns: dict[str, float | None]
    usr_cpu: float
    sys_cpu: float
    bins: histogram.Histogram = field(default_factory=dict)

    @property
    def role(self) -> str:
        return "load" if self.job.startswith("load") else "measure"


class DiskUtil(TypedDict, total=False):
    """One entry of fio's ``disk_util``: a disk's counters over the run as fio names them (``hostname``
    and ``port`` in client/server output; ``aggr_*`` on a device built on others)."""

    name: str
    util: float
    read_ios: int
    write_ios: int
    read_merges: int
    write_merges: int
    read_ticks: int
    write_ticks: int
    in_queue: int
    hostname: str
    port: int


@dataclass
class FioOutput:
    version: str
    results: list[JobResult]
    disk_util: list[DiskUtil]
    text: str  # everything printed around the JSON, kept for the run's log
    timestamp_ms: int | None = None  # wall clock when fio wrote its results (its I/O had ended)
    # per job with a steady-state criterion: host, job, attained, the job's runtime in ms (when it stopped)
    steady: list[tuple[str, str, bool, int]] = field(default_factory=list)
    jobs: int = 0  # the jobs fio reported (its "All clients" aggregate aside), with or without I/O
    io_errors: int = 0  # the I/O errors fio counted and went on past (``continue_on_error``: ``total_err``)
    job_error: int = 0  # the first error a job ended with (only with ``parse(..., job_errors=True)``)


def extract_json(text: str) -> tuple[dict[str, Any], str]:
    """Find fio's JSON document in ``text``; return it and the text around it."""
    decoder = json.JSONDecoder(strict=False)  # job options may hold tabs (an exec job's command)
    start = 0
    while True:
        start = text.find("{", start)
        if start < 0:
            raise FioError(_why_no_json(text), output=text[-4000:])
        try:
            doc, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start += 1
            continue
        except RecursionError:  # arrays in arrays deeper than Python's stack: no output fio writes
            raise FioError("fio's output is not fio's JSON: its arrays or objects nest too deeply") from None
        if isinstance(doc, dict) and ("jobs" in doc or "client_stats" in doc):
            return doc, text[:start] + text[end:]
        start += 1


def _why_no_json(text: str) -> str:
    first, last = text.find("{"), text.rfind("}")
    if first < 0 or last < first:
        return "fio printed no JSON object"
    try:
        json.loads(text[first : last + 1], strict=False)
    except json.JSONDecodeError as exc:
        line = text[:first].count("\n") + exc.lineno
        return f"fio output is not valid JSON at line {line}: {exc.msg}"
    return NO_JOBS


def check_job(job: dict[str, Any], around: str = "") -> None:
    """A job that fio says ended with an error is a ``FioError``."""
    if job.get("error"):
        raise FioError(f"fio job {job.get('jobname')!r} ended with error {job['error']!r}", output=around)


def parse(text: str, *, job_errors: bool = False) -> FioOutput:
    """Parse fio's output; any surprise in its shape is a ``FioError``, never another exception.

    A job that ended with an error is a ``FioError`` too, unless ``job_errors``: then the first such error
    is the result's ``job_error`` (a run that counts its failures, such as the degraded-store run)."""
    doc, around = extract_json(text)
    try:
        return _parse_doc(doc, around, job_errors)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FioError(f"fio's JSON has an unexpected shape: {exc!r}", output=text[-4000:]) from exc


def _parse_doc(doc: dict[str, Any], around: str, job_errors: bool = False) -> FioOutput:
    jobs = doc.get("client_stats") if "client_stats" in doc else doc["jobs"]
    if not isinstance(jobs, list):
        raise ValueError(f"jobs is {type(jobs).__name__}, not a list")
    results: list[JobResult] = []
    steady: list[tuple[str, str, bool, int]] = []
    counted = io_errors = job_error = 0
    for job in jobs:
        if job["jobname"] == "All clients":
            continue
        counted += 1
        io_errors += int(job.get("total_err", 0) or 0)
        if int(job.get("error", 0)):
            if not job_errors:
                check_job(job, around)
            job_error = job_error or int(job["error"])
        host = f"{job['hostname']}:{job['port']}" if "hostname" in job else "local"
        results.extend(_direction(job, host, ddir) for ddir in DIRECTIONS if job[ddir]["total_ios"] > 0)
        ss = job.get("steadystate")
        if isinstance(ss, dict):
            steady.append(
                (host, str(job["jobname"]), bool(ss.get("attained")), int(job.get("job_runtime", 0)))
            )
    stamp = doc.get("timestamp_ms")
    return FioOutput(
        str(doc.get("fio version", "")),
        results,
        list(doc.get("disk_util", [])),
        around.strip(),
        int(stamp) if isinstance(stamp, int | float) else None,
        steady,
        counted,
        io_errors,
        job_error,
    )


def _direction(job: dict[str, Any], host: str, ddir: str) -> JobResult:
    d = job[ddir]
    lat = d["lat_ns"]
    pct_source = lat if "percentile" in lat else d["clat_ns"]
    pcts = {float(k): v for k, v in pct_source.get("percentile", {}).items()}
    bins_source = lat.get("bins") or d["clat_ns"].get("bins") or {}
    summary: dict[str, float | None] = {
        "min": float(lat["min"]),
        "mean": float(lat["mean"]),
        "max": float(lat["max"]),
        "stddev": float(lat["stddev"]),
    }
    for p in histogram.PERCENTILES:
        summary[f"p{p:g}"] = float(pcts[p]) if p in pcts else None
    return JobResult(
        host=host,
        job=str(job["jobname"]),
        ddir=ddir,
        iops=float(d["iops"]),
        bw_bytes=float(d["bw_bytes"]),
        total_ios=int(d["total_ios"]),
        runtime_ms=int(d["runtime"]),
        lat_ns=summary,
        usr_cpu=float(job["usr_cpu"]),
        sys_cpu=float(job["sys_cpu"]),
        bins=histogram.from_json(bins_source),
    )


def missing(result: FioOutput, servers: Sequence[str | None], read_pct: int) -> str:
    """What fio should have reported for a workload with ``read_pct`` % reads and did not; '' if nothing.

    Every endpoint (``None`` for local, else ``host:port``) needs a measured job, with I/O in reads when
    the workload reads and in writes when it writes. A mixed workload may see no I/O in its rare direction
    by chance, so that direction is required only when at least 20 operations were due in it.
    """
    measured = [r for r in result.results if r.role == "measure"]
    gaps = []
    for server in servers:
        name = server or "local"
        # fio names a client's results by the server's hostname and port; the port tells endpoints apart
        mine = [r for r in measured if r.host.rpartition(":")[2] == name.rpartition(":")[2]]
        if not mine:
            gaps.append(f"measured job from {name}")
            continue
        total = sum(r.total_ios for r in mine)
        for ddir, share in (("read", read_pct), ("write", 100 - read_pct)):
            due = share == 100 or (share > 0 and total * share / 100 >= 20)
            if due and not any(r.ddir == ddir and r.total_ios > 0 for r in mine):
                gaps.append(f"{ddir}s from {name}")
    return ", ".join(gaps)


def parse_lat_log(text: str, name: str = "<lat log>") -> list[tuple[int, int, str]]:
    """A fio latency log (log_avg_msec=0): (time ms, latency ns, 'read'|'write') per operation."""
    return [(t, ns, ddir) for t, ns, ddir, _ in parse_op_log(text, name)]


def parse_op_log(text: str, name: str = "<lat log>") -> list[tuple[int, int, str, int | None]]:
    """A fio latency log (log_avg_msec=0) with its offsets: (time ms, latency ns, 'read'|'write', offset)
    per operation; the offset (``log_offset=1``, the fifth column) is None in a log without it."""
    ops = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        try:
            t, value, ddir = int(parts[0]), int(parts[1]), int(parts[2])
            offset = int(parts[4]) if len(parts) > 5 else None  # time, value, ddir, bs, offset, prio
        except (ValueError, IndexError) as exc:
            raise FioError(f"{name}:{lineno}: not a latency log line: {line!r}") from exc
        ops.append((t, value, "read" if ddir == 0 else "write" if ddir == 1 else "trim", offset))
    return ops


def parse_hist_log(text: str, name: str = "<hist log>") -> list[tuple[int, str, histogram.Histogram]]:
    """A fio histogram log (``write_hist_log``): (time ms, 'read'|'write'|'trim', the interval's bins).

    Each line is ``time, ddir, bs, count per bucket...``: the completions of the interval ending then
    (fio logs the difference from the previous line).
    """
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split(",")
        try:
            t, ddir = int(parts[0]), int(parts[1])
            counts = [int(p) for p in parts[3:]]
        except (ValueError, IndexError) as exc:
            raise FioError(f"{name}:{lineno}: not a histogram log line: {line[:80]!r}") from exc
        if not counts or any(c < 0 for c in counts):
            raise FioError(f"{name}:{lineno}: a histogram log line without counts: {line[:80]!r}")
        out.append(
            (t, "read" if ddir == 0 else "write" if ddir == 1 else "trim", histogram.from_counts(counts))
        )
    return out
