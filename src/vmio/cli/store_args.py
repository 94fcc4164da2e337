"""The store on the command line: ``--db`` (default ``./vmio.db``, or ``$VMIO_DB``) and opening it."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vmio.store import Store


def default_db() -> str:
    return os.environ.get("VMIO_DB", "vmio.db")


def add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=None, help="the store (default ./vmio.db, or $VMIO_DB)")


def open_store(args: argparse.Namespace, *, write: bool = False) -> Store:
    """The store of ``--db``; commands that only read it open it read-only (never creating or changing it)."""
    from vmio.store import Store  # SQLite and the spec model: when a command runs, not for its --help

    return Store(args.db or default_db(), readonly=not write)
