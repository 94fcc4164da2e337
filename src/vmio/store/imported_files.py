"""The files a campaign's points were imported from (``vmio import``), one row each per import: the file, the
jobs it held (its points' workloads) and fio's ``disk_util`` as fio wrote it.

fio measures ``disk_util`` over the whole run, so it is the file's, not any one job's: it is stored once per
imported file (table ``imported_file``, migration 11), listed once per file by ``vmio ls --json``
(``imported_files``) and given with each point of the file in ``vmio show --json`` (``imported_file``). A point
has ``disk_util`` of its own, and its ``util`` as the point's busy %, only when its file held that one job.
Migration 11 moves what earlier imports kept in each point's facts (``fio_disk_util_of_file``; before issue
38 a copy of the run's ``fio_disk_util`` in every point, with its ``util`` as each point's busy %) into this
table, and takes the busy % back from the points of a file that held several jobs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# an imported file's entry as ls --json and show --json print it: file, jobs, disk_util
Entry = dict[str, object]


@dataclass(frozen=True)
class ImportedFile:
    """One imported file: its resolved path, fio's run time stamp (its points' ``ended``), the workloads of its
    points and fio's ``disk_util`` list (None: fio recorded none)."""

    path: str
    ended: float
    jobs: tuple[str, ...]
    disk_util: Sequence[Mapping[str, object]] | None

    def entry(self) -> Entry:
        return {"file": self.path, "jobs": list(self.jobs), "disk_util": _list(self.disk_util)}


def _list(value: Sequence[Mapping[str, object]] | None) -> list[dict[str, object]] | None:
    return None if value is None else [dict(d) for d in value]


def write(db: sqlite3.Connection, campaign_id: int, files: Sequence[ImportedFile]) -> None:
    db.executemany(
        "INSERT INTO imported_file (campaign_id, path, ended, jobs_json, disk_util_json) VALUES (?, ?, ?, ?, ?)",
        [
            (campaign_id, f.path, f.ended, json.dumps(list(f.jobs)), None if f.disk_util is None else json.dumps(_list(f.disk_util)))
            for f in files
        ],
    )  # fmt: skip


def read(db: sqlite3.Connection, campaign: str) -> list[ImportedFile]:
    """The files imported into ``campaign``, in import order."""
    rows = db.execute(
        "SELECT f.path, f.ended, f.jobs_json, f.disk_util_json FROM imported_file f "
        "JOIN campaign c ON c.id = f.campaign_id WHERE c.name = ? ORDER BY f.id",
        (campaign,),
    )
    return [
        ImportedFile(str(path), float(ended), tuple(json.loads(jobs)), json.loads(util) if util else None)
        for path, ended, jobs, util in rows
    ]


def by_point(files: Sequence[ImportedFile]) -> dict[tuple[str, float], Entry]:
    """Each file's entry by what its points' facts and rows name: (``imported_from``, ``ended``)."""
    return {(f.path, f.ended): f.entry() for f in files}


def migrate(db: sqlite3.Connection) -> None:
    """Migration 11: each imported file's ``disk_util`` out of its points' facts into ``imported_file``, once
    per file (per campaign, path and fio's time stamp); a point of a file of several jobs keeps no
    ``disk_util``, busy % or device of its own."""
    files: dict[tuple[int, str, float], dict[str, Any]] = {}
    points: list[tuple[int, tuple[int, str, float], dict[str, Any]]] = []
    for run_id, campaign_id, workload, ended, text in db.execute(
        "SELECT id, campaign_id, workload, ended, host_json FROM run WHERE target_kind = 'import' ORDER BY id"
    ).fetchall():
        try:
            facts = json.loads(text or "{}")
        except ValueError:  # facts vmio did not write: the store's integrity check names them when read
            continue
        if not isinstance(facts, dict) or "imported_from" not in facts:
            continue
        key = (campaign_id, str(facts["imported_from"]), float(ended or 0))
        entry = files.setdefault(key, {"jobs": [], "disk_util": None})
        if workload not in entry["jobs"]:
            entry["jobs"].append(workload)
        util = facts.get("fio_disk_util_of_file", facts.get("fio_disk_util"))
        if util is not None:
            entry["disk_util"] = util
        points.append((run_id, key, facts))
    for run_id, key, facts in points:
        facts.pop("fio_disk_util_of_file", None)
        facts.pop("fio_file_jobs", None)
        if len(files[key]["jobs"]) > 1 and "fio_disk_util" in facts:  # a copy of the run's: not this job's
            del facts["fio_disk_util"]
            db.execute("UPDATE run SET dev_busy_pct = NULL, device = NULL WHERE id = ?", (run_id,))
            db.execute("DELETE FROM run_metric WHERE run_id = ? AND metric = 'busy_pct'", (run_id,))
        db.execute("UPDATE run SET host_json = ? WHERE id = ?", (json.dumps(facts, sort_keys=True), run_id))
    for (campaign_id, path, ended), entry in files.items():
        write(db, campaign_id, [ImportedFile(path, ended, tuple(entry["jobs"]), entry["disk_util"])])
