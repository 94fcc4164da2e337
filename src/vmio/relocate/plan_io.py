"""Plans as JSON: the layout, the zone, and the list of extent moves (the mapping follows from them)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vmio.errors import InputError
from vmio.relocate.layout import Layout
from vmio.relocate.planner import Moved, Plan, moved_extents
from vmio.system import files
from vmio.system.input_file import load_json

FORMAT = "vmio-relocation-plan"
VERSION = 1


def plan_zone(plan: Plan) -> dict[str, object]:
    """The ``zone`` object of a plan file."""
    e = plan.layout.extent_bytes
    return {
        "start_extent": plan.zone_start,
        "extents": plan.zone_extents,
        "start_bytes": plan.zone_start * e,
        "bytes": plan.zone_extents * e,
        "position": plan.position,
        "order": plan.order,
        "placement": plan.placement,
        "placement_reason": plan.placement_reason,
    }


def plan_to_dict(plan: Plan) -> dict[str, object]:
    """A plan file's JSON document."""
    return {
        "format": FORMAT,
        "version": VERSION,
        **plan.layout.as_dict(),
        "zone": plan_zone(plan),
        "moves": [list(m) for m in plan.moves()],
    }


MAX_INT = (1 << 63) - 1
SECTOR = 512


def _int(value: Any, name: str, lo: int = 0, hi: int = MAX_INT) -> int:
    """A JSON integer (not a bool, not a float) from ``lo`` to ``hi``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} = {_shown(value)} is not a whole number; use one from {lo} to {hi}")
    if not lo <= value <= hi:
        raise InputError(f"{name} = {_shown(value)} is out of range; use a whole number from {lo} to {hi}")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _layout(data: Mapping[str, object]) -> Layout:
    """The layout of a plan, every field checked: the extent a positive multiple of 512 bytes, the disk a
    whole number of extents, at least one image, each image inside the disk and apart from the others."""
    e = _int(data["extent_bytes"], "extent_bytes", 1)
    if e % SECTOR:
        raise InputError(f"extent_bytes = {e} is not a multiple of {SECTOR} bytes (a sector)")
    disk_bytes = _int(data["disk_bytes"], "disk_bytes", e)
    if disk_bytes % e:
        raise InputError(f"disk_bytes = {disk_bytes} is not a whole number of extents of {e} bytes")
    disk = disk_bytes // e
    images = data["images"]
    if not isinstance(images, list) or not images:
        raise InputError(f"images = {_shown(images)}: a plan needs a list of at least one image")
    names, sizes, bases = [], [], []
    for n, img in enumerate(images):
        if not isinstance(img, dict) or not isinstance(img.get("name"), str):
            raise InputError(f"images[{n}] = {_shown(img)} is not an image with a name")
        names.append(img["name"])
        sizes.append(_int(img["extents"], f"images[{n}].extents", 0, disk))
        bases.append(_int(img["base_extent"], f"images[{n}].base_extent", 0, disk - sizes[-1]))
    spans = sorted(zip(bases, sizes, names, strict=True))
    for (b1, n1, a), (b2, _n2, b) in zip(spans, spans[1:], strict=False):
        if b1 + n1 > b2:
            raise InputError(f"images {a!r} and {b!r} overlap on the disk (extents {b2} to {b1 + n1 - 1})")
    return Layout(tuple(names), tuple(sizes), tuple(bases), e, disk)


def _moved(data: Mapping[str, object], lay: Layout) -> Moved:
    """The plan's moves; each names an existing image and extent, once, and starts where that extent is
    (the mapping starts as the identity: every extent not moved stays where the layout put it)."""
    moves = data["moves"]
    if not isinstance(moves, list):
        raise InputError(f"moves = {_shown(moves)} is not a list of [image, extent, from, to]")
    dest: dict[tuple[int, int], int] = {}
    for n, move in enumerate(moves):
        if not isinstance(move, list) or len(move) != 4:
            raise InputError(f"moves[{n}] = {_shown(move)} is not [image, extent, from, to]")
        image = _int(move[0], f"moves[{n}] image", 0, len(lay.names) - 1)
        logical = _int(move[1], f"moves[{n}] extent", 0, lay.nextents[image] - 1)
        src = _int(move[2], f"moves[{n}] from", 0, lay.disk_extents - 1)
        dst = _int(move[3], f"moves[{n}] to", 0, lay.disk_extents - 1)
        if (image, logical) in dest:
            raise InputError(f"moves[{n}] moves extent {logical} of image {lay.names[image]!r} a second time")
        if lay.base[image] + logical != src:
            raise InputError(f"move {move!r} does not start where the extent is")
        dest[image, logical] = dst
    return moved_extents(lay, dest)


TOP_KEYS = ("format", "version", "extent_bytes", "disk_bytes", "images", "zone", "moves")
IMAGE_KEYS = ("name", "extents", "base_extent")
ZONE_KEYS = ("start_extent", "extents", "start_bytes", "bytes", "position", "order", "placement",
             "placement_reason")  # fmt: skip


def _known(table: Mapping[str, object], keys: tuple[str, ...], at: str) -> None:
    """A key a plan does not have (a typo such as ``moves_`` would otherwise be ignored) names itself."""
    extra = sorted(set(table) - set(keys))
    if extra:
        raise InputError(
            f"{at}{_shown(extra[0])[1:-1]} is not a field of a plan; its fields are {', '.join(keys)}"
        )


def plan_from_dict(data: Any, where: str = "plan") -> Plan:
    """Rebuild and validate a plan; errors name ``where`` and the bad field."""
    try:
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
            shown = _shown(data.get("format")) if isinstance(data, dict) else "none"
            raise InputError(f"not a {FORMAT} v{VERSION} (format={shown})")
        _known(data, TOP_KEYS, "")
        lay = _layout(data)
        for n, img in enumerate(data["images"]):
            _known(img, IMAGE_KEYS, f"images[{n}].")
        moved = _moved(data, lay)
        zone = data["zone"]
        if not isinstance(zone, dict):
            raise InputError(f"zone = {_shown(zone)} is not an object")
        _known(zone, ZONE_KEYS, "zone.")
        plan = Plan(
            lay,
            moved,
            _int(zone["start_extent"], "zone.start_extent", 0, lay.disk_extents),
            _int(zone["extents"], "zone.extents", 0, lay.disk_extents),
            str(zone["position"]),
            str(zone["order"]),
            str(zone.get("placement", "given")),
            str(zone.get("placement_reason", "")),
        )
        plan.validate()
    except KeyError as exc:
        raise InputError(f"{where}: malformed plan: the field {exc} is missing") from None
    except (TypeError, ValueError, IndexError, AttributeError) as exc:
        raise InputError(f"{where}: malformed plan ({type(exc).__name__}: {exc})") from None
    except InputError as exc:
        message = str(exc)
        raise InputError(message if message.startswith(f"{where}:") else f"{where}: {message}") from None
    return plan


def write_plan(plan: Plan, path: Path) -> None:
    files.write_atomic(path, (json.dumps(plan_to_dict(plan), indent=1) + "\n").encode())


def read_plan(path: Path) -> Plan:
    """A plan file: a regular file of UTF-8 JSON, every field checked before anything acts on it."""
    return plan_from_dict(load_json(path, "plan"), str(path))


def plan_digest(plan: Plan) -> str:
    """A short identity of the plan, kept in the apply journal so a resume uses the same plan."""
    text = json.dumps(plan_to_dict(plan), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def mapping_runs(plan: Plan) -> list[tuple[str, int, int, int]]:
    """(image, first logical extent, count, first physical extent) for each run of contiguous mapping."""
    runs: list[tuple[str, int, int, int]] = []
    for name, m in zip(plan.layout.names, plan.mapping, strict=True):
        if not len(m):
            continue
        breaks = np.flatnonzero(np.diff(m) != 1) + 1
        starts = np.concatenate([[0], breaks])
        ends = np.concatenate([breaks, [len(m)]])
        runs.extend((name, int(s), int(e - s), int(m[s])) for s, e in zip(starts, ends, strict=True))
    return runs
