"""SQLite failures as one sentence naming the store and what to do, wherever in a command they happen.

``GuardedConnection`` is the connection every ``Store`` holds: its ``execute``/``executemany`` and the
cursors they return (fetch and iteration included) turn ``sqlite3.Error`` into ``StoreError`` via ``explain``,
so a damaged page found by a query long after the open is as clear as one found at the open.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vmio.errors import StoreError


def explain(exc: sqlite3.Error, path: str, doing: str = "use") -> StoreError:
    """The ``StoreError`` for ``exc`` raised while ``doing`` something with the store at ``path``."""
    text = str(exc).lower()
    name = getattr(exc, "sqlite_errorname", "") or ""
    if "malformed" in text or "not a database" in text or name in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        return StoreError(
            f"the store {path!r} is damaged ({exc}); restore it from a backup, or salvage it with "
            f"`sqlite3 {path} .recover | sqlite3 recovered.db`",
            exit_code=2,
        )
    if "locked" in text or "busy" in text:
        return StoreError(
            f"the store {path!r} is locked by another process beyond the wait of $VMIO_DB_TIMEOUT; wait for it "
            "to finish (see `fuser` on the file), or use another --db"
        )
    if "readonly" in text or "read-only" in text or _readonly(path):
        return StoreError(
            f"the store {path!r} cannot be written: it or its folder is read-only; copy it to a writable "
            "place and give that as --db (reading commands such as `vmio show` work as is)"
        )
    if "full" in text or _disk_full(path):
        return StoreError(
            f"the disk holding the store {path!r} is full; free space there or use a --db on another disk "
            "(points recorded before this one are kept)"
        )
    if "unable to open" in text:
        return StoreError(
            f"cannot {doing} the store {path!r}: SQLite cannot open it or its -wal/-shm files "
            "beside it; check the folder exists and is writable",
            exit_code=2,
        )
    return StoreError(f"cannot {doing} the store {path!r}: {exc}")


def missing(path: str) -> StoreError:
    return StoreError(
        f"there is no store at {path!r}; `vmio run SPEC --db {path}` makes one, or give the "
        "--db of an existing store",
        exit_code=2,
    )


def not_a_store(path: str, why: str) -> StoreError:
    return StoreError(
        f"{path!r} is not a vmio store ({why}); give --db the file `vmio run` wrote", exit_code=2
    )


def _readonly(path: str) -> bool:
    if path == ":memory:":
        return False
    folder = Path(path).resolve().parent
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _disk_full(path: str) -> bool:
    if path == ":memory:":
        return False
    try:
        st = os.statvfs(Path(path).resolve().parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


class GuardedCursor(sqlite3.Cursor):
    """A cursor whose every step reports SQLite errors as ``StoreError``."""

    def _path(self) -> str:
        return getattr(self.connection, "store_path", "?")

    def execute(self, sql: str, parameters: Any = (), /) -> GuardedCursor:
        try:
            super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise explain(exc, self._path()) from None
        return self

    def executemany(self, sql: str, seq: Iterable[Any], /) -> GuardedCursor:
        try:
            super().executemany(sql, seq)
        except sqlite3.Error as exc:
            raise explain(exc, self._path()) from None
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise explain(exc, self._path()) from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise explain(exc, self._path()) from None

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size if size is not None else self.arraysize)
        except sqlite3.Error as exc:
            raise explain(exc, self._path()) from None

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            raise explain(exc, self._path()) from None


class GuardedConnection(sqlite3.Connection):
    """The connection of a ``Store``; ``store_path`` names the file in messages."""

    store_path = "?"

    def execute(self, sql: str, parameters: Any = (), /) -> GuardedCursor:
        return self.cursor(GuardedCursor).execute(sql, parameters)

    def executemany(self, sql: str, seq: Iterable[Any], /) -> GuardedCursor:
        return self.cursor(GuardedCursor).executemany(sql, seq)

    def backup(self, target: sqlite3.Connection, **kwargs: Any) -> None:
        try:
            super().backup(target, **kwargs)
        except sqlite3.Error as exc:
            raise explain(exc, self.store_path) from None
