"""The store on the command line: ``--db`` (default ``./vmio.db``, or ``$VMIO_DB``) and opening it."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vmio.store import Store

SIDE_FILES = ("-wal", "-shm", "-journal", ".run-lock")


def default_db() -> str:
    return os.environ.get("VMIO_DB", "vmio.db")


def add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=None, help="the store (default ./vmio.db, or $VMIO_DB)")


def open_store(args: argparse.Namespace, *, write: bool = False) -> Store:
    """The store of ``--db``; commands that only read it open it read-only (never creating or changing it)."""
    from vmio.store import Store  # SQLite and the spec model: when a command runs, not for its --help

    return Store(args.db or default_db(), readonly=not write)


@contextlib.contextmanager
def writing_store(args: argparse.Namespace) -> Iterator[Store]:
    """The store of ``--db`` opened to write; a store this command created is removed again when the command
    fails before it stored a point (a failed ``vmio import`` or ``vmio run`` leaves no empty store behind)."""
    path = args.db or default_db()
    from vmio.store import Store

    created = path != ":memory:" and not os.path.lexists(path)
    try:
        with Store(path) as store:
            yield store
    except BaseException:
        if created and _holds_no_point(path):
            for name in (path, *(path + side for side in SIDE_FILES)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name)
        raise


def _holds_no_point(path: str) -> bool:
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            return int(db.execute("SELECT COUNT(*) FROM run").fetchone()[0]) == 0
    except sqlite3.Error:
        return False
