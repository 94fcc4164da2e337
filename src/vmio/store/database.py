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
from pathlib import Path
from typing import Any

from vmio.errors import StoreError
from vmio.store.records import JobResult, RunRecord
from vmio.store.schema import MIGRATIONS, PCT_COLUMNS, SCHEMA_VERSION


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
            db.executemany(
                "INSERT INTO hist_log VALUES (?, ?, ?, ?, ?, ?)",
                [(run_id, h, j, t, d, json.dumps(sorted(b.items()))) for h, j, t, d, b in rec.hist_log],
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

    def hist_log(self, run_id: int) -> list[tuple[str, str, int, str, dict[int, int]]]:
        """The run's per-interval latency histograms: (host, job, t ms, ddir, bins), by time."""
        rows = self.db.execute(
            "SELECT host, job, t_ms, ddir, bins FROM hist_log WHERE run_id = ? ORDER BY t_ms, rowid",
            (run_id,),
        )
        return [(r[0], r[1], r[2], r[3], {int(v): int(c) for v, c in json.loads(r[4])}) for r in rows]

    def oplat(self, run_id: int) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM oplat WHERE run_id = ? ORDER BY seq", (run_id,)))


def _insert_run(db: sqlite3.Connection, cid: int, rec: RunRecord) -> int:
    cur = db.execute(
        """INSERT INTO run (campaign_id, point_key, target, target_kind, workload, bs, offered_iops,
           load_processes, repetition, status, started, ended, accel, fio_version, qemu_version,
           host_json, job_file, qemu_argv, device, error, log, steady_json, precondition_json, fio_job_json)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            cid, rec.point_key, rec.target, rec.target_kind, rec.workload, rec.bs, rec.offered_iops,
            rec.load_processes, rec.repetition, rec.status, rec.started, rec.ended, rec.accel,
            rec.fio_version, rec.qemu_version, json.dumps(rec.host, sort_keys=True), rec.job_file,
            json.dumps(rec.qemu_argv) if rec.qemu_argv is not None else None, rec.device, rec.error, rec.log,
            *(None if v is None else json.dumps(v, sort_keys=True)
              for v in (rec.steady, rec.precondition, rec.fio_job)),
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
