"""A ``Campaign`` written back as spec TOML that ``vmio.spec.loads_spec`` reads to an equal campaign.

``vmio tune`` stores the changed spec as the tuned campaign's spec text, so the text must say exactly
what ran: every field is written out (defaults included), sizes in bytes and durations in seconds.
"""

from __future__ import annotations

import json
from dataclasses import fields

from vmio.spec.model import NEWER_FIELDS, Campaign, LibvirtDomain, Target, Workload


def dumps(campaign: Campaign, comment: str = "") -> str:
    """The TOML text of ``campaign``; ``comment`` lines go on top as ``#`` comments."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()]
    lines += ["[campaign]", f"name = {_value(campaign.name)}", f"repetitions = {campaign.repetitions}"]
    if campaign.sla is not None:
        lines.append(f'sla = "{campaign.sla.metric}={campaign.sla.bound_ms:g}ms"')
    if campaign.seed is not None:
        lines.append(f"seed = {campaign.seed}")
    if campaign.series is not None:
        lines.append(f"series = {_value(campaign.series)}")
    if campaign.until is not None:
        lines.append(f'until_spread = "{campaign.until.bound * 100:g}%"')
        lines.append(f"max_repetitions = {campaign.until.max_repetitions}")
    if campaign.layers:
        lines.append("layers = true")
    for target in campaign.targets:
        lines += ["", "[[target]]", *_table(target)]
    for workload in campaign.workloads:
        lines += ["", "[[workload]]", *_table(workload)]
    return "\n".join(lines) + "\n"


def _table(item: Target | Workload) -> list[str]:
    if isinstance(item, Workload) and item.fio_file is not None:
        raise ValueError(
            f"workload {item.name!r} comes from the fio job file {item.fio_file}; "
            "write its [[workload]] table by hand"
        )
    out = []
    first = {"name": 0, "kind": 1}  # a table reads best starting with what it is
    for f in sorted(fields(item), key=lambda f: first.get(f.name, 2)):
        value = getattr(item, f.name)
        if value is None or (f.name in NEWER_FIELDS and value == NEWER_FIELDS[f.name]):
            continue
        if f.name in ("iodepth_sweep", "numjobs_sweep", "jobs_per_vm_sweep"):
            continue  # written as the list of the key they sweep
        swept = f"{f.name}_sweep"
        if getattr(item, swept, ()):
            value = getattr(item, swept)
        if f.name == "steady":
            value = str(value)
        if f.name == "stop_at":
            value = f"{value.metric}={value.bound_ms:g}ms"
        if f.name == "offered_iops":
            value = ["max" if v is None else v for v in value]
        if (f.name, value) in (("arrivals", "uniform"), ("guest_layers", False)):
            continue  # defaults of fields added later: older campaigns keep their text
        out.append(f"{f.name} = {_value(value)}")
    return out


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, LibvirtDomain):
        return f"{{uri = {_value(value.uri)}, name = {_value(value.name)}}}"
    raise TypeError(f"cannot write {value!r} as a spec value")
