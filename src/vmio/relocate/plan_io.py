"""Plans as JSON: the layout, the zone, and the list of extent moves (the mapping follows from them)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from vmio.errors import InputError
from vmio.relocate.layout import Layout
from vmio.relocate.planner import Plan
from vmio.system import files

FORMAT = "vmio-relocation-plan"
VERSION = 1


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    lay = plan.layout
    return {
        "format": FORMAT,
        "version": VERSION,
        **lay.as_dict(),
        "zone": {
            "start_extent": plan.zone_start,
            "extents": plan.zone_extents,
            "start_bytes": plan.zone_start * lay.extent_bytes,
            "bytes": plan.zone_extents * lay.extent_bytes,
            "position": plan.position,
            "order": plan.order,
            "placement": plan.placement,
            "placement_reason": plan.placement_reason,
        },
        "moves": [list(m) for m in plan.moves()],
    }


def plan_from_dict(data: Any, where: str = "plan") -> Plan:
    """Rebuild and validate a plan; errors name ``where`` and the bad field."""
    try:
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise InputError(f"{where}: not a {FORMAT} v{VERSION} (format={data.get('format')!r})")
        images = data["images"]
        lay = Layout(
            tuple(str(i["name"]) for i in images),
            tuple(int(i["extents"]) for i in images),
            tuple(int(i["base_extent"]) for i in images),
            int(data["extent_bytes"]),
            int(data["disk_bytes"]) // int(data["extent_bytes"]),
        )
        mapping = [b + np.arange(n, dtype=np.int64) for b, n in zip(lay.base, lay.nextents, strict=True)]
        for image, logical, src, dst in data["moves"]:
            if mapping[image][logical] != src:
                raise InputError(
                    f"{where}: move {[image, logical, src, dst]!r} does not start where the extent is"
                )
            mapping[image][logical] = dst
        zone = data["zone"]
        plan = Plan(
            lay,
            tuple(mapping),
            int(zone["start_extent"]),
            int(zone["extents"]),
            str(zone["position"]),
            str(zone["order"]),
            str(zone.get("placement", "given")),
            str(zone.get("placement_reason", "")),
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise InputError(f"{where}: malformed plan ({type(exc).__name__}: {exc})") from None
    except InputError as exc:
        message = str(exc)
        raise InputError(message if message.startswith(f"{where}:") else f"{where}: {message}") from None
    plan.validate()
    return plan


def write_plan(plan: Plan, path: Path) -> None:
    files.write_atomic(path, (json.dumps(plan_to_dict(plan), indent=1) + "\n").encode())


def read_plan(path: Path) -> Plan:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read plan {str(path)!r}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from exc
    return plan_from_dict(data, str(path))


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
