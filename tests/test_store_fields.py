"""A stored per-point field is declared once (``vmio.store.fields.StoredPoint``): the schema the migrations
build holds each declared column with its declared SQL type, the row types do not declare them again, and
adding a field to a copy of vmio is one line there plus its migration: the copy stores it, reads it back and
prints it in ``show --json`` (both ways ``show`` builds its text), and an older point reads as it did."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from vmio.store import fields, show_json
from vmio.store.database import Store
from vmio.store.records import RunRecord
from vmio.store.rows import PointRow
from vmio.store.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[1]
STORES = ROOT / "tests" / "data" / "stores"


def test_declared_columns_are_the_schemas() -> None:
    with Store(":memory:") as store:
        info = {r[1]: (r[2], bool(r[3])) for r in store.db.execute("PRAGMA table_info(run)")}
    for f in fields.COLUMNS:
        assert f.column in info, f"{f.name}: the migrations build no run column {f.column!r}"
        sql_type, not_null = info[f.column]
        assert (sql_type, not_null) == (f.sql.replace(" NOT NULL", ""), "NOT NULL" in f.sql), f.name  # type: ignore[union-attr]


def test_row_types_do_not_declare_them_again() -> None:
    names = {f.name for f in fields.FIELDS}
    for cls in (RunRecord, PointRow):
        own = set(cls.__dict__.get("__annotations__", {}))
        assert not own & names, f"{cls.__name__} declares {sorted(own & names)} again"
        assert names <= {f.name for f in dataclasses.fields(cls)}


ADDED_FIELD = (  # the one line
    '    latency_layers: str | None = optional("TEXT", unit="ns")  # per-layer latency\n'
)
ADDED_MIGRATION = '    (NEXT, "a test field", "ALTER TABLE run ADD COLUMN latency_layers TEXT"),\n'

SCRIPT = r"""
import json, sqlite3, sys, time
from vmio.store import show_json
from vmio.store.database import Store
from vmio.store.records import RunRecord
from vmio.store.rows import point_rows
from vmio.store.schema import SCHEMA_VERSION

old_sql, db = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db)
c.executescript(open(old_sql).read())  # a store of the schema before the new field, with its points
c.close()
now = time.time()
with Store(db) as store:
    store.ensure_campaign("new", "new.toml", "", "{}")
    for key, value in (("with", "q2c:12;d2c:7"), ("without", None)):
        store.record(RunRecord("new", key, "t", "host", "w", 4096, None, 0, 1, "done", now, now,
                               latency_layers=value))
    stored = [r[0] for r in store.db.execute("SELECT latency_layers FROM run ORDER BY id")]
    fast = json.loads(show_json.text(store, None))
    slow = [row.to_json(facts=False) for row in point_rows(store)]
    print(json.dumps({"version": SCHEMA_VERSION, "stored": stored, "fast": fast, "slow": slow}))
"""


def test_a_new_field_is_one_line_and_its_migration(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "vmio", src / "vmio", ignore=shutil.ignore_patterns("__pycache__"))
    declaration = src / "vmio" / "store" / "fields.py"
    text = declaration.read_text()
    last = "    arrivals: str | None = optional("
    at = text.index("\n", text.index(last)) + 1
    declaration.write_text(text[:at] + ADDED_FIELD + text[at:])
    schema = src / "vmio" / "store" / "schema.py"
    text = schema.read_text()
    at = text.index("]\nSCHEMA_VERSION")
    schema.write_text(text[:at] + ADDED_MIGRATION.replace("NEXT", str(SCHEMA_VERSION + 1)) + text[at:])

    env = {**os.environ, "PYTHONPATH": str(src)}
    fixture = STORES / f"schema-v{SCHEMA_VERSION}.sql"  # the newest schema's fixture, migrated by the copy
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(fixture), str(tmp_path / "s.db")],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )  # fmt: skip
    got = json.loads(out.stdout)
    assert got["version"] == SCHEMA_VERSION + 1
    assert got["stored"][-2:] == ["q2c:12;d2c:7", None]  # the insert wrote the column
    assert got["fast"] == got["slow"]
    new = [p for p in got["fast"] if p["campaign"] == "new"]
    assert new[0]["latency_layers"] == "q2c:12;d2c:7"
    assert list(new[0])[-1] == "latency_layers"  # after the other optional fields
    assert "latency_layers" not in new[1]  # printed only where stored
    older = [p for p in got["fast"] if p["campaign"] != "new"]
    c = sqlite3.connect(tmp_path / "this.db")
    c.executescript(fixture.read_text())
    c.close()
    with Store(tmp_path / "this.db", readonly=True) as store:  # the fixture's points as this vmio prints them
        assert older == json.loads(show_json.text(store, None)) != []
