"""The SQLite store: one file (WAL) holding every campaign, run, result, histogram and sample.

The schema is versioned; ``MIGRATIONS`` are applied in order on open and recorded in ``migrations``.
A point is written in one transaction (``record``), so a crash leaves either the whole point or none of it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vmio.errors import StoreError
from vmio.fio.output import JobResult
from vmio.metrics.sampler import Sample

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial schema",
        """
        CREATE TABLE campaign (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            spec_path TEXT,
            spec_text TEXT,
            canonical TEXT,
            created REAL
        );
        CREATE TABLE run (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            point_key TEXT NOT NULL,
            target TEXT NOT NULL, target_kind TEXT NOT NULL, workload TEXT NOT NULL,
            bs INTEGER NOT NULL, offered_iops INTEGER, load_processes INTEGER NOT NULL,
            repetition INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
            started REAL, ended REAL,
            accel TEXT, fio_version TEXT, qemu_version TEXT, host_json TEXT,
            job_file TEXT, qemu_argv TEXT, device TEXT, error TEXT, log TEXT,
            UNIQUE (campaign_id, point_key)
        );
        CREATE TABLE result (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, role TEXT, ddir TEXT,
            iops REAL, bw_bytes REAL, total_ios INTEGER, runtime_ms INTEGER,
            lat_min REAL, lat_mean REAL, lat_max REAL, lat_stddev REAL,
            p50 REAL, p90 REAL, p99 REAL, p999 REAL, p9999 REAL,
            usr_cpu REAL, sys_cpu REAL
        );
        CREATE TABLE histogram (
            result_id INTEGER PRIMARY KEY REFERENCES result(id) ON DELETE CASCADE,
            bins TEXT NOT NULL
        );
        CREATE TABLE sample (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            t REAL NOT NULL, source TEXT NOT NULL, metric TEXT NOT NULL, value REAL
        );
        CREATE INDEX sample_run ON sample(run_id, source, metric);
        CREATE TABLE run_metric (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            source TEXT NOT NULL, metric TEXT NOT NULL, value REAL,
            PRIMARY KEY (run_id, source, metric)
        );
        CREATE TABLE oplat (
            run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
            host TEXT, job TEXT, seq INTEGER, t_ms INTEGER, lat_ns INTEGER, ddir TEXT
        );
        CREATE INDEX result_run ON result(run_id);
        CREATE INDEX oplat_run ON oplat(run_id);
        """,
    ),
    (
        2,
        "membal live controller runs and decisions",
        """
        CREATE TABLE membal_run (
            id INTEGER PRIMARY KEY,
            started REAL NOT NULL, ended REAL,
            policy TEXT NOT NULL,
            settings TEXT NOT NULL,
            accel TEXT, qemu_version TEXT, qemu_argv TEXT,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
            error TEXT, summary TEXT
        );
        CREATE TABLE membal_decision (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES membal_run(id) ON DELETE CASCADE,
            t REAL NOT NULL, step INTEGER NOT NULL, vm TEXT NOT NULL,
            inputs TEXT NOT NULL,
            old_target INTEGER NOT NULL, new_target INTEGER NOT NULL, actual INTEGER,
            policy TEXT NOT NULL, reason TEXT NOT NULL
        );
        CREATE INDEX membal_decision_run ON membal_decision(run_id, vm, step);
        """,
    ),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
PCT_COLUMNS = {"p50": "p50", "p90": "p90", "p99": "p99", "p99.9": "p999", "p99.99": "p9999"}


@dataclass
class RunRecord:
    """Everything one point produced, written at once."""

    campaign: str
    point_key: str
    target: str
    target_kind: str
    workload: str
    bs: int
    offered_iops: int | None
    load_processes: int
    repetition: int
    status: str
    started: float
    ended: float
    host: dict[str, Any] = field(default_factory=dict)
    accel: str | None = None
    fio_version: str | None = None
    qemu_version: str | None = None
    job_file: str | None = None
    qemu_argv: list[list[str]] | None = None  # one argv per VM
    device: str | None = None
    error: str | None = None
    log: str | None = None
    results: list[JobResult] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    metrics: dict[tuple[str, str], float] = field(default_factory=dict)
    oplat: list[tuple[str, str, int, int, str]] = field(default_factory=list)  # host, job, t_ms, ns, ddir


class Store:
    """An open store. ``Store(":memory:")`` for a throwaway one."""

    def __init__(self, path: str | Path = "vmio.db") -> None:
        self.path = str(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open the store {self.path!r}: {exc}") from exc

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _migrate(self) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT, applied REAL)"
        )
        have = self.db.execute("SELECT COALESCE(MAX(version), 0) FROM migrations").fetchone()[0]
        if have > SCHEMA_VERSION:
            raise StoreError(
                f"the store {self.path!r} has schema version {have}, newer than this vmio's {SCHEMA_VERSION}; "
                "upgrade vmio"
            )
        for version, name, sql in MIGRATIONS:
            if version <= have:
                continue
            with self.transaction() as db:
                for statement in sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO migrations VALUES (?, ?, ?)", (version, name, time.time()))

    @property
    def schema_version(self) -> int:
        return int(self.db.execute("SELECT MAX(version) FROM migrations").fetchone()[0])

    # campaigns -------------------------------------------------------------------------------

    def campaign(self, name: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.db.execute("SELECT * FROM campaign WHERE name = ?", (name,)).fetchone()
        return row

    def campaigns(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM campaign ORDER BY id")]

    def ensure_campaign(self, name: str, spec_path: str, spec_text: str, canonical: str) -> int:
        """The campaign's id; created if new. A stored campaign with other points is an error."""
        row = self.campaign(name)
        if row is None:
            with self.transaction() as db:
                cur = db.execute(
                    "INSERT INTO campaign (name, spec_path, spec_text, canonical, created) VALUES (?, ?, ?, ?, ?)",
                    (name, spec_path, spec_text, canonical, time.time()),
                )
                return int(cur.lastrowid or 0)
        if row["canonical"] != canonical:
            raise StoreError(
                f"campaign {name!r} is already stored (from {row['spec_path']}) with other targets or "
                "workloads; give the changed spec a new campaign name"
            )
        return int(row["id"])

    def require(self, name: str) -> sqlite3.Row:
        row = self.campaign(name)
        if row is None:
            known = ", ".join(self.campaigns()) or "none"
            raise StoreError(f"no campaign {name!r} in {self.path}; stored campaigns: {known}")
        return row

    def done_keys(self, name: str) -> set[str]:
        rows = self.db.execute(
            "SELECT point_key FROM run JOIN campaign c ON c.id = run.campaign_id WHERE c.name = ? AND status = 'done'",
            (name,),
        )
        return {r[0] for r in rows}

    # runs -------------------------------------------------------------------------------------

    def record(self, rec: RunRecord) -> int:
        """Write one point and everything it produced in one transaction, replacing an older try."""
        with self.transaction() as db:
            cid = db.execute("SELECT id FROM campaign WHERE name = ?", (rec.campaign,)).fetchone()[0]
            db.execute("DELETE FROM run WHERE campaign_id = ? AND point_key = ?", (cid, rec.point_key))
            run_id = _insert_run(db, cid, rec)
            for res in rec.results:
                _insert_result(db, run_id, res)
            db.executemany("INSERT INTO sample VALUES (?, ?, ?, ?, ?)", [(run_id, *s) for s in rec.samples])
            db.executemany(
                "INSERT INTO run_metric VALUES (?, ?, ?, ?)",
                [(run_id, src, metric, value) for (src, metric), value in rec.metrics.items()],
            )
            db.executemany(
                "INSERT INTO oplat VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(run_id, h, j, i, t, ns, d) for i, (h, j, t, ns, d) in enumerate(rec.oplat)],
            )
            return run_id

    def runs(self, campaign: str) -> list[sqlite3.Row]:
        return list(
            self.db.execute(
                "SELECT run.* FROM run JOIN campaign c ON c.id = run.campaign_id WHERE c.name = ? ORDER BY run.id",
                (campaign,),
            )
        )

    def results(self, run_id: int) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM result WHERE run_id = ? ORDER BY id", (run_id,)))

    def histogram(self, result_id: int) -> dict[int, int]:
        row = self.db.execute("SELECT bins FROM histogram WHERE result_id = ?", (result_id,)).fetchone()
        return {int(v): int(c) for v, c in json.loads(row[0])} if row else {}

    def run_metrics(self, run_id: int) -> dict[tuple[str, str], float]:
        rows = self.db.execute("SELECT source, metric, value FROM run_metric WHERE run_id = ?", (run_id,))
        return {(r[0], r[1]): r[2] for r in rows}

    def samples(self, run_id: int) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM sample WHERE run_id = ? ORDER BY t", (run_id,)))

    def oplat(self, run_id: int) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM oplat WHERE run_id = ? ORDER BY seq", (run_id,)))


def _insert_run(db: sqlite3.Connection, cid: int, rec: RunRecord) -> int:
    cur = db.execute(
        """INSERT INTO run (campaign_id, point_key, target, target_kind, workload, bs, offered_iops,
           load_processes, repetition, status, started, ended, accel, fio_version, qemu_version,
           host_json, job_file, qemu_argv, device, error, log)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            cid, rec.point_key, rec.target, rec.target_kind, rec.workload, rec.bs, rec.offered_iops,
            rec.load_processes, rec.repetition, rec.status, rec.started, rec.ended, rec.accel,
            rec.fio_version, rec.qemu_version, json.dumps(rec.host, sort_keys=True), rec.job_file,
            json.dumps(rec.qemu_argv) if rec.qemu_argv is not None else None, rec.device, rec.error, rec.log,
        ),
    )  # fmt: skip
    return int(cur.lastrowid or 0)


def _insert_result(db: sqlite3.Connection, run_id: int, res: JobResult) -> None:
    lat = res.lat_ns
    cur = db.execute(
        """INSERT INTO result (run_id, host, job, role, ddir, iops, bw_bytes, total_ios, runtime_ms,
           lat_min, lat_mean, lat_max, lat_stddev, p50, p90, p99, p999, p9999, usr_cpu, sys_cpu)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            run_id, res.host, res.job, res.role, res.ddir, res.iops, res.bw_bytes, res.total_ios,
            res.runtime_ms, lat["min"], lat["mean"], lat["max"], lat["stddev"],
            *(lat.get(p) for p in PCT_COLUMNS), res.usr_cpu, res.sys_cpu,
        ),
    )  # fmt: skip
    if res.bins:
        db.execute(
            "INSERT INTO histogram VALUES (?, ?)", (cur.lastrowid, json.dumps(sorted(res.bins.items())))
        )


def rows_as_dicts(rows: Sequence[sqlite3.Row]) -> list[dict[str, Any]]:
    return [dict(r) for r in rows]
