"""A campaign's spec model restored from what the store kept: targets and workloads from its canonical
JSON (self-contained: no fio job file or spec folder needed), the ``[campaign]`` table (repetitions, sla,
seed) from the stored spec text, read by the same field rules as ``load``."""

from __future__ import annotations

import json
import tomllib
from typing import Any

from vmio.spec import fields as f
from vmio.spec.load import MAX_SEED
from vmio.spec.model import Campaign, HostTarget, QemuTarget, RbdTarget, RemoteTarget, Target, Workload
from vmio.spec.series import series_name, until_stable
from vmio.spec.sla import Sla, parse_stored_sla
from vmio.spec.steady import parse_steady
from vmio.spec.tomlfile import Locator

KINDS: dict[str, type[HostTarget] | type[QemuTarget] | type[RemoteTarget] | type[RbdTarget]] = {
    "host": HostTarget,
    "qemu": QemuTarget,
    "remote": RemoteTarget,
    "rbd": RbdTarget,
}


def restore(name: str, spec_text: str | None, canonical: str | None, path: str = "<spec>") -> Campaign:
    """The stored campaign as its model; a ``ValueError`` names what no longer reads."""
    body = json.loads(canonical or "{}")  # a JSON boundary: the store's canonical text
    targets = tuple(_target(t) for t in body.get("targets", []))
    workloads = tuple(_workload(w) for w in body.get("workloads", []))
    try:
        head = tomllib.loads(spec_text or "").get("campaign", {})
    except tomllib.TOMLDecodeError:  # not a spec vmio ran (vmio stores the text that loaded): no [campaign]
        head = {}
    loc = Locator.scan(path, spec_text or "")
    table = f.Fields(head, loc, "campaign")
    repetitions = table.take("repetitions", f.integer(1, 1000), 1)
    sla: Sla | None = table.take("sla", parse_stored_sla, None)  # older stores may hold a bare number
    seed: int | None = table.take("seed", f.integer(0, MAX_SEED), body.get("seed"))
    series: str | None = table.take("series", series_name, None)
    until = until_stable(table, repetitions)
    layers: bool = table.take("layers", f.boolean, False)
    return Campaign(name, repetitions, targets, workloads, path, sla, seed, series, until, layers)


def _target(data: dict[str, Any]) -> Target:
    kind = data.get("kind", "host")
    cls = KINDS.get(kind)
    if cls is None:
        raise ValueError(f"stored target {data.get('name')!r} has an unknown kind {kind!r}")
    given: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    return cls(**given)


def _workload(data: dict[str, Any]) -> Workload:
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    if "fio_options" in fields:
        fields["fio_options"] = tuple(tuple(pair) for pair in data["fio_options"])
    if fields.get("steady") is not None:
        fields["steady"] = parse_steady(fields["steady"])
    if isinstance(fields.get("stop_at"), str):  # kept as Sla's text, "p99<=5ms"
        fields["stop_at"] = parse_stored_sla(fields["stop_at"].replace("<=", "=", 1))
    return Workload(**fields)


Change = tuple[str, str, str, object, object]  # table ("target" | "workload"), its name, key, stored, new


def changes(stored: str, new: str) -> list[Change]:
    """What differs between a stored campaign's canonical text and a new one: per target and workload (by
    name) each key whose value changed (None: absent on that side); a name only on one side is its key
    ``""`` with the name as value. ``fio_replaced`` (derived from the others) is left out unless it is all."""
    old_body, new_body = json.loads(stored or "{}"), json.loads(new or "{}")
    found: list[Change] = []
    for table in ("target", "workload"):
        old_items = {str(t.get("name")): t for t in old_body.get(f"{table}s", [])}
        new_items = {str(t.get("name")): t for t in new_body.get(f"{table}s", [])}
        for name in [*old_items, *(n for n in new_items if n not in old_items)]:
            a, b = old_items.get(name), new_items.get(name)
            if a is None or b is None:
                found.append((table, name, "", name if a else None, name if b else None))
                continue
            found += [(table, name, k, a.get(k), b.get(k)) for k in sorted({*a, *b}) if a.get(k) != b.get(k)]
    if old_body.get("seed") != new_body.get("seed"):
        found.append(("campaign", "", "seed", old_body.get("seed"), new_body.get("seed")))
    plain = [c for c in found if c[2] != "fio_replaced"]
    return plain or found
