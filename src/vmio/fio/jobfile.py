"""Render fio job files: one per point and per fio server, and the sections other features' jobs are made of.

Everything goes in the file: fio ignores command-line options given after a job file. The measured jobs
are named ``measure``; co-running load processes (okayama-hypervisors-2020) are named ``load`` and repeat the same I/O
unthrottled. ``offered_iops`` is a total across every measured job of the point (all VMs and hosts), so
each job gets its share as ``rate_iops``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vmio.spec import Workload
from vmio.system.paths import fio_name

PERCENTILE_LIST = "50:90:99:99.9:99.99"
OPS_TIME_LIMIT_S = 600
HIST_LOG_MS = 1000  # latency histograms logged once a second  # an ops run stops after this even if its operations are not done


@dataclass(frozen=True)
class Placement:
    """Where one fio process does its I/O and how many measured jobs the point has in all."""

    filename: str | None
    size: int | None = None
    offset: int = 0
    numjobs: int = 1
    total_jobs: int = 1
    engine_options: Mapping[str, str] = field(default_factory=dict)
    lat_log_prefix: str | None = None
    hist_log_prefix: str | None = None  # per-second latency histograms of a timed run
    # the latency log names each operation's offset (``log_offset``); fio 3.33's client drops the last
    # fifth of such a log from a fio server, so only a local fio asks for it
    lat_log_offsets: bool = False
    # the I/O log the measured jobs replay (okayama-hypervisors-2020's fixed offsets)
    iolog: str | None = None
    cpus_allowed: str | None = None  # fio's CPU list for every process of the point (a host target's cpus)
    # the target's own path when ``filename`` is vmio's descriptor of it (``safety.Held``: fio opens the
    # object vmio checked); named in a comment so the stored job says what it ran on
    opened_from: str | None = None


NULL_ENGINE_SIZE = 1 << 30


def render(
    workload: Workload, *, bs: int, offered_iops: int | None, load_processes: int, place: Placement
) -> str:
    """The text of a fio job file for one point on one fio process."""
    glob: dict[str, str | int | float] = {
        "ioengine": workload.ioengine,
        "direct": int(workload.direct),
        "rw": workload.rw,
        "bs": bs,
        "iodepth": workload.iodepth,
        "lat_percentiles": 1,
        "percentile_list": PERCENTILE_LIST,
        "randrepeat": 0,
    }
    if bs == 0:  # a fio job file's block sizes, written as they are below
        del glob["bs"]
    if workload.rw in ("randrw", "rw"):
        glob["rwmixread"] = workload.rwmixread
    glob.update(workload.fio_options)
    if place.filename is not None:
        glob["filename"] = place.filename
    if place.size is not None:
        glob["size"] = place.size
    elif workload.ioengine == "null":
        glob["size"] = NULL_ENGINE_SIZE  # fio's null engine moves no data, but wants a size to "cover"
    if place.offset:
        glob["offset"] = place.offset
    glob.update(place.engine_options)
    if place.cpus_allowed is not None:  # measured and load processes share these CPUs
        glob.update(cpus_allowed=place.cpus_allowed, cpus_allowed_policy="shared")
    if workload.ramp > 0:
        glob["ramp_time"] = seconds(workload.ramp)

    measure: dict[str, str | int | float] = {"numjobs": place.numjobs}
    if workload.ops > 0 and not workload.direct:
        # timed operations through the page cache meet what is cached (okayama-hypervisors-2020's regular
        # file); fio would otherwise drop the file's cached pages before the run
        glob["invalidate"] = 0
    if workload.ops > 0:
        measure["number_ios"] = workload.ops
        measure["runtime"] = OPS_TIME_LIMIT_S
        if place.lat_log_prefix:
            measure.update(write_lat_log=place.lat_log_prefix, log_avg_msec=0, per_job_logs=1)
            if place.lat_log_offsets:
                measure["log_offset"] = 1
        if place.iolog is not None:
            measure.update(read_iolog=place.iolog, replay_redirect=place.filename or "", replay_no_stall=1)
    else:
        measure.update(time_based=1, runtime=seconds(workload.runtime))
        if place.hist_log_prefix:
            measure.update(write_hist_log=place.hist_log_prefix, log_hist_msec=HIST_LOG_MS, per_job_logs=1)
    if offered_iops is not None:
        measure["rate_iops"] = _rate(workload, offered_iops, place.total_jobs)
        if workload.arrivals == "poisson":  # exponential gaps between I/Os at the same mean rate
            measure["rate_process"] = "poisson"
    if workload.steady is not None:
        measure.update(workload.steady.fio_options())
    sections = [("global", glob), ("measure", measure)]
    if load_processes > 0:
        runtime = OPS_TIME_LIMIT_S if workload.ops > 0 else seconds(workload.runtime)
        load: dict[str, str | int | float] = {"numjobs": load_processes, "time_based": 1, "runtime": runtime}
        if workload.ops > 0:
            glob["exitall"] = 1  # loads stop when the measured operations are done
        sections.append(("load", load))
    return _origin(workload) + _opened(place) + "".join(section(name, options) for name, options in sections)


def _opened(place: Placement) -> str:
    """A comment naming the target a descriptor ``filename`` stands for."""
    if place.opened_from is None:
        return ""
    return f"; {place.filename} is {fio_name(place.opened_from)}, checked and held open by vmio\n"


def _origin(workload: Workload) -> str:
    """Comment lines naming the person's job file and what vmio replaced in it."""
    if workload.fio_file is None:
        return ""
    lines = [f"; from {workload.fio_file}, section [{workload.name.rpartition(':')[2]}]"]
    lines += [f"; replaced by vmio: {r}" for r in workload.fio_replaced]
    return "\n".join(lines) + "\n"


# the block size of each preconditioning job: a sequential fill, then random writes (what each wrote is
# its I/Os times this)
PRECONDITION_BS = {"fill": 128 << 10, "random": 4 << 10}


def _k(size: int) -> str:
    return f"{size >> 10}k"


def precondition(place: Placement, size: int | None) -> str:
    """SNIA PTS-style preconditioning: one sequential fill, then random writes of twice the size."""
    glob: dict[str, str | int | float] = {"ioengine": "libaio", "direct": 1, "iodepth": 32, "randrepeat": 0}
    if place.filename is not None:
        glob["filename"] = place.filename
    if size is not None:
        glob["size"] = size
    glob.update(place.engine_options)
    if place.cpus_allowed is not None:  # measured and load processes share these CPUs
        glob.update(cpus_allowed=place.cpus_allowed, cpus_allowed_policy="shared")
    fill: dict[str, str | int | float] = {"rw": "write", "bs": _k(PRECONDITION_BS["fill"]), "numjobs": 1}
    rand: dict[str, str | int | float] = {
        "rw": "randwrite",
        "bs": _k(PRECONDITION_BS["random"]),
        "numjobs": 1,
        "stonewall": 1,
    }
    rand["io_size"] = 2 * size if size is not None else "200%"
    return _opened(place) + "".join(
        section(n, o) for n, o in (("global", glob), ("fill", fill), ("random", rand))
    )


def _rate(workload: Workload, total: int, jobs: int) -> str:
    """fio's rate_iops per job; a ``read,write`` pair for mixed workloads."""
    per_job = max(1, round(total / jobs))
    if workload.rw in ("randrw", "rw"):
        reads = max(1, round(per_job * workload.rwmixread / 100))
        writes = max(1, per_job - reads) if workload.rwmixread < 100 else 0
        return f"{reads},{writes}"
    return str(per_job)


def seconds(value: float) -> str:
    """A duration as fio reads it, in whole milliseconds."""
    return f"{round(value * 1000)}ms"


def section(name: str, options: Mapping[str, str | int | float]) -> str:
    """One ``[name]`` section of a job file with its ``key=value`` lines (vmio writes every job file so).

    A ``filename`` is one path: its ``:`` are escaped here (``paths.fio_name``), the one place every job
    file vmio hands to fio is written, so fio never reads it as a list of files."""
    lines = [f"[{name}]"] + [f"{key}={_value(key, value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n\n"


def _value(key: str, value: str | int | float) -> str | int | float:
    return fio_name(str(value)) if key in ESCAPED else value


ESCAPED = frozenset({"filename"})  # fio splits these at ':' (replay_redirect and the logs take one name)
