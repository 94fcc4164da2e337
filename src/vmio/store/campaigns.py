"""One row per stored campaign, as ``vmio ls --json`` prints it."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping

from vmio.spec import Campaign
from vmio.store.database import Store
from vmio.store.imported_spec import IMPORTED
from vmio.units import format_size


def normal_key(key: str) -> str:
    """A point key with its block size spelled as keys now spell it: ``.../bs=4096/...`` → ``.../bs=4k/...``
    (stores written before hold the former)."""
    return re.sub(r"/bs=(\d+)/", lambda m: f"/bs={format_size(int(m.group(1)))}/", key)


def stored_campaign(store: Store, name: str) -> Campaign:
    """Campaign ``name`` as its stored spec defines it, under its stored name (which ``vmio run --name`` or
    ``vmio rename`` may have set apart from the name in the spec's text).

    Restored from the store alone (``Store.spec``: its canonical targets and workloads), as the report reads
    it: a campaign with no spec text of vmio's own (an imported one, whose points came from fio's JSON) or
    one whose fio job file has moved since is a campaign like any other."""
    return store.spec(name)


def _imported_files(store: Store, name: str) -> list[dict[str, object]]:
    """Each file imported into campaign ``name`` once (a file imported twice: once per import): its path, its
    jobs and fio's run-wide ``disk_util`` as fio wrote it (not any one job's)."""
    return [f.entry() for f in store.files_imported(name)]


def campaign_rows(store: Store) -> list[dict[str, object]]:
    """Every campaign, oldest first: name, created, targets, workloads, points done/failed, accelerators, the
    series it belongs to (null: none)."""
    counts: dict[int, dict[str, int]] = {}
    accels: dict[int, set[str]] = {}
    ran: dict[int, tuple[list[str], list[str]]] = {}
    for r in store.db.execute("SELECT campaign_id, status, accel, target, workload FROM run ORDER BY id"):
        counts.setdefault(r[0], {"done": 0, "failed": 0})[r[1]] += 1
        if r[2]:
            accels.setdefault(r[0], set()).add(r[2])
        targets, workloads = ran.setdefault(r[0], ([], []))
        _add(targets, r[3])
        _add(workloads, r[4])
    rows: list[dict[str, object]] = []
    series = {name: store.series_of(name) for name in store.campaigns()}
    for c in store.db.execute("SELECT id, name, created, canonical, spec_path FROM campaign ORDER BY id"):
        defined = _defined(c["canonical"])
        targets, workloads = ran.get(c["id"], ([], []))
        done = counts.get(c["id"], {})
        rows.append(
            {
                "name": c["name"],
                "created": _iso(c["created"]),
                "spec": c["spec_path"],
                "targets": [t["name"] for t in defined.get("targets", [])] or targets,
                "workloads": [w["name"] for w in defined.get("workloads", [])] or workloads,
                "points_done": done.get("done", 0),
                "points_failed": done.get("failed", 0),
                "accel": sorted(accels.get(c["id"], ())),
                "series": series.get(c["name"]),
            }
        )
        if c["spec_path"] == IMPORTED:
            rows[-1]["imported_files"] = _imported_files(store, c["name"])
        stops = store.stops(c["name"])
        if stops:  # only campaigns whose sweeps stopped at their stop_at bound
            rows[-1]["stops"] = stops
    return rows


def _add(items: list[str], value: str) -> None:
    if value not in items:
        items.append(value)


def _defined(canonical: str | None) -> dict[str, list[Mapping[str, object]]]:
    """The stored spec's targets and workloads as its JSON holds them (each an object with a name)."""
    try:
        body = json.loads(canonical or "{}")
    except ValueError:
        return {}
    if not isinstance(body, dict):
        return {}
    return {
        k: [x for x in v if isinstance(x, dict) and "name" in x]
        for k, v in body.items()
        if k in ("targets", "workloads") and isinstance(v, list)
    }


def _iso(created: float | None) -> str | None:
    if created is None:
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created))
