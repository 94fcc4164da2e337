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
import shutil
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol

from vmio.errors import InputError, SpecError
from vmio.spec import fio_refusals
from vmio.spec.fields import ENGINES, MAX_BLOCK
from vmio.system.input_file import read_text
from vmio.units import fio_size, parse_duration, parse_size

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

# Mapped onto the workload's own fields rather than copied verbatim (by fio's own names: an alias such as
# ``readwrite`` is read as the option it names, ``rw``).
MAPPED = frozenset(
    [
        "rw",
        "rwmixread",
        "rwmixwrite",
        "bs",
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
MAX_SECTIONS = 10_000  # job sections in one file (docs/security.md); reading is linear below it
MAX_GLOBAL_OPTIONS = 256  # option lines in the file's [global] sections together: each section carries them

# fio 3.33's aliases (``fio --cmdhelp=OPTION`` names each): used only where no fio was asked (a library caller
# that passes no ``OptionNames``); ``vmio run`` and every command that runs a job asks the installed fio
# (``vmio.fio.options.names``)
FIO_3_33_ALIASES = {
    "blockalign": "ba",
    "blocksize": "bs",
    "blocksize_range": "bsrange",
    "blocksize_unaligned": "bs_unaligned",
    "disable_bw": "disable_bw_measurement",
    "fileoffset": "offset",
    "fill_fs": "fill_device",
    "io_limit": "io_size",
    "iodepth_batch_complete": "iodepth_batch_complete_min",
    "iodepth_batch_submit": "iodepth_batch",
    "iomem": "mem",
    "nr_files": "nrfiles",
    "ratecycle": "rate_cycle",
    "ratemin": "rate_min",
    "readwrite": "rw",
    "ss": "steadystate",
    "ss_dur": "steadystate_duration",
    "ss_ramp": "steadystate_ramp_time",
    "timeout": "runtime",
    "wait_for_previous": "stonewall",
}


class OptionNames(Protocol):
    """fio's names for its options: ``canonical(key)`` is the option ``key`` names (``rw`` for
    ``readwrite``; ``key`` itself for an option's own name or a name fio does not know)."""

    def canonical(self, key: str) -> str: ...


@dataclass(frozen=True)
class KnownNames:
    """Option names from a fixed table of aliases (``BUILT_IN``: fio 3.33's)."""

    aliases: Mapping[str, str]
    source: str = "fio 3.33 (built in)"

    def canonical(self, key: str) -> str:
        return self.aliases.get(key, key)


BUILT_IN = KnownNames(FIO_3_33_ALIASES)


def built_in() -> OptionNames:
    return BUILT_IN


@dataclass(frozen=True)
class Option:
    key: str  # as written
    value: str | None  # None for a bare flag such as ``time_based``
    line: int
    name: str = ""  # fio's own name of the option (``rw`` for ``readwrite``); ``key`` when empty

    def text(self) -> str:
        return self.key if self.value is None else f"{self.key}={self.value}"

    @property
    def option(self) -> str:
        return self.name or self.key


@dataclass(frozen=True)
class Section:
    """One job section with the ``[global]`` options in force before it (global first), read as fio reads
    it: the last of an option and its aliases wins."""

    name: str
    line: int
    options: tuple[Option, ...]

    @cached_property
    def _last(self) -> dict[str, Option]:
        return {o.option: o for o in self.options}

    def get(self, key: str) -> str | None:
        """The value in force of option ``key`` (fio's own name; any alias of it counts, the last wins),
        ``"1"`` for a bare flag."""
        found = self._last.get(key)
        if found is None:
            return None
        return "1" if found.value is None else found.value

    def values(self) -> list[Option]:
        """The option in force for each option set, by fio's name, in the order first set."""
        return list(self._last.values())

    def set_at(self, key: str) -> int:
        """The line that set option ``key`` last; 0 when nothing did."""
        found = self._last.get(key)
        return 0 if found is None else found.line

    def line_of(self, key: str) -> int:
        """The line of the value in force of option ``key`` (the section's header when it is not set)."""
        found = self._last.get(key)
        return self.line if found is None else found.line


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


def read_sections(path: Path, shown: str, names: OptionNames = BUILT_IN) -> list[Section]:
    """The job sections of fio job file ``path`` (``shown`` in messages); a bad line is a ``SpecError``.

    Each option is known by fio's own name (``names``); one section (``[global]`` included) that sets an
    option twice, by any of its names, with different values is refused naming both lines. Time is linear
    in the file's size: at most ``MAX_SECTIONS`` sections and ``MAX_GLOBAL_OPTIONS`` global options."""
    try:
        text = read_text(path, "fio job file", MAX_JOB_BYTES)
    except InputError as exc:
        raise SpecError(str(exc).replace(str(path), shown)) from None
    glob: list[Option] = []
    sections: list[tuple[str, int, list[Option]]] = []
    current: list[Option] | None = None
    own: dict[str, Option] = {}  # the current section's own options by fio's name
    where = ""
    unsupported: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = fio_line(raw)
        if not line or line[0] in "#;":
            continue
        head = _SECTION.match(line)
        if head:
            name = head.group(1).strip()
            own, where = {}, f"[{name}]"
            if name == "global":
                current = glob
            else:
                if len(sections) == MAX_SECTIONS:
                    raise SpecError(
                        f"{shown}:{lineno}: [{name}] is job section {MAX_SECTIONS + 1}; vmio reads at most "
                        f"{MAX_SECTIONS} sections from one fio job file"
                    )
                current = list(glob)
                sections.append((name, lineno, current))
            continue
        if line.startswith("include ") or "$" in line:  # named, not quoted: it may not be a job file
            unsupported.append(f"{shown}:{lineno}: an include or a $variable (vmio expands neither)")
            continue
        if current is None:
            raise SpecError(
                f"{shown}:{lineno}: a line before any [section]; this is not a fio job file "
                "(vmio does not show the text of a file that is not the input it claims to be)"
            )
        key, sep, value = line.partition("=")
        key = key.strip()
        opt = Option(key, value.strip() if sep else None, lineno, names.canonical(key))
        before = own.get(opt.option)
        if before is not None and before.value != opt.value:
            raise SpecError(
                f"{shown}:{before.line}: {_shown(before)} and {shown}:{lineno}: {_shown(opt)} in {where} set "
                f"fio's option {opt.option!r} twice with different values (fio would take the last); "
                "keep one"
            )
        own[opt.option] = opt
        if current is glob and len(glob) == MAX_GLOBAL_OPTIONS:
            raise SpecError(
                f"{shown}:{lineno}: more than {MAX_GLOBAL_OPTIONS} option lines in [global]; vmio reads at "
                f"most {MAX_GLOBAL_OPTIONS} (each job section carries them)"
            )
        current.append(opt)
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


def patterns(path: Path, shown: str, names: OptionNames = BUILT_IN) -> list[Pattern]:
    """One ``Pattern`` per job section, each read as fio (``names``: its option names) reads it; every
    option vmio cannot honour is named in one ``SpecError``."""
    sections = read_sections(path, shown, names)
    first: dict[str, int] = {}
    for s in sections:
        if s.name in first:
            raise SpecError(
                f"{shown}:{s.line}: job section [{s.name}] appears twice; vmio names workloads by section"
            )
        first[s.name] = s.line
    problems: list[str] = []
    out = []
    groups = _groups(sections)
    sizes = Counter(groups)
    for i, sec in enumerate(sections):
        for opt in sec.options:
            if opt.option not in KEPT and opt.option not in REPLACED:
                own = f" (in [{sec.name}])" if opt.line > sec.line else " (in [global])"
                problems.append(f"{shown}:{opt.line}: {_shown(opt)}{own}: {fio_refusals.reason(opt.key)}")
        try:
            out.append(_pattern(sec, shown, beside=_beside(sections, groups, sizes, i)))
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


def quotable(key: str) -> bool:
    """Whether an option of a job file may be shown with its value in an error: only when it is one of fio's
    options, by vmio's table of them (``fio_refusals.REFUSED``) or the installed fio (``fio_knows``). A file
    with lines fio does not know may not be a job file at all (root may have been handed ``/etc/shadow`` or
    a Ceph keyring): their values are never shown."""
    return key in fio_refusals.REFUSED or (shutil.which("fio") is not None and fio_refusals.fio_knows(key))


def _shown(opt: Option) -> str:
    """``key=value`` of an option fio knows; of one it does not, the name alone when it looks like an
    option name, else nothing of the line (docs/security.md, part 4)."""
    if opt.option != opt.key or quotable(opt.key):  # an alias fio's names resolved is an option fio knows
        return opt.text()
    return opt.key if _OPTION_NAME.fullmatch(opt.key) else "a line fio does not read as an option"


_OPTION_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _groups(sections: list[Section]) -> list[int]:
    """For each section, the index of the first section of its group: the sections fio runs at the same
    time (a ``stonewall``, by any of its names, starts a new group). One pass over the sections."""
    starts, start = [], 0
    for i, s in enumerate(sections):
        if i and s.get("stonewall") not in (None, "0"):
            start = i
        starts.append(start)
    return starts


BESIDE_SHOWN = 5  # a section run beside more sections than this names the first few and counts the rest


def _beside(sections: list[Section], groups: list[int], sizes: Counter[int], i: int) -> str | None:
    """The sections fio would run at the same time as section ``i`` (no stonewall between them), at most
    ``BESIDE_SHOWN`` named and the rest counted; None when it runs alone in the file too."""
    start = groups[i]
    others = sizes[start] - 1
    if not others:
        return None
    names = [s.name for s in sections[start : start + BESIDE_SHOWN + 1] if s is not sections[i]]
    shown = ", ".join(names[:BESIDE_SHOWN])
    return shown if others <= BESIDE_SHOWN else f"{shown} and {others - BESIDE_SHOWN} more"


def _pattern(sec: Section, shown: str, beside: str | None) -> Pattern:
    def where(key: str) -> str:
        return f"{shown}:{sec.line_of(key)}"

    rw_text = sec.get("rw") or "read"
    base = rw_text.split(":")[0]
    if base not in RW_NAMES:
        raise ValueError(
            f"{where('rw')}: {_written(sec, 'rw')} (in [{sec.name}]); vmio measures read, write, "
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
    # rwmixread and rwmixwrite set one split, direct and buffered one flag: the later line wins, as in fio
    if sec.set_at("rwmixread") > sec.set_at("rwmixwrite"):
        mix = _int(sec.get("rwmixread"), where("rwmixread"), "rwmixread", 0, 100)
    elif sec.get("rwmixwrite") is not None:
        mix = 100 - _int(sec.get("rwmixwrite"), where("rwmixwrite"), "rwmixwrite", 0, 100)
    bs_text = sec.get("bs") or "4k"
    _check_block_sizes(bs_text, where("bs"))
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
    if sec.set_at("direct") > sec.set_at("buffered"):
        direct = sec.get("direct") != "0"
    else:
        direct = sec.get("buffered") == "0"
    options: list[tuple[str, str]] = []
    replaced: list[str] = []
    timing: dict[str, tuple[float, str]] = {}
    for opt in sec.values():  # the value in force of each option, by fio's name
        name = opt.option
        if name in TIMING and (seconds := _fio_time(opt.value)) is not None:
            timing[name] = (seconds, f"{opt.text()} ({shown}:{opt.line})")
        elif name in REPLACED:
            replaced.append(f"{opt.text()} ({shown}:{opt.line})")
        elif (
            name in ORDERING
            or name in MAPPED
            and not (name == "rw" and ":" in rw_text)
            and not (name == "bs" and bs == 0)
        ):
            continue
        elif name in KEPT:
            options.append((name, "1" if opt.value is None else opt.value))
    if beside:
        replaced.append(f"ran alone: in the file [{sec.name}] runs beside {beside} (no stonewall)")
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


def _written(sec: Section, key: str) -> str:
    """Option ``key`` of ``sec`` as the file wrote the value in force (``readwrite=trim``)."""
    found = sec._last.get(key)
    return f"{key}=" if found is None else found.text()


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
        n = fio_size(part.strip())
        if n is None:
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
