"""A person's own fio job file as vmio workloads: one per job section.

The file gives the I/O pattern (rw, mix, bs, iodepth, numjobs, direct, engine and the like); vmio gives
where the I/O goes (filename/directory, size, offset), how long it runs (runtime, ramp, number of I/Os),
how it is logged and reported (output, logs, percentiles) and its rate. Those options in the file are
*replaced* and each workload lists them; any option vmio can neither keep nor replace is named, with the
file and line, in one error.

fio's job file format: ``[section]`` headers, ``key=value`` or bare ``key`` lines, comments starting with
``#`` or ``;``; a ``[global]`` section applies to the sections after it. Sections separated by
``stonewall`` run one after another in fio; vmio runs every section as its own workload, one after
another, and says so for sections fio would have run side by side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import InputError, SpecError
from vmio.spec import fio_refusals
from vmio.spec.fields import ENGINES, MAX_BLOCK
from vmio.system.input_file import read_text
from vmio.units import parse_duration, parse_size

# Options that only tune or bound a block workload (flow control, stop rules, error handling, what a log
# line carries, the options of the engines vmio runs): run as given, as the pattern is.
TUNING = frozenset(
    [
        "flow",
        "flow_id",
        "flow_sleep",
        "flow_watermark",
        "exitall",
        "exitall_on_error",
        "continue_on_error",
        "ignore_error",
        "error_dump",
        "log_prio",
        "latency_target",
        "latency_window",
        "latency_percentile",
        "latency_run",
        "max_latency",
        "rate_min",
        "rate_iops_min",
        "fadvise_hint",
        "cmdprio_percentage",
        "cmdprio_class",
        "cmdprio",
        "cmdprio_bssplit",
        "sqthread_poll_cpu",
        "userspace_reap",
        "force_async",
        "nonvectored",
        "uncached",
        "hipri_percentage",
        "busy_poll",
        "exit_what",
        "log_offset",
        "numa_cpu_nodes",
        "numa_mem_policy",
    ]
)

# Kept from the file, as written (the pattern of the I/O).
KEPT = TUNING | frozenset(
    [
        "rw",
        "readwrite",
        "rwmixread",
        "rwmixwrite",
        "bs",
        "blocksize",
        "bsrange",
        "blocksize_range",
        "bssplit",
        "blockalign",
        "ba",
        "bs_unaligned",
        "bs_is_seq_rand",
        "iodepth",
        "iodepth_batch",
        "iodepth_batch_submit",
        "iodepth_batch_complete",
        "iodepth_batch_complete_min",
        "iodepth_batch_complete_max",
        "iodepth_low",
        "numjobs",
        "direct",
        "buffered",
        "ioengine",
        "sync",
        "fsync",
        "fdatasync",
        "end_fsync",
        "fsync_on_close",
        "randrepeat",
        "randseed",
        "norandommap",
        "random_distribution",
        "random_generator",
        "percentage_random",
        "zero_buffers",
        "refill_buffers",
        "scramble_buffers",
        "buffer_pattern",
        "buffer_compress_percentage",
        "buffer_compress_chunk",
        "dedupe_percentage",
        "thinktime",
        "thinktime_spin",
        "thinktime_blocks",
        "rate_process",
        "group_reporting",
        "stonewall",
        "wait_for_previous",
        "new_group",
        "invalidate",
        "thread",
        "hipri",
        "fixedbufs",
        "registerfiles",
        "sqthread_poll",
        "nowait",
        "cpus_allowed",
        "cpus_allowed_policy",
        "cpumask",
        "nice",
        "prio",
        "prioclass",
        "verify",
        "verify_interval",
        "verify_offset",
        "verify_async",
        "verify_backlog_batch",
        "atomic",
        "dedupe_mode",
        "dedupe_global",
        "dedupe_working_set_percentage",
        "wait_for",
        "verify_fatal",
        "do_verify",
        "verify_backlog",
        "rw_sequencer",
        "file_service_type",
        "serialize_overlap",
        "io_submit_mode",
        "kb_base",
        "unit_base",
        "fallocate",
        "pre_read",
        "overwrite",
        "create_on_open",
        "ss",
        "steadystate",
        "ss_dur",
        "steadystate_duration",
        "ss_ramp",
        "steadystate_ramp_time",
    ]
)

# Given by vmio (its target and workload); the file's value is replaced and listed.
REPLACED = frozenset(
    [
        "filename",
        "directory",
        "size",
        "filesize",
        "io_size",
        "io_limit",
        "offset",
        "offset_increment",
        "nrfiles",
        "runtime",
        "time_based",
        "ramp_time",
        "number_ios",
        "loops",
        "name",
        "description",
        "output",
        "output-format",
        "write_bw_log",
        "write_lat_log",
        "write_iops_log",
        "write_hist_log",
        "log_avg_msec",
        "log_hist_msec",
        "log_hist_coarseness",
        "per_job_logs",
        "lat_percentiles",
        "clat_percentiles",
        "slat_percentiles",
        "percentile_list",
        "rate",
        "rate_iops",
        "fill_device",
        "pool",
        "rbdname",
        "clientname",
    ]
)

# Mapped onto the workload's own fields rather than copied verbatim.
MAPPED = frozenset(
    [
        "rw",
        "readwrite",
        "rwmixread",
        "rwmixwrite",
        "bs",
        "blocksize",
        "iodepth",
        "numjobs",
        "direct",
        "buffered",
        "ioengine",
    ]
)
# Meaningless for one section run on its own (vmio runs the sections one after another).
ORDERING = frozenset(["stonewall", "wait_for_previous", "new_group", "wait_for"])
STEADY_OPTIONS = frozenset(
    ["ss", "steadystate", "ss_dur", "steadystate_duration", "ss_ramp", "steadystate_ramp_time"]
)

RW_NAMES = {
    "read": "read",
    "write": "write",
    "randread": "randread",
    "randwrite": "randwrite",
    "randrw": "randrw",
    "rw": "rw",
    "readwrite": "rw",
}
_SECTION = re.compile(r"^\[([^\]]+)\]\s*$")


MAX_JOB_BYTES = 4 << 20  # a fio job file larger than this is not one


@dataclass(frozen=True)
class Option:
    key: str
    value: str | None  # None for a bare flag such as ``time_based``
    line: int

    def text(self) -> str:
        return self.key if self.value is None else f"{self.key}={self.value}"


@dataclass(frozen=True)
class Section:
    """One job section with the ``[global]`` options in force before it (global first)."""

    name: str
    line: int
    options: tuple[Option, ...]

    def get(self, key: str) -> str | None:
        """The last value of ``key`` (fio takes the last), ``"1"`` for a bare flag."""
        found = [o for o in self.options if o.key == key]
        if not found:
            return None
        return "1" if found[-1].value is None else found[-1].value


@dataclass(frozen=True)
class Pattern:
    """What vmio takes from one section: its workload fields, the options kept verbatim, those replaced."""

    section: str
    rw: str
    rwmixread: int
    bs: int  # 0: the file's block sizes are not one size and are kept verbatim
    iodepth: int
    numjobs: int
    direct: bool
    ioengine: str
    options: tuple[tuple[str, str], ...]
    replaced: tuple[str, ...]
    # The file's own runtime and ramp_time (seconds, and the option as written with file:line): kept unless
    # the workload gives its own.
    runtime: tuple[float, str] | None = None
    ramp: tuple[float, str] | None = None


def read_sections(path: Path, shown: str) -> list[Section]:
    """The job sections of fio job file ``path`` (``shown`` in messages); a bad line is a ``SpecError``."""
    try:
        text = read_text(path, "fio job file", MAX_JOB_BYTES)
    except InputError as exc:
        raise SpecError(str(exc).replace(str(path), shown)) from None
    glob: list[Option] = []
    sections: list[tuple[str, int, list[Option]]] = []
    current: list[Option] | None = None
    unsupported: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = fio_line(raw)
        if not line or line[0] in "#;":
            continue
        head = _SECTION.match(line)
        if head:
            name = head.group(1).strip()
            if name == "global":
                current = glob
            else:
                current = list(glob)
                sections.append((name, lineno, current))
            continue
        if line.startswith("include ") or "$" in line:
            unsupported.append(f"{shown}:{lineno}: {line!r} (includes and $variables are not expanded)")
            continue
        if current is None:
            raise SpecError(f"{shown}:{lineno}: {line!r} comes before any [section]")
        key, sep, value = line.partition("=")
        current.append(Option(key.strip(), value.strip() if sep else None, lineno))
    if unsupported:
        raise SpecError("vmio cannot honour these fio options:\n  " + "\n  ".join(unsupported))
    if not sections:
        raise SpecError(f"{shown}:1: the fio job file has no job section (only [global] or nothing)")
    return [Section(name, line, tuple(options)) for name, line, options in sections]


_BLANK_END = "".join(map(chr, range(33))) + "\x7f"  # fio trims blanks and control characters


def fio_line(raw: str) -> str:
    """A job file line as fio reads it (its ``strip_blank_end``): cut at the first ``;`` and then the first
    ``#`` wherever they stand, so ``numjobs=4<TAB>; 4 threads`` is ``numjobs=4``; blanks trimmed."""
    for mark in ";#":
        raw = raw.split(mark, 1)[0]
    return raw.strip().rstrip(_BLANK_END)


def patterns(path: Path, shown: str) -> list[Pattern]:
    """One ``Pattern`` per job section; every option vmio cannot honour is named in one ``SpecError``."""
    sections = read_sections(path, shown)
    names = [s.name for s in sections]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        line = [s.line for s in sections if s.name == dup][1]
        raise SpecError(f"{shown}:{line}: job section [{dup}] appears twice; vmio names workloads by section")
    problems: list[str] = []
    out = []
    for i, sec in enumerate(sections):
        for opt in sec.options:
            if opt.key not in KEPT and opt.key not in REPLACED:
                own = f" (in [{sec.name}])" if opt.line > sec.line else " (in [global])"
                problems.append(f"{shown}:{opt.line}: {opt.text()}{own}: {fio_refusals.reason(opt.key)}")
        try:
            out.append(_pattern(sec, shown, beside=_beside(sections, i)))
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        unique = list(dict.fromkeys(problems))  # a [global] option shows once, not per section
        raise SpecError(
            "vmio cannot honour these fio options: " + "; ".join(unique) + " (vmio sets filename, size, "
            "runtime, logs and rate itself; the rest must be an I/O pattern it can measure: "
            "docs/fio-files.md lists each option's class)"
        )
    return out


def _beside(sections: list[Section], i: int) -> list[str]:
    """The sections fio would run at the same time as section ``i`` (no stonewall between them)."""

    def starts_group(s: Section) -> bool:
        return s.get("stonewall") not in (None, "0") or s.get("wait_for_previous") not in (None, "0")

    start = i
    while start > 0 and not starts_group(sections[start]):
        start -= 1
    end = i + 1
    while end < len(sections) and not starts_group(sections[end]):
        end += 1
    return [s.name for s in sections[start:end] if s.name != sections[i].name]


def _pattern(sec: Section, shown: str, beside: list[str]) -> Pattern:
    def where(key: str) -> str:
        line = max((o.line for o in sec.options if o.key == key), default=sec.line)
        return f"{shown}:{line}"

    rw_text = sec.get("rw") or sec.get("readwrite") or "read"
    base = rw_text.split(":")[0]
    if base not in RW_NAMES:
        raise ValueError(
            f"{where('rw')}: rw={rw_text} (in [{sec.name}]); vmio measures read, write, "
            "randread, randwrite, randrw and rw"
        )
    rw = RW_NAMES[base]
    engine = sec.get("ioengine") or "psync"
    if engine not in ENGINES:
        raise ValueError(
            f"{where('ioengine')}: ioengine={engine} (in [{sec.name}]): {fio_refusals.engine_reason(engine)}; "
            f"vmio runs {', '.join(ENGINES)}"
        )
    mix = 50
    if sec.get("rwmixread") is not None:
        mix = _int(sec.get("rwmixread"), where("rwmixread"), "rwmixread", 0, 100)
    elif sec.get("rwmixwrite") is not None:
        mix = 100 - _int(sec.get("rwmixwrite"), where("rwmixwrite"), "rwmixwrite", 0, 100)
    bs_text = sec.get("bs") or sec.get("blocksize") or "4k"
    _check_block_sizes(bs_text, where("bs" if sec.get("bs") else "blocksize"))
    bs = 0
    if (
        re.fullmatch(r"[0-9]+[kKmMgG]?[iI]?[bB]?", bs_text)
        and sec.get("bsrange") is None
        and sec.get("bssplit") is None
    ):
        try:
            bs = parse_size(bs_text)
        except ValueError:
            bs = 0
    direct = sec.get("direct") not in (None, "0") or sec.get("buffered") == "0"
    options: list[tuple[str, str]] = []
    replaced: list[str] = []
    timing: dict[str, tuple[float, str]] = {}
    for opt in sec.options:
        if opt.key in TIMING and (seconds := _fio_time(opt.value)) is not None:
            timing[opt.key] = (seconds, f"{opt.text()} ({shown}:{opt.line})")
        elif opt.key in REPLACED:
            replaced.append(f"{opt.text()} ({shown}:{opt.line})")
        elif (
            opt.key in ORDERING
            or opt.key in MAPPED
            and not (opt.key in ("rw", "readwrite") and ":" in rw_text)
            and not (opt.key in ("bs", "blocksize") and bs == 0)
        ):
            continue
        elif opt.key in KEPT:
            options.append((opt.key, "1" if opt.value is None else opt.value))
    if beside:
        replaced.append(f"ran alone: in the file [{sec.name}] runs beside {', '.join(beside)} (no stonewall)")
    return Pattern(
        section=sec.name,
        rw=rw,
        rwmixread=mix,
        bs=bs,
        iodepth=_int(sec.get("iodepth") or "1", where("iodepth"), "iodepth", 1, 65536),
        numjobs=_int(sec.get("numjobs") or "1", where("numjobs"), "numjobs", 1, 1024),
        direct=direct,
        ioengine=engine,
        options=tuple(options),
        replaced=tuple(replaced),
        runtime=timing.get("runtime"),
        ramp=timing.get("ramp_time"),
    )


TIMING = frozenset(["runtime", "ramp_time"])


def _fio_time(text: str | None) -> float | None:
    """Seconds of a fio time value (``60``, ``60s``, ``500ms``, ``2m``; fio's bare number is seconds);
    None when it is not one vmio reads (then the option is replaced)."""
    try:
        seconds = parse_duration(text or "")
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _check_block_sizes(text: str, where: str) -> None:
    """Each size in a ``bs`` value (``4k``, ``4k,64k``) that reads as a size must be a block fio can move."""
    for part in text.split(","):
        try:
            n = parse_size(part.strip())
        except ValueError:
            continue  # a form vmio does not read (ranges, splits): fio checks it
        if n > MAX_BLOCK:
            raise SpecError(
                f"{where}: bs = {text!r} is {n} bytes, too large a block; use up to 1G such as '4k'"
            )


def _int(text: str | None, where: str, key: str, low: int, high: int) -> int:
    try:
        value = int(str(text))
    except ValueError:
        raise ValueError(f"{where}: {key}={text} is not a whole number") from None
    if not low <= value <= high:
        raise ValueError(f"{where}: {key}={text} is outside {low}..{high}")
    return value
