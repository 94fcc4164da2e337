"""Write tests/data/stores/schema-vN.sql for the current schema version N: the previous version's fixture
migrated by this vmio and dumped, so every released schema keeps a fixture with the same known points.

Run after adding a migration: .venv/bin/python scripts/store-fixture.py
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

from vmio.store import SCHEMA_VERSION, Store

STORES = Path(__file__).resolve().parents[1] / "tests" / "data" / "stores"


def main() -> int:
    previous = STORES / f"schema-v{SCHEMA_VERSION - 1}.sql"
    out = STORES / f"schema-v{SCHEMA_VERSION}.sql"
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "fixture.db"
        with sqlite3.connect(db) as conn:
            conn.executescript(previous.read_text())
        with Store(db) as store:
            assert store.schema_version == SCHEMA_VERSION
        with sqlite3.connect(db) as conn:
            text = "\n".join(conn.iterdump()) + "\n"
    out.write_text(text)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
