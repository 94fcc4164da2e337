"""The SQLite store: one file (WAL) holding every campaign, run, result, histogram and sample.

The schema is versioned; ``MIGRATIONS`` are applied in order on open and recorded in ``migrations``.
A point is written in one transaction (``record``), so a crash leaves either the whole point or none of it.

Every SQLite failure, at open or on any later query, leaves this module as a ``StoreError`` whose message
names the file and what to do (see ``vmio.store.failures``). ``Store(path, readonly=True)`` never creates
or changes a file: an older schema is migrated in a copy in memory, a read-only filesystem is read as is.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from vmio.errors import InputError, StoreError
from vmio.spec.model import Campaign
from vmio.spec.stored import restore
from vmio.store import imported_files, packed
from vmio.store.failures import GuardedConnection, GuardedCursor, explain, missing, not_a_store
from vmio.store.fields import COLUMN_NAMES as POINT_COLUMN_NAMES
from vmio.store.fields import COLUMNS as POINT_COLUMNS
from vmio.store.imported_spec import IMPORTED, imported_campaign
from vmio.store.integrity import DETAIL_TABLES, check_rows, check_store, damaged_row
from vmio.store.point_metrics import write as write_point_metrics
from vmio.store.records import JobResult, RunRecord
from vmio.store.schema import MIGRATIONS, PACKED_SAMPLES, PCT_COLUMNS, SCHEMA_VERSION
from vmio.store.summaries import decode_bins
from vmio.store.summaries import write as write_summaries
from vmio.system import files
from vmio.units import format_size

SQLITE_MAGIC = b"SQLite format 3\x00"
DEFAULT_TIMEOUT_S = 30.0
# the migrations that added each point's stored summary (8) and its device, CPU and QEMU figures (9) fill
# them for older points
SUMMARIES_MIGRATION = 8
METRICS_MIGRATION = 9
IMPORTED_FILES_MIGRATION = 11
SAMPLES_MIGRATION = 13  # a run's samples in one row (``packed``), from the per-sample rows its SQL then drops


def lock_timeout() -> float:
    """Seconds a write waits for another writer: ``$VMIO_DB_TIMEOUT`` or 30."""
    raw = os.environ.get("VMIO_DB_TIMEOUT", "")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86400:
        raise StoreError(f"VMIO_DB_TIMEOUT={raw!r} is not a number of seconds from 0 to 86400", exit_code=2)
    return value


class Store:
    """An open store. ``Store(":memory:")`` for a throwaway one; ``readonly=True`` for commands that read."""

    def __init__(
        self, path: str | Path = "vmio.db", *, readonly: bool = False, timeout: float | None = None
    ) -> None:
        self.path = str(path)
        self.readonly = readonly
        self.timeout = lock_timeout() if timeout is None else timeout
        self._sides_before = _side_files(self.path) if readonly and self.path != ":memory:" else None
        self._unchecked: set[str] = set()  # detail tables whose rows are checked on their first read
        try:
            self.db = self._connect()
        except sqlite3.Error as exc:
            self._tidy_side_files()
            raise explain(exc, self.path, "open") from None
        try:
            if readonly:
                self._check_readable()
            else:
                self._migrate()
        except sqlite3.Error as exc:
            self.close()
            raise explain(exc, self.path, "open") from None
        except BaseException:
            self.close()
            raise

    def _connect(self) -> GuardedConnection:
        memory = self.path == ":memory:"
        if not memory:
            _check_file(self.path, self.readonly)
            if not self.readonly:
                _create_safely(self.path)
        if self.readonly and not memory:
            db = _open_readonly(self.path, self.timeout)
        else:
            db = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, factory=GuardedConnection
            )
        db.store_path = self.path
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA foreign_keys = ON")
        if not memory and not self.readonly:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
        return db

    def reader(self) -> Store:
        """Another read-only connection to this store's file, for a forked child (a connection must not
        cross a fork). It makes none of the checks of an open: this one made them of the same file (100k
        points' run table: 0.5 s), and the tables it left to their first read stay so. Same by effect: the
        file SQLite opened is the one this store's connection has open (a file put in its place since is
        refused). A store read from a file at the current schema only (not a migrated copy in memory)."""
        twin = object.__new__(Store)
        twin.path, twin.readonly, twin.timeout = self.path, True, self.timeout
        twin._sides_before = None  # side files are this store's to tidy
        twin._unchecked = set(self._unchecked)
        before = _opened(self.path)
        twin.db = twin._connect()
        new = {file for fd, file in _opened(self.path).items() if fd not in before}
        if new != set(before.values()):  # not the file this store checked
            twin.db.close()
            raise StoreError(f"the store {self.path!r} was replaced while vmio read it", exit_code=2)
        return twin

    def close(self) -> None:
        self.db.close()
        self._tidy_side_files()

    def _tidy_side_files(self) -> None:
        """A read-only open leaves nothing beside the store that was not there before.

        SQLite's read-only connection to a WAL store creates ``-wal`` and ``-shm`` when they are missing and
        cannot remove them. So when this open created them, a brief read-write connection reads and closes:
        SQLite removes both only if it is the last connection (a running ``vmio run`` keeps them, and its
        committed points stay visible to readers). It moves no data: a WAL this open created holds no frame.
        """
        before, self._sides_before = self._sides_before, None
        if before is None or not _side_files(self.path) - before:
            return
        try:
            db = sqlite3.connect(
                f"file:{quote(str(Path(self.path).resolve()))}?mode=rw", uri=True, timeout=0.5
            )
            try:
                db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            finally:
                db.close()
        except sqlite3.Error as exc:
            # not ours to write (permissions, a lock): SQLite's side files stay as SQLite left them; a store
            # too damaged to read through leaves its own (empty) ones, removed here
            if "malformed" in str(exc) or "not a database" in str(exc):
                self._remove_empty_sides(_side_files(self.path) - before)

    def _remove_empty_sides(self, made: set[str]) -> None:
        """Side files this open made that SQLite could not remove (a damaged store it cannot read through):
        removed when the WAL holds no frame, so they carry nothing and no other connection uses them."""
        wal = self.path + "-wal"
        if not made or (os.path.lexists(wal) and os.path.getsize(wal) > 0):
            return
        for side in made:
            with contextlib.suppress(OSError):
                os.unlink(side)

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
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    @contextmanager
    def exclusive_run(self) -> Iterator[None]:
        """Hold the store's run lock: a second ``vmio run`` on the same store is refused, not interleaved.

        An advisory ``flock`` on ``<store>.run-lock`` (never on the store itself, whose POSIX locks SQLite
        owns); the kernel drops it when the process dies, so a killed run never leaves the store locked. The
        holder removes the file when it is done (a lock that leaves nothing behind); whoever locked a file
        that was removed meanwhile starts again on the new one, so two runs never hold two files.
        """
        if self.path == ":memory:":
            yield
            return
        lock_path = self.path + ".run-lock"
        fd = self._take_run_lock(lock_path)
        try:
            os.pwrite(fd, f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock_path)  # still ours: we hold the lock on the file this name points at
            os.close(fd)

    def _take_run_lock(self, lock_path: str) -> int:
        import fcntl

        for _ in range(100):  # another run finishing as we open is a race of microseconds, not a loop
            try:
                fd = files.open_lock(lock_path)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the run lock {lock_path!r} beside the store: {exc.strerror}; "
                    "use a --db in a writable folder"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                os.close(fd)
                raise StoreError(
                    f"another vmio run is writing to the store {self.path!r} ({holder}); wait for it to "
                    "finish, or give this run its own --db"
                ) from None
            try:
                same = os.stat(lock_path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                return fd
            os.close(fd)  # the holder before us removed this file as we opened it: lock the new one
        raise StoreError(
            f"the run lock {lock_path!r} kept changing under vmio; is another program removing it?"
        )

    def _check_readable(self) -> None:
        have = self._stored_version()
        if have > SCHEMA_VERSION:
            raise _newer(self.path, have)
        if have < 1:
            raise not_a_store(self.path, "its migrations table records no vmio schema version")
        # an older store is checked whole: the migration's summaries read its results and histograms
        check_store(self.db, self.path, have, detail=have < SCHEMA_VERSION)
        if have == SCHEMA_VERSION:
            self._unchecked = set(DETAIL_TABLES)
        if have < SCHEMA_VERSION and self.path != ":memory:":
            # Read an older store through a migrated copy in memory; the file is never changed.
            copy = sqlite3.connect(":memory:", isolation_level=None, factory=GuardedConnection)
            copy.store_path = self.path
            self.db.backup(copy)
            self.db.close()
            copy.row_factory = sqlite3.Row
            copy.execute("PRAGMA foreign_keys = ON")
            self.db = copy
            self._apply(have)

    def _stored_version(self) -> int:
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "migrations" not in tables:
            raise not_a_store(self.path, "it has no vmio schema" if tables else "it is empty")
        version = self.db.execute("SELECT COALESCE(MAX(version), 0) FROM migrations").fetchone()[0]
        if not isinstance(version, int):
            raise not_a_store(self.path, f"its schema version {version!r} is not a whole number")
        return version

    def _migrate(self) -> None:
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "migrations" not in tables:
            raise not_a_store(self.path, f"it holds other tables ({', '.join(sorted(tables)[:5])})")
        if not tables:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT, applied REAL)"
            )
        have = self._stored_version()
        if have > SCHEMA_VERSION:
            raise _newer(self.path, have)
        self._apply(have)

    def _apply(self, have: int) -> None:
        for version, name, sql in MIGRATIONS:
            if version <= have:
                continue
            with self.transaction() as db:
                # another vmio may have opened this store at the same moment and applied it first: the
                # version is read again under the write lock, so each migration runs once
                if self._stored_version() >= version:
                    continue
                if version == SAMPLES_MIGRATION:  # the per-sample rows packed before the SQL drops them
                    db.execute(PACKED_SAMPLES)
                    packed.migrate(db, "sample_packed")
                for statement in sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
                if version == SUMMARIES_MIGRATION:
                    write_summaries(db)
                if version == METRICS_MIGRATION:
                    write_point_metrics(db)
                if version == IMPORTED_FILES_MIGRATION:
                    imported_files.migrate(db)
                db.execute("INSERT INTO migrations VALUES (?, ?, ?)", (version, name, time.time()))

    def _detail(self, *tables: str) -> None:
        """Check the rows of detail tables before their first read (see ``integrity``)."""
        for table in tables:
            if table in self._unchecked:
                try:
                    check_rows(self.db, self.path, SCHEMA_VERSION, table)
                except sqlite3.Error as exc:
                    raise explain(exc, self.path) from None
                self._unchecked.discard(table)

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
        if row["canonical"] != canonical and not self._holds_done(int(row["id"])):
            # A campaign with no done point does not hold its name: the new spec takes it over.
            with self.transaction() as db:
                db.execute("DELETE FROM run WHERE campaign_id = ?", (row["id"],))
                db.execute(
                    "UPDATE campaign SET spec_path = ?, spec_text = ?, canonical = ?, created = ?, seed = NULL, "
                    "offsets_json = NULL, stops_json = NULL WHERE id = ?",
                    (spec_path, spec_text, canonical, time.time(), row["id"]),
                )
            return int(row["id"])
        if row["canonical"] != canonical:
            raise StoreError(
                f"campaign {name!r} is already stored (from {row['spec_path']}) with other targets or "
                "workloads; give the changed spec a new campaign name",
                exit_code=2,
            )
        return int(row["id"])

    def _holds_done(self, campaign_id: int) -> bool:
        return bool(
            self.db.execute(
                "SELECT 1 FROM run WHERE campaign_id = ? AND status = 'done' LIMIT 1", (campaign_id,)
            ).fetchone()
        )

    def remove_campaign(self, name: str) -> int:
        """Delete campaign ``name`` and every point it holds; the number of points deleted."""
        row = self.require(name)
        with self.transaction() as db:
            count = int(
                db.execute("SELECT COUNT(*) FROM run WHERE campaign_id = ?", (row["id"],)).fetchone()[0]
            )
            db.execute("DELETE FROM campaign WHERE id = ?", (row["id"],))
        return count

    def rename_campaign(self, old: str, new: str) -> None:
        """Give campaign ``old`` the name ``new`` (which no stored campaign has)."""
        row = self.require(old)
        if new == old:
            raise StoreError(f"cannot rename {old!r} to {new!r}: that is its name already", exit_code=2)
        if self.campaign(new) is not None:
            raise StoreError(
                f"cannot rename {old!r} to {new!r}: a campaign {new!r} is already stored in "
                f"{self.path}; remove it first (vmio rm {new}) or pick another name",
                exit_code=2,
            )
        with self.transaction() as db:
            db.execute("UPDATE campaign SET name = ? WHERE id = ?", (new, row["id"]))

    def require(self, name: str) -> sqlite3.Row:
        row = self.campaign(name)
        if row is None:
            known = ", ".join(self.campaigns()) or "none"
            raise StoreError(f"no campaign {name!r} in {self.path}; stored campaigns: {known}", exit_code=2)
        return row

    def spec(self, name: str) -> Campaign:
        """Campaign ``name``'s spec as its model, restored from what was stored (no file outside the store
        is read); a stored spec that no longer reads is one error naming the campaign."""
        row = self.require(name)
        if row["spec_path"] == IMPORTED:  # fio's JSON, imported: the model is what fio recorded per point
            return imported_campaign(name, [dict(r) for r in self.runs(name)])
        try:
            return restore(name, row["spec_text"], row["canonical"], row["spec_path"] or name)
        except (InputError, ValueError, TypeError) as exc:
            raise StoreError(
                f"campaign {name!r} in {self.path}: its stored spec no longer reads ({exc})", exit_code=2
            ) from None

    def offsets(self, name: str) -> tuple[int, list[int]] | None:
        """The seed and the operation offsets stored with campaign ``name`` (None: none stored)."""
        row = self.db.execute("SELECT seed, offsets_json FROM campaign WHERE name = ?", (name,)).fetchone()
        if row is None or row[1] is None:
            return None
        return int(row[0]), [int(o) for o in json.loads(row[1])]

    def set_offsets(self, name: str, seed: int, offsets: Sequence[int]) -> None:
        """Store the operation offsets drawn from ``seed`` with campaign ``name`` (once: they stay)."""
        with self.transaction() as db:
            db.execute(
                "UPDATE campaign SET seed = ?, offsets_json = ? WHERE name = ? AND offsets_json IS NULL",
                (seed, json.dumps(list(offsets)), name),
            )

    def stops(self, name: str) -> list[dict[str, object]]:
        """Where campaign ``name``'s sweeps stopped at their ``stop_at`` bound, and why (its last run)."""
        row = self.db.execute("SELECT * FROM campaign WHERE name = ?", (name,)).fetchone()
        columns = row.keys() if row is not None else []  # a sqlite3.Row's `in` looks at its values
        if row is None or "stops_json" not in columns or not row["stops_json"]:  # older stores: none
            return []
        return list(json.loads(row["stops_json"]))

    def set_stops(self, name: str, stops: Sequence[Mapping[str, object]]) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE campaign SET stops_json = ? WHERE name = ?",
                (json.dumps(list(stops), sort_keys=True) if stops else None, name),
            )

    # series ----------------------------------------------------------------------------------

    def series_of(self, name: str) -> str | None:
        """The series campaign ``name`` belongs to (None: none, or a store from before series)."""
        value = self._campaign_column(name, "series")
        return None if value is None else str(value)

    def set_series(self, name: str, series: str | None) -> None:
        """Put campaign ``name`` in ``series`` (None: in none)."""
        self.require(name)
        with self.transaction() as db:
            db.execute("UPDATE campaign SET series = ? WHERE name = ?", (series, name))

    def series_campaigns(self, series: str) -> list[sqlite3.Row]:
        """The campaigns of ``series`` in time order (when each one's first point started: an import's fio run
        time, not when it was imported; a campaign without points, when it was created), with ``accepted``."""
        if "series" not in self._campaign_columns():
            return []
        return list(
            self.db.execute(
                "SELECT c.id, c.name, COALESCE(MIN(r.started), c.created) AS created, c.accepted, c.spec_path, "
                "c.canonical, c.spec_text FROM campaign c LEFT JOIN run r ON r.campaign_id = c.id "
                "WHERE c.series = ? GROUP BY c.id ORDER BY created, c.id",
                (series,),
            )
        )

    def series_names(self) -> list[str]:
        if "series" not in self._campaign_columns():
            return []
        return [
            r[0]
            for r in self.db.execute(
                "SELECT DISTINCT series FROM campaign WHERE series IS NOT NULL ORDER BY series"
            )
        ]

    def accept(self, name: str) -> None:
        """Mark campaign ``name`` as an expected change of its series: its series' window starts there."""
        self.require(name)
        with self.transaction() as db:
            db.execute("UPDATE campaign SET accepted = ? WHERE name = ?", (time.time(), name))

    def settles(self, name: str) -> dict[str, tuple[int, bool, float | None]]:
        """Per point (its key without the repetition): repetitions taken, settled, IOPS spread (a fraction)."""
        if "series" not in self._campaign_columns():
            return {}
        rows = self.db.execute(
            "SELECT point, repetitions, settled, spread FROM point_settle JOIN campaign c ON c.id = campaign_id "
            "WHERE c.name = ?",
            (name,),
        )
        return {r[0]: (int(r[1]), bool(r[2]), r[3]) for r in rows}

    def set_settle(
        self, name: str, point: str, repetitions: int, settled: bool, spread: float | None
    ) -> None:
        cid = self.require(name)["id"]
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO point_settle VALUES (?, ?, ?, ?, ?)",
                (cid, point, repetitions, int(settled), spread),
            )

    def _campaign_column(self, name: str, column: str) -> object:
        row = self.db.execute("SELECT * FROM campaign WHERE name = ?", (name,)).fetchone()
        if row is None or column not in self._campaign_columns():  # older stores have no such column
            return None
        return row[column]

    def _campaign_columns(self) -> set[str]:
        return {r[1] for r in self.db.execute("PRAGMA table_info(campaign)")}

    def done_keys(self, name: str) -> set[str]:
        rows = self.db.execute(
            "SELECT point_key FROM run JOIN campaign c ON c.id = run.campaign_id WHERE c.name = ? AND status = 'done'",
            (name,),
        )
        return {r[0] for r in rows}

    # runs -------------------------------------------------------------------------------------

    def record_all(
        self,
        name: str,
        spec_path: str,
        spec_text: str,
        canonical: str,
        recs: Sequence[RunRecord],
        files: Sequence[imported_files.ImportedFile] = (),
    ) -> None:
        """Create campaign ``name`` if it is new and write every point of ``recs`` and the ``files`` they were
        imported from, in one transaction: a failure leaves neither the campaign nor any of the points
        (``vmio import``)."""
        with self.transaction() as db:
            if self.campaign(name) is None:
                db.execute(
                    "INSERT INTO campaign (name, spec_path, spec_text, canonical, created) VALUES (?, ?, ?, ?, ?)",
                    (name, spec_path, spec_text, canonical, time.time()),
                )
            for rec in recs:
                self._record(db, rec)
            if files:
                cid = db.execute("SELECT id FROM campaign WHERE name = ?", (name,)).fetchone()[0]
                imported_files.write(db, cid, files)

    def files_imported(self, campaign: str) -> list[imported_files.ImportedFile]:
        """The files imported into ``campaign`` (``vmio import``), in import order; none for other campaigns."""
        return imported_files.read(self.db, campaign)

    def record(self, rec: RunRecord) -> int:
        """Write one point and everything it produced in one transaction, replacing an older try."""
        with self.transaction() as db:
            return self._record(db, rec)

    def _record(self, db: sqlite3.Connection, rec: RunRecord) -> int:
        cid = db.execute("SELECT id FROM campaign WHERE name = ?", (rec.campaign,)).fetchone()[0]
        # the point's older try, also under the key's older spelling (bs=4096 where it now says bs=4k)
        legacy = rec.point_key.replace(f"/bs={format_size(rec.bs)}/", f"/bs={rec.bs}/")
        db.execute(
            "DELETE FROM run WHERE campaign_id = ? AND point_key IN (?, ?)", (cid, rec.point_key, legacy)
        )
        run_id = _insert_run(db, cid, rec)
        for res in rec.results:
            _insert_result(db, run_id, res)
        if rec.samples:
            db.execute("INSERT INTO sample VALUES (?, ?, ?, ?, ?, ?)", (run_id, *packed.pack(rec.samples)))
        db.executemany(
            "INSERT INTO run_metric VALUES (?, ?, ?, ?)",
            [(run_id, src, metric, value) for (src, metric), value in rec.metrics.items()],
        )
        db.executemany(
            "INSERT INTO oplat (run_id, host, job, seq, t_ms, lat_ns, ddir, offset) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(run_id, *o[:2], i, *o[2:5], o[5] if len(o) > 5 else None) for i, o in enumerate(rec.oplat)],
        )
        db.executemany(
            "INSERT INTO hist_log VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, h, j, t, d, json.dumps(sorted(b.items()))) for h, j, t, d, b in rec.hist_log],
        )
        db.executemany(
            "INSERT INTO layer_hist VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, *h[:4], json.dumps(sorted(h[4].items()))) for h in rec.layer_hists],
        )
        write_summaries(db, [run_id])  # from the rows just written, as the migrations compute them
        write_point_metrics(db, [run_id])
        return run_id

    def runs(self, campaign: str) -> list[sqlite3.Row]:
        return list(
            self.db.execute(
                "SELECT run.* FROM run JOIN campaign c ON c.id = run.campaign_id WHERE c.name = ? ORDER BY run.id",
                (campaign,),
            )
        )

    def run_maps(self, campaign: str, size: int = 2000) -> Iterator[list[Mapping[str, Any]]]:
        """``runs`` as plain dicts (a ``sqlite3.Row`` looks a name up column by column: ``show`` of 100k
        points reads 50 names each), without the long texts (log, job file, QEMU command line), ``size``
        at a time (so 100k points' dicts are never all held at once)."""
        skip = {"log", "job_file", "qemu_argv", "campaign_id"}
        columns = [r[1] for r in self.db.execute("PRAGMA table_info(run)").fetchall() if r[1] not in skip]
        for chunk in self.run_tuples(campaign, columns, size):
            yield [dict(zip(columns, r, strict=True)) for r in chunk]

    def run_tuples(
        self, campaign: str, columns: Sequence[str], size: int = 2000, first: int | None = None
    ) -> Iterator[list[tuple[Any, ...]]]:
        """The campaign's runs in ``runs``' order as tuples of ``columns`` (``run`` columns), ``size`` at a
        time; ``first``: only the runs from that id on.

        A campaign's runs are mostly written one after another: when they fill at least a quarter of the
        span of their ids, that span is read in id order (SQLite would otherwise read them through the
        campaign's index and sort every row it selects: 0.4 s of 100k points); else through the index."""
        cid, lo, hi, count = self.db.execute(
            "SELECT c.id, MIN(r.id), MAX(r.id), COUNT(r.id) FROM campaign c JOIN run r ON r.campaign_id = c.id "
            "WHERE c.name = ?",
            (campaign,),
        ).fetchone()
        if not count:
            return
        select = f"SELECT {', '.join(f'r.{c}' for c in columns)} FROM run r"
        cur = self.db.cursor(GuardedCursor)
        cur.row_factory = None
        start = lo if first is None else max(lo, first)
        if count * 4 >= hi - lo + 1:  # "+": not through the campaign's index
            cur.execute(
                f"{select} WHERE r.id BETWEEN ? AND ? AND +r.campaign_id = ? ORDER BY r.id", (start, hi, cid)
            )
        else:
            cur.execute(f"{select} WHERE r.campaign_id = ? AND r.id >= ? ORDER BY r.id", (cid, start))
        while chunk := cur.fetchmany(size):
            yield chunk

    def run_count(self, campaign: str) -> int:
        """How many runs the campaign holds."""
        row = self.db.execute(
            "SELECT count(*) FROM run r JOIN campaign c ON c.id = r.campaign_id WHERE c.name = ?", (campaign,)
        ).fetchone()
        return int(row[0])

    def run_id_past(self, campaign: str, after: int, skip: int) -> int | None:
        """The id of the campaign's run ``skip`` runs past the one whose id is ``after`` (the next one for 0),
        in id order (``run_tuples``'); None past the last."""
        row = self.db.execute(
            "SELECT r.id FROM run r JOIN campaign c ON c.id = r.campaign_id WHERE c.name = ? AND r.id > ? "
            "ORDER BY r.id LIMIT 1 OFFSET ?",
            (campaign, after, skip),
        ).fetchone()
        return None if row is None else int(row[0])

    def results(self, run_id: int) -> list[sqlite3.Row]:
        self._detail("result")
        return list(self.db.execute("SELECT * FROM result WHERE run_id = ? ORDER BY id", (run_id,)))

    def histogram(self, result_id: int) -> dict[int, int]:
        self._detail("histogram")
        row = self.db.execute("SELECT bins FROM histogram WHERE result_id = ?", (result_id,)).fetchone()
        return decode_bins(row[0], result_id, self.path) if row else {}

    # a whole campaign at once (one query each, not one per point: `show` of 100k points) ------------

    def campaign_results(self, campaign: str) -> dict[int, list[sqlite3.Row]]:
        """Every result of the campaign's runs, by run id, each run's in ``results``' order."""
        self._detail("result")
        out: dict[int, list[sqlite3.Row]] = {}
        for r in self.db.execute(
            "SELECT result.* FROM result JOIN run ON run.id = result.run_id JOIN campaign c ON c.id = run.campaign_id "
            "WHERE c.name = ? ORDER BY result.id",
            (campaign,),
        ).fetchall():
            out.setdefault(r["run_id"], []).append(r)
        return out

    def campaign_histograms(self, campaign: str) -> dict[int, dict[int, int]]:
        """Every stored latency histogram of the campaign's results, by result id."""
        self._detail("result", "histogram")
        rows = self.db.execute(
            "SELECT h.result_id, h.bins FROM histogram h JOIN result ON result.id = h.result_id "
            "JOIN run ON run.id = result.run_id JOIN campaign c ON c.id = run.campaign_id WHERE c.name = ?",
            (campaign,),
        )
        return {r[0]: decode_bins(r[1], r[0], self.path) for r in rows}  # stored as [[bucket, count], ...]

    def campaign_metrics(self, campaign: str) -> dict[int, dict[tuple[str, str], float]]:
        """Every run's metrics (``run_metrics``), by run id."""
        out: dict[int, dict[tuple[str, str], float]] = {}
        for run_id, source, metric, value in self.db.execute(
            "SELECT m.run_id, m.source, m.metric, m.value FROM run_metric m JOIN run ON run.id = m.run_id "
            "JOIN campaign c ON c.id = run.campaign_id WHERE c.name = ? ORDER BY m.run_id, m.source, m.metric",
            (campaign,),
        ).fetchall():
            mine = out.get(run_id)
            if mine is None:
                mine = out[run_id] = {}
            mine[(source, metric)] = value
        return out

    def campaign_samples(self, campaign: str) -> dict[int, list[packed.SampleRow]]:
        """Every run's samples (``samples``), by run id."""
        return {
            run_id: self.unpacked(run_id, row)
            for rows in self.campaign_packed_samples(campaign)
            for run_id, _key, *row in rows
        }

    def campaign_packed_samples(self, campaign: str, size: int = 2000) -> Iterator[list[tuple[Any, ...]]]:
        """The campaign's runs that have samples, in id order, each as its id, point key and packed row (``n, t,
        source, metric, value``: ``packed``), ``size`` at a time."""
        self._detail("sample")
        row = self.db.execute("SELECT id FROM campaign WHERE name = ?", (campaign,)).fetchone()
        if row is None:
            return
        cur = self.db.cursor(GuardedCursor)
        cur.row_factory = None
        cur.execute(  # "+": the runs in id order, not through the campaign's index (which SQLite would sort)
            "SELECT r.id, r.point_key, s.n, s.t, s.source, s.metric, s.value FROM run r CROSS JOIN sample s "
            "ON s.run_id = r.id WHERE +r.campaign_id = ? ORDER BY r.id",
            (row[0],),
        )
        while chunk := cur.fetchmany(size):
            yield chunk

    def sample_damage(self, run_id: int, exc: ValueError) -> StoreError:
        """The error of a packed sample row that ``packed`` could not read (``exc`` says why)."""
        return damaged_row(self.db, self.path, "sample", run_id, str(exc))

    def unpacked(self, run_id: int, row: Sequence[Any]) -> list[packed.SampleRow]:
        """A packed row of ``campaign_packed_samples`` as its samples (``packed.unpack``)."""
        try:
            return packed.unpack(run_id, tuple(row))
        except ValueError as exc:
            raise self.sample_damage(run_id, exc) from None

    def campaign_oplat(self, campaign: str) -> dict[int, list[sqlite3.Row]]:
        """Every run's timed operations (``oplat``), by run id."""
        self._detail("oplat")
        return self._by_run(
            "SELECT o.* FROM oplat o JOIN run ON run.id = o.run_id JOIN campaign c ON c.id = run.campaign_id "
            "WHERE c.name = ? ORDER BY o.run_id, o.seq",
            campaign,
        )

    def campaign_hist_log(self, campaign: str) -> dict[int, list[tuple[str, str, int, str, dict[int, int]]]]:
        """Every run's per-interval histograms (``hist_log``), by run id."""
        self._detail("hist_log")
        out: dict[int, list[tuple[str, str, int, str, dict[int, int]]]] = {}
        for r in self.db.execute(
            "SELECT h.run_id, h.host, h.job, h.t_ms, h.ddir, h.bins FROM hist_log h JOIN run ON run.id = h.run_id "
            "JOIN campaign c ON c.id = run.campaign_id WHERE c.name = ? ORDER BY h.run_id, h.t_ms, h.rowid",
            (campaign,),
        ):
            out.setdefault(r[0], []).append(
                (r[1], r[2], r[3], r[4], {int(v): int(c) for v, c in json.loads(r[5])})
            )
        return out

    def _by_run(self, sql: str, campaign: str) -> dict[int, list[sqlite3.Row]]:
        out: dict[int, list[sqlite3.Row]] = {}
        for r in self.db.execute(sql, (campaign,)).fetchall():  # in one call, not a row at a time
            out.setdefault(r["run_id"], []).append(r)
        return out

    def campaign_table(
        self,
        table: str,
        columns: Sequence[str],
        order: str,
        campaign: str,
        cell: str | Sequence[str] = "{c}",
        size: int = 5000,
    ) -> Iterator[list[tuple[Any, ...]]]:
        """A detail table's rows of the campaign's runs as plain tuples: each run's point key, then ``columns``,
        by run and then ``order`` (``export`` of a million samples), ``size`` rows at a time (never all held at
        once). ``cell`` is the SQL each value is read through (``{c}``: the column), e.g. export's
        guard of CSV cells; or one such SQL per value (the point key's first).

        The runs are walked in id order and each run's rows read through the table's ``run_id`` index (SQLite
        sorts one run's rows at a time, not the whole table's in one temporary tree)."""
        self._detail(table)
        row = self.db.execute("SELECT id FROM campaign WHERE name = ?", (campaign,)).fetchone()
        if row is None:
            return
        cells = [cell] * (len(columns) + 1) if isinstance(cell, str) else cell
        named = ("r.point_key", *(f"t.{c}" for c in columns))
        picked = ", ".join(sql.format(c=c) for sql, c in zip(cells, named, strict=True))
        cur = self.db.cursor(GuardedCursor)
        cur.row_factory = None
        cur.execute(  # "+": the runs in id order, not through the campaign's index (which SQLite would sort)
            f"SELECT {picked} FROM run r CROSS JOIN {table} t ON t.run_id = r.id "
            f"WHERE +r.campaign_id = ? ORDER BY r.id, {order}, t.rowid",  # rowid: ties in the order written
            (row[0],),
        )
        while chunk := cur.fetchmany(size):  # in chunks: a row at a time is a Python call a row (the guard)
            yield chunk

    def run_metrics(self, run_id: int) -> dict[tuple[str, str], float]:
        rows = self.db.execute(
            "SELECT source, metric, value FROM run_metric WHERE run_id = ? ORDER BY source, metric", (run_id,)
        )
        return {(r[0], r[1]): r[2] for r in rows}

    def samples(self, run_id: int) -> list[packed.SampleRow]:
        """The run's samples as ``{"run_id", "t", "source", "metric", "value"}``, by time (then source, metric)."""
        self._detail("sample")
        row = self.db.execute(
            "SELECT n, t, source, metric, value FROM sample WHERE run_id = ?", (run_id,)
        ).fetchone()
        return self.unpacked(run_id, row) if row is not None else []

    def hist_log(self, run_id: int) -> list[tuple[str, str, int, str, dict[int, int]]]:
        """The run's per-interval latency histograms: (host, job, t ms, ddir, bins), by time."""
        self._detail("hist_log")
        rows = self.db.execute(
            "SELECT host, job, t_ms, ddir, bins FROM hist_log WHERE run_id = ? ORDER BY t_ms, rowid",
            (run_id,),
        )
        return [(r[0], r[1], r[2], r[3], {int(v): int(c) for v, c in json.loads(r[4])}) for r in rows]

    def layer_hists(self, run_id: int) -> list[tuple[str, str, str, int, dict[int, int]]]:
        """The run's layer histograms (docs/layers.md): (layer, ddir, span, sum of latencies ns, bins)."""
        self._detail("layer_hist")
        rows = self.db.execute(
            "SELECT layer, ddir, span, sum_ns, bins FROM layer_hist WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
        return [(r[0], r[1], r[2], r[3], {int(v): int(c) for v, c in json.loads(r[4])}) for r in rows]

    def oplat(self, run_id: int) -> list[sqlite3.Row]:
        self._detail("oplat")
        return list(self.db.execute("SELECT * FROM oplat WHERE run_id = ? ORDER BY seq", (run_id,)))


def _check_file(path: str, readonly: bool) -> None:
    """Refuse, before SQLite sees it, a path that cannot be a store: missing, a folder, a foreign file."""
    p = Path(path)
    if p.is_dir():
        raise StoreError(f"the store {path!r} is a folder, not a file; give --db a file name", exit_code=2)
    if not p.exists():
        if readonly:
            raise missing(path)
        if not p.parent.is_dir():
            raise StoreError(
                f"cannot create the store {path!r}: the folder {str(p.parent)!r} does not exist; "
                "create it or give another --db",
                exit_code=2,
            )
        return
    mode = os.stat(p).st_mode
    if not stat.S_ISREG(mode):
        raise StoreError(
            f"the store {path!r} is not a regular file; give --db the file `vmio run` wrote", exit_code=2
        )
    try:
        with open(p, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(
            f"cannot read the store {path!r}: {exc.strerror}; check its permissions", exit_code=2
        ) from None
    if head and head != SQLITE_MAGIC:
        raise not_a_store(path, "not an SQLite file")
    if not head and readonly:
        raise not_a_store(path, "it is empty")


def _open_readonly(path: str, timeout: float) -> GuardedConnection:
    """Open without ever writing: ``mode=ro``; on a read-only filesystem (no -shm can be made) ``immutable``."""
    uri = "file:" + quote(str(Path(path).resolve()))
    db = sqlite3.connect(
        uri + "?mode=ro", uri=True, timeout=timeout, isolation_level=None, factory=GuardedConnection
    )
    try:
        sqlite3.Connection.execute(db, "SELECT COUNT(*) FROM sqlite_master").fetchone()  # unguarded probe
        return db
    except sqlite3.OperationalError:
        db.close()
        if not _on_readonly_fs(path):
            raise
    return sqlite3.connect(uri + "?immutable=1", uri=True, isolation_level=None, factory=GuardedConnection)


def _opened(path: str) -> dict[int, tuple[int, int]]:
    """The files (device, inode) this process has open under ``path``'s name, by descriptor: what SQLite
    opened, not what the path names now."""
    name = str(Path(path).resolve())
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        link = f"/proc/self/fd/{fd}"
        with contextlib.suppress(OSError):  # listdir's own descriptor, closed since
            if os.readlink(link) == name:
                st = os.stat(link)
                found[int(fd)] = (st.st_dev, st.st_ino)
    return found


def _side_files(path: str) -> set[str]:
    """Which of SQLite's side files of ``path`` exist now."""
    return {p for p in (path + "-wal", path + "-shm") if os.path.lexists(p)}


def _on_readonly_fs(path: str) -> bool:
    try:
        return bool(os.statvfs(Path(path).resolve().parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _newer(path: str, have: int) -> StoreError:
    return StoreError(
        f"the store {path!r} has schema version {have}, newer than this vmio's {SCHEMA_VERSION}; "
        "upgrade vmio to read it",
        exit_code=2,
    )


# the run's columns a RunRecord writes beside its stored per-point fields (``fields.COLUMNS``)
_RUN_OWN = ("campaign_id", "started", "ended", "host_json", "job_file", "qemu_argv", "log")
_INSERT_RUN = (
    f"INSERT INTO run ({', '.join((*_RUN_OWN, *POINT_COLUMN_NAMES))}) "
    f"VALUES ({', '.join('?' * (len(_RUN_OWN) + len(POINT_COLUMNS)))})"
)


def _insert_run(db: sqlite3.Connection, cid: int, rec: RunRecord) -> int:
    own = (
        cid, rec.started, rec.ended, json.dumps(rec.host_json(), sort_keys=True), rec.job_file,
        json.dumps(rec.qemu_argv) if rec.qemu_argv is not None else None, rec.log,
    )  # fmt: skip
    declared = (f.to_column(getattr(rec, f.name)) for f in POINT_COLUMNS)
    cur = db.execute(_INSERT_RUN, (*own, *declared))
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


def _create_safely(path: str) -> None:
    """Refuse a store in a folder another user controls; create a new store file exclusively (never
    through a planted link) so SQLite opens vmio's own file."""
    files.check_place(path, new=not os.path.lexists(path))
    if os.path.lexists(path):
        return
    try:
        os.close(files.create_exclusive(path, 0o644))
    except FileExistsError:
        raise StoreError(f"the store {path!r} appeared while vmio was creating it; run again") from None
    except OSError as exc:
        raise StoreError(f"cannot create the store {path!r}: {exc.strerror}") from None
