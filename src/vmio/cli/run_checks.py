"""What ``vmio run`` checks before it opens a store or prints a progress line, in the syntax the user typed:
a job file's flags (``--target``, ``--size``, ``--runtime``, ``--name``) as flags, a spec's fields as fields.

- each flag's value, read by the rule its spec field has (a path the kernel can open, a size, a duration);
- a target file that does not exist and has no size to be created with;
- a campaign already stored with other targets or workloads: each difference (what, stored, now) and the flag
  or field that runs it as it was, or as a new campaign.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from vmio import spec
from vmio.errors import InputError
from vmio.spec import fields as f
from vmio.spec.stored import Change, changes
from vmio.store import Store
from vmio.system.safety import is_block_device
from vmio.units import format_size, parse_duration

# a job file's run: the flag that sets each field of its one-target spec
FLAGS = {("target", "path"): "--target", ("target", "size"): "--size", ("workload", "runtime"): "--runtime"}


def check_job_flags(args: argparse.Namespace) -> None:
    """``vmio run JOBFILE --target PATH [--size] [--runtime] [--name]``: each flag's value, and a target that
    can be opened or created, as one sentence naming the flag."""
    _flag("--target", args.target, f.path)
    _flag("--size", args.size, f.size)
    _flag("--runtime", args.runtime, _positive_duration)
    _flag("--name", args.name, f.name)


def check_job_target(args: argparse.Namespace) -> None:
    """A job file's ``--target`` that does not exist needs ``--size`` to be created (said before a run starts)."""
    target = Path(args.target)
    if args.size is None and not target.exists() and not is_block_device(args.target):
        raise InputError(
            f"--target {args.target}: no such file; give its size so vmio can create it, e.g. "
            f"vmio run {args.spec} --target {args.target} --size 1G"
        )


def _flag(flag: str, value: str | None, check: Callable[[object], object]) -> None:
    if value is None:
        return
    try:
        check(value)
    except ValueError as exc:
        raise InputError(f"{flag} {_short(value)}: {exc}") from None


def _positive_duration(value: object) -> float:
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError("must be longer than zero, e.g. 10s")
    return seconds


def check_rerun(args: argparse.Namespace, camp: spec.Campaign, db: str, job_file: bool) -> None:
    """A campaign of this name stored with done points and other targets or workloads: refused before
    anything starts, naming each difference and how to run it (as stored, or as a new campaign)."""
    if not os.path.exists(db):
        return
    with Store(db, readonly=True) as store:
        row = store.campaign(camp.name)
        if row is None or row["canonical"] == camp.canonical() or not store.done_keys(camp.name):
            return
        found = changes(row["canonical"], camp.canonical())
    if not found:
        return
    lines = list(dict.fromkeys(_said(c, job_file) for c in found))  # a flag sets every workload's runtime
    said = "; ".join(lines[:4]) + ("; ..." if len(lines) > 4 else "")
    if job_file:
        again = list(dict.fromkeys(_flag_as_stored(c) for c in found if (c[0], c[2]) in FLAGS))
        fix = f"run it as stored ({' '.join(a for a in again if a)})" if again else "run the stored job file"
        raise InputError(
            f"campaign {camp.name!r} is already stored with other settings: {said}; {fix}, or give --name NEW "
            f"to store this run as a new campaign (vmio rm {camp.name} drops the stored one)"
        )
    raise InputError(
        f"campaign {camp.name!r} is already stored with other targets or workloads: {said}; give the changed "
        f"spec a new [campaign] name (or run it with --name NEW), or vmio rm {camp.name} to drop the stored one"
    )


def _said(change: Change, job_file: bool) -> str:
    table, name, key, old, new = change
    if not key:
        return f"{table} {name!r} is {'only stored' if new is None else 'new'}"
    flag = FLAGS.get((table, key)) if job_file else None
    if flag is not None:
        return f"{flag} was {_value(key, old)}, now {_value(key, new)}"
    where = f"{table} {name!r} {key}" if name else f"{table}.{key}"
    return f"{where} = {_value(key, old)} stored, {_value(key, new)} now"


def _flag_as_stored(change: Change) -> str:
    table, _, key, old, _ = change
    flag = FLAGS[(table, key)]
    return "" if old is None else f"{flag} {_value(key, old)}"


def _value(key: str, value: object) -> str:
    if value is None:
        return "not given"
    if key == "size" and isinstance(value, int):
        return format_size(value)
    if key == "runtime" and isinstance(value, int | float):
        return f"{value:g}s"
    return _short(value)


def _short(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
