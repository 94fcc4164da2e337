"""The ranges of the figures ``vmio import`` reads from fio's JSON, checked before anything is stored.

fio writes counts, times and rates that are never negative and fit its own 64-bit counters, percentiles
keyed by a share in (0, 100], and a device busy % from 0 to 100. A file with a figure outside its range was
not written by fio as it ran (or was edited since): it is refused with the file, the field's place in the
document and its value, and nothing is stored. A range excludes nan and the infinities too, so a non-finite
figure is refused here as well (whichever check sees it first names it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vmio.errors import InputError

MAX_COUNT = (1 << 63) - 1  # fio's counters are 64-bit; SQLite's integers too
MAX_RUNTIME_MS = 366 * 86400 * 1000  # a run of more than a year is not a run fio reported
DIRECTIONS = ("read", "write", "trim")
LATENCIES = ("lat_ns", "clat_ns", "slat_ns")

Check = Callable[[object], str | None]  # None: in range; else what the value should be


def check_document(doc: Mapping[str, Any], path: Path) -> None:
    """Every figure of fio's ``doc`` that vmio reads is inside its range, else an ``InputError`` naming
    ``path``, the field and its value."""
    jobs = doc.get("client_stats") if "client_stats" in doc else doc.get("jobs")
    if not isinstance(jobs, list):
        raise InputError(f"{path}: 'jobs' is {_kind(jobs)}, not fio's list of jobs")
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise InputError(f"{path}: jobs[{i}] is {_kind(job)}, not one of fio's jobs")
        _job(job, f"jobs[{i}]", path)
    for i, disk in enumerate(doc.get("disk_util") or []):
        if isinstance(disk, dict):
            _field(disk, "util", _pct, f"disk_util[{i}]", path)
            for key in ("read_ios", "write_ios", "read_ticks", "write_ticks", "in_queue"):
                _field(disk, key, _count, f"disk_util[{i}]", path)
    _field(doc, "timestamp", _count, "", path)
    _field(doc, "timestamp_ms", _count, "", path)


def _job(job: Mapping[str, Any], at: str, path: Path) -> None:
    for key in ("usr_cpu", "sys_cpu"):
        _field(job, key, _non_negative, at, path)
    _field(job, "job_runtime", _runtime, at, path)
    options = job.get("job options")
    if isinstance(options, dict):
        _option_runtime(options, f"{at}['job options']", path)
    for ddir in DIRECTIONS:
        d = job.get(ddir)
        if not isinstance(d, dict):
            continue
        where = f"{at}.{ddir}"
        for key in ("total_ios", "io_bytes", "short_ios", "drop_ios"):
            _field(d, key, _count, where, path)
        _field(d, "runtime", _runtime, where, path)
        for key in ("iops", "bw_bytes", "bw"):
            _field(d, key, _non_negative, where, path)
        for lat in LATENCIES:
            _latency(d.get(lat), f"{where}.{lat}", path)


def _latency(lat: object, at: str, path: Path) -> None:
    if not isinstance(lat, dict):
        return
    for key in ("min", "max", "mean", "stddev"):
        _field(lat, key, _non_negative, at, path)
    for name in ("percentile", "bins"):
        table = lat.get(name)
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            filler = value == 0 and _number_key(key) == 0  # fio before 3.4 pads its list with "0.00": 0
            if name == "percentile" and not (_share(key) or filler):
                raise InputError(
                    f"{path}: {at}.percentile has the key {_show(key)}, not a percentile; fio keys them "
                    "by a share from 0 to 100 such as '99.000000'"
                )
            if name == "bins" and _count(_number_key(key)) is not None:
                raise InputError(
                    f"{path}: {at}.bins has the key {_show(key)}, not a latency in ns; fio keys them by "
                    f"a whole number from 0 to {MAX_COUNT}"
                )
            _value(value, _count, f"{at}.{name}[{key!r}]", path)


def _option_runtime(options: Mapping[str, Any], at: str, path: Path) -> None:
    """fio's ``runtime`` option as it recorded it (text, seconds by default): never negative."""
    text = str(options.get("runtime", "")).strip()
    if text.startswith("-"):
        raise InputError(f"{path}: {at}.runtime = {_show(text)} is negative; fio's runtime is 0 or more")


def _field(table: Mapping[str, Any], key: str, check: Check, at: str, path: Path) -> None:
    if key in table:
        _value(table[key], check, f"{at}.{key}" if at else key, path)


def _value(value: object, check: Check, at: str, path: Path) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return  # not a number: fio's own shape checks say so where it is read
    wrong = check(value)
    if wrong is not None:
        raise InputError(f"{path}: {at} = {_show(value)} is out of range; fio writes {wrong}")


def _count(value: object) -> str | None:
    ok = isinstance(value, int | float) and 0 <= value <= MAX_COUNT
    return None if ok else f"a whole number from 0 to {MAX_COUNT} (2**63-1) there"


def _runtime(value: object) -> str | None:
    ok = isinstance(value, int | float) and 0 <= value <= MAX_RUNTIME_MS
    return None if ok else f"a run's milliseconds there, from 0 to {MAX_RUNTIME_MS} (366 days)"


def _non_negative(value: object) -> str | None:
    ok = isinstance(value, int | float) and 0 <= value <= MAX_COUNT  # nan and inf are outside too
    return None if ok else f"a figure from 0 to {MAX_COUNT} there"


def _pct(value: object) -> str | None:
    ok = isinstance(value, int | float) and 0 <= value <= 100
    return None if ok else "a busy % from 0 to 100 there"


def _share(key: object) -> bool:
    try:
        share = float(str(key))
    except ValueError:
        return False
    return math.isfinite(share) and 0 < share <= 100


def _number_key(key: object) -> float:
    try:
        return float(str(key))
    except ValueError:
        return -1.0


def _kind(value: object) -> str:
    return "missing" if value is None else f"a {type(value).__name__}"


def _show(value: object) -> str:
    """The value as the message shows it: a number too long to print is named by its digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a {math.floor(value.bit_length() * math.log10(2)) + 1}-digit number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
