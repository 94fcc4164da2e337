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
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
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
        if "mixed" in job and not any(ddir in job for ddir in DIRECTIONS):
            raise FioError(
                f"fio job {job['jobname']!r} reports reads and writes together ('mixed', fio's "
                "unified_rw_reporting); vmio keeps them apart: run fio without unified_rw_reporting",
                output=around[-4000:],
            )
        results.extend(_direction(job, host, ddir) for ddir in DIRECTIONS if _did_io(job, ddir))
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


def _did_io(job: dict[str, Any], ddir: str) -> bool:
    """Whether the job moved data in ``ddir``: a direction fio left out did not."""
    d = job.get(ddir)
    if d is None:
        return False
    if not isinstance(d, dict):
        raise ValueError(f"{ddir} is {type(d).__name__}, not an object")
    return total_ios(d) > 0


def _direction(job: dict[str, Any], host: str, ddir: str) -> JobResult:
    """One direction of one job in vmio's units (ns, bytes/s), whatever fio version wrote it.

    fio up to 2.21 wrote ``slat``/``clat``/``lat`` and their percentiles and bins in microseconds, fio 2.99
    and later ``*_ns`` in nanoseconds (see ``docs/import.md`` for every change by version)."""
    d = job[ddir]
    scale = 1 if "clat_ns" in d or "lat_ns" in d else 1000  # microseconds before fio 2.99
    clat = d["clat_ns"] if scale == 1 else d["clat"]
    lat = d["lat_ns"] if scale == 1 else d["lat"]
    pct_source = lat if "percentile" in lat else clat
    pcts = {float(k): v for k, v in pct_source.get("percentile", {}).items() if k != FILLER}
    summary: dict[str, float | None] = {
        "min": float(lat["min"]) * scale,
        "mean": float(lat["mean"]) * scale,
        "max": float(lat["max"]) * scale,
        "stddev": float(lat["stddev"]) * scale if "stddev" in lat else None,
    }
    for p in histogram.PERCENTILES:
        summary[f"p{p:g}"] = float(pcts[p]) * scale if p in pcts else None
    runtime = int(d["runtime"])
    iops = float(d["iops"])
    return JobResult(
        host=host,
        job=str(job["jobname"]),
        ddir=ddir,
        iops=iops,
        bw_bytes=bandwidth(d),
        total_ios=total_ios(d),
        runtime_ms=runtime,
        lat_ns=summary,
        usr_cpu=float(job["usr_cpu"]),
        sys_cpu=float(job["sys_cpu"]),
        bins=_bins(lat.get("bins") or clat.get("bins") or {}, scale),
    )


FILLER = "0.00"  # fio before 3.4 filled its percentile map up to 20 entries with repeated "0.00": 0


def total_ios(d: dict[str, Any]) -> int:
    """fio's ``total_ios``; fio before 2.1.14 did not write it: then its own definition of ``iops``
    (1000 × total_ios / runtime ms) read backwards, which is exact when fio wrote ``iops`` as a float."""
    if "total_ios" in d:
        return int(d["total_ios"])
    runtime = int(d["runtime"])
    return round(float(d["iops"]) * runtime / 1000) if runtime else 0


def bandwidth(d: dict[str, Any]) -> float:
    """Bytes per second: fio's ``bw_bytes`` (3.2 and later), else fio 3.2's own definition of it,
    ``1000 × io_bytes / runtime`` in whole bytes/s, from ``io_bytes``, which holds KiB up to fio 2.20 (no
    ``io_kbytes`` beside it then) and bytes from 2.21; ``bw`` (KiB/s, rounded down) only if neither is there."""
    if "bw_bytes" in d:
        return float(d["bw_bytes"])
    runtime = int(d["runtime"])
    if "io_bytes" in d:
        moved = int(d["io_bytes"]) * (1 if "io_kbytes" in d else 1024)
        return float(1000 * moved // runtime) if runtime else 0.0
    return float(d["bw"]) * 1024


def _bins(bins: dict[str, Any], scale: int) -> histogram.Histogram:
    """json+ bins in ns. fio 2.12 to 2.19 keyed them by bucket index with the bucket layout beside them
    (``FIO_IO_U_PLAT_BITS``, ``FIO_IO_U_PLAT_VAL``, ``FIO_IO_U_PLAT_NR``); later versions by the bucket's
    latency (µs up to 2.21, ns after), nonzero bins only."""
    if "FIO_IO_U_PLAT_BITS" not in bins:
        return {value * scale: count for value, count in histogram.from_json(bins).items()}
    bits = int(bins["FIO_IO_U_PLAT_BITS"])
    if not 1 <= bits <= 16:  # fio has always used 6
        raise ValueError(f"FIO_IO_U_PLAT_BITS is {bits}, not a bucket layout fio writes")
    counts = {k: v for k, v in bins.items() if not k.startswith("FIO_IO_U_PLAT_")}
    out: histogram.Histogram = {}
    for index, count in histogram.from_json(counts).items():
        if index >= (64 << bits):  # fio 2.x had 19 groups of 2**bits buckets
            raise ValueError(f"bucket index {index} is beyond fio's histogram")
        value = plat_idx_to_val(index, bits) * scale
        out[value] = out.get(value, 0) + count
    return out


def plat_idx_to_val(index: int, bits: int) -> int:
    """The latency fio reports for its histogram bucket ``index`` with ``bits`` bits per group (the middle
    of the bucket, rounded down), as fio's ``stat.c`` defines it."""
    if index < (2 << bits):
        return index
    error_bits = (index >> bits) - 1
    base = 1 << (error_bits + bits)
    return int(base + ((index % (1 << bits)) + 0.5) * (1 << error_bits))


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
