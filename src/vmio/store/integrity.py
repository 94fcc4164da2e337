"""Is an SQLite file a vmio store whose rows vmio can read? Checked when a store is opened to be read, before
any command reads a row, so a damaged or foreign store is one sentence (exit 2), not a traceback later.

The rows of the per-point detail tables (``DETAIL_TABLES``: results, histograms, samples, ...; a store of a
year of nightly runs holds millions) are checked when a command first reads that table (``check_rows``),
so ``vmio show`` of 100k points, which reads each point's stored summary, does not scan them all.

The reference is the schema ``MIGRATIONS`` build up to the file's own version: the same tables and columns
(none missing, none foreign); every INTEGER/REAL column holds numbers (finite) or NULL; every TEXT column
holds text, numbers or NULL, never a blob (no JSON, CSV cell or terminal line has a form for one that says
what it is); every JSON column holds valid JSON of the kind vmio writes (an object, an array, a list of [value, count] pairs).
Each run's row of samples (``vmio.store.packed``) holds four JSON lists of its ``n`` samples (whose numbers
``packed.numbers`` checks where they are read).
"""

from __future__ import annotations

import shlex
import sqlite3

from vmio.errors import StoreError
from vmio.store.schema import MIGRATIONS

# (table, column) -> the JSON kind vmio writes there: "object", "array", "pairs" (a list of [number, number]),
# or "any"
JSON_COLUMNS: dict[tuple[str, str], str] = {
    ("campaign", "canonical"): "object",
    ("campaign", "offsets_json"): "any",
    ("run", "host_json"): "object",
    ("run", "qemu_argv"): "array",
    ("run", "steady_json"): "any",
    ("run", "precondition_json"): "any",
    ("run", "fio_job_json"): "any",
    ("run", "hosts_json"): "array",
    ("run", "qemu_cpu_json"): "any",
    ("run", "layers_json"): "object",
    ("histogram", "bins"): "pairs",
    ("hist_log", "bins"): "pairs",
    ("layer_hist", "bins"): "pairs",
    ("membal_run", "settings"): "any",
    ("membal_run", "summary"): "any",
    ("membal_decision", "inputs"): "any",
    ("device_capacity", "result"): "any",
    ("imported_file", "jobs_json"): "array",
    ("imported_file", "disk_util_json"): "any",
}
# per-point detail: checked on a command's first read of the table, not at open
DETAIL_TABLES = frozenset({"result", "histogram", "sample", "hist_log", "oplat", "layer_hist"})
# the columns of a run's packed samples (since schema 13: ``vmio.store.packed``), each a JSON list of its n samples
PACKED = ("t", "source", "metric", "value")
# canonical's lists that reports read as lists of objects
CANONICAL_LISTS = ("targets", "workloads")
MAX_FLOAT = 1.7976931348623157e308
# number columns vmio always fills (the rows of a point add them up)
REQUIRED: dict[str, tuple[str, ...]] = {
    "result": ("iops", "bw_bytes", "total_ios", "runtime_ms", "lat_min", "lat_mean", "lat_max", "lat_stddev"),
}


def damaged(path: str, why: str) -> StoreError:
    return StoreError(
        f"the store {path!r} is not one vmio can read: {why}; give --db the file `vmio run` wrote",
        exit_code=2,
    )


def damaged_row(db: sqlite3.Connection, path: str, table: str, rowid: object, why: str) -> StoreError:
    """A damaged row, naming the campaign it belongs to and the command that removes it (the rest of the
    store stays as it is); a row of no campaign is ``damaged`` as a whole store."""
    name = campaign_of(db, table, rowid)
    where = f"table {table}, row {rowid}: {why}"
    if name is None:
        return damaged(path, where)
    return StoreError(
        f"the store {path!r} holds a damaged point of campaign {name!r} ({where}); vmio reads no store "
        f"holding one: remove that campaign with `vmio rm {shlex.quote(name)} --db {shlex.quote(path)}` "
        "(then run or import it again)",
        exit_code=2,
    )


def campaign_of(db: sqlite3.Connection, table: str, rowid: object) -> str | None:
    """The name of the campaign row ``rowid`` of ``table`` belongs to (through ``campaign_id`` or a run's
    ``run_id``, as its foreign keys say), or None."""
    keys = {
        str(r[2]): str(r[3]) for r in sqlite3.Connection.execute(db, f'PRAGMA foreign_key_list("{table}")')
    }
    if table == "campaign":
        sql = "SELECT name FROM campaign WHERE rowid = ?"
    elif "campaign" in keys:
        sql = f'SELECT c.name FROM "{table}" t JOIN campaign c ON c.id = t."{keys["campaign"]}" WHERE t.rowid = ?'
    elif "run" in keys:
        sql = (
            f'SELECT c.name FROM "{table}" t JOIN run r ON r.id = t."{keys["run"]}" '
            "JOIN campaign c ON c.id = r.campaign_id WHERE t.rowid = ?"
        )
    else:
        return None
    try:
        row = sqlite3.Connection.execute(db, sql, (rowid,)).fetchone()
    except sqlite3.Error:
        return None
    return str(row[0]) if row is not None and row[0] is not None else None


def reference_columns(version: int) -> dict[str, list[tuple[str, str]]]:
    """Per table, (column, declared type) of the schema ``MIGRATIONS`` build up to ``version``."""
    ref = sqlite3.connect(":memory:")
    try:
        for v, _name, sql in MIGRATIONS:
            if v <= version:
                ref.executescript(sql)
        return _columns(ref)
    finally:
        ref.close()


def _columns(db: sqlite3.Connection) -> dict[str, list[tuple[str, str]]]:
    tables = [
        r[0]
        for r in sqlite3.Connection.execute(
            db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return {
        t: [(r[1], str(r[2]).upper()) for r in sqlite3.Connection.execute(db, f'PRAGMA table_info("{t}")')]
        for t in tables
    }


def check_store(db: sqlite3.Connection, path: str, version: int, *, detail: bool = True) -> None:
    """Raise ``StoreError`` (exit 2) unless ``db`` has exactly the schema of ``version`` and readable rows;
    ``detail=False`` leaves the rows of ``DETAIL_TABLES`` to ``check_rows``."""
    want = reference_columns(version)
    want.setdefault("migrations", [("version", "INTEGER"), ("name", "TEXT"), ("applied", "REAL")])
    have = _columns(db)
    foreign = sorted(set(have) - set(want))
    if foreign:
        raise damaged(path, f"it holds tables vmio does not make ({', '.join(foreign[:5])})")
    missing = sorted(set(want) - set(have))
    if missing:
        raise damaged(path, f"it lacks the tables {', '.join(missing[:5])} of schema version {version}")
    for table, cols in want.items():
        present = {c for c, _t in have[table]}
        lost = [c for c, _t in cols if c not in present]
        if lost:
            raise damaged(path, f"table {table} lacks the columns {', '.join(lost[:5])}")
        if detail or table not in DETAIL_TABLES:
            _check_table(db, path, table, cols)


def check_rows(db: sqlite3.Connection, path: str, version: int, table: str) -> None:
    """``check_store``'s row checks of one table (whose columns ``check_store`` found)."""
    _check_table(db, path, table, reference_columns(version)[table])


def _check_table(db: sqlite3.Connection, path: str, table: str, cols: list[tuple[str, str]]) -> None:
    """Each rule on its own, naming the first row that breaks it, once one scan found a row that breaks one
    (the run table of 100k points: one scan, not fifteen)."""
    if not _breaks_a_rule(db, table, cols):
        if table == "campaign":
            _check_canonical(db, path)
        return
    _check_numbers(db, path, table, [c for c, t in cols if t in ("INTEGER", "REAL")])
    for col in _texts(table, cols):
        blob = _A_BLOB.format(c=f'"{col}"')
        row = _one(db, f'SELECT rowid, "{col}" FROM "{table}" WHERE {blob} LIMIT 1')
        if row is not None:
            why = f"{col} holds a blob ({shown(row[1])}), where vmio writes text"
            raise damaged_row(db, path, table, row[0], why)
    for col in REQUIRED.get(table, ()):
        row = _one(db, f'SELECT rowid FROM "{table}" WHERE "{col}" IS NULL LIMIT 1')
        if row is not None:
            raise damaged_row(db, path, table, row[0], f"{col} is empty (NULL); vmio always fills it")
    for col, _t in cols:
        kind = JSON_COLUMNS.get((table, col))
        if kind:
            _check_json(db, path, table, col, kind)
    for col in _packed(table, cols):
        row = _one(db, f'SELECT rowid, "{col}", n FROM "{table}" WHERE {_NOT_A_LIST.format(c=col)} LIMIT 1')
        if row is not None:
            why = f"{col} = {shown(row[1])} is not a JSON list of the run's {row[2]} samples (n)"
            raise damaged_row(db, path, table, row[0], why)


def _breaks_a_rule(db: sqlite3.Connection, table: str, cols: list[tuple[str, str]]) -> bool:
    """Whether a row of ``table`` breaks one of ``_check_table``'s rules (but the canonical spec's lists)."""
    rules = [_NOT_A_NUMBER.format(c=f'"{c}"') for c, t in cols if t in ("INTEGER", "REAL")]
    rules += [_A_BLOB.format(c=f'"{c}"') for c in _texts(table, cols)]
    rules += [f'"{c}" IS NULL' for c in REQUIRED.get(table, ())]
    rules += [_not_json(f'"{c}"', JSON_COLUMNS[table, c]) for c, _t in cols if (table, c) in JSON_COLUMNS]
    rules += [_NOT_A_LIST.format(c=c) for c in _packed(table, cols)]
    if not rules:
        return False
    return _one(db, f'SELECT 1 FROM "{table}" WHERE ({") OR (".join(rules)}) LIMIT 1') is not None


def _texts(table: str, cols: list[tuple[str, str]]) -> list[str]:
    """The TEXT columns of ``table`` that are not JSON (``_not_json`` refuses a blob in those)."""
    return [c for c, t in cols if t == "TEXT" and (table, c) not in JSON_COLUMNS]


def _packed(table: str, cols: list[tuple[str, str]]) -> tuple[str, ...]:
    """The packed list columns of ``table``: the sample table's since schema 13 (it has ``n``), else none."""
    return PACKED if table == "sample" and ("n", "INTEGER") in cols else ()


# not a JSON list of n items (a parse of the text, cached by SQLite for the three calls)
_NOT_A_LIST = (
    "CASE WHEN json_valid({c}) THEN json_type({c}) <> 'array' OR json_array_length({c}) IS NOT n ELSE 1 END"
)


def _not_json(c: str, kind: str) -> str:
    """A column's text is not JSON of ``kind`` (its kind asked of valid JSON only: SQLite stops on the rest)."""
    return (
        f"CASE WHEN {c} IS NULL THEN 0 WHEN json_valid({c}) = 0 THEN 1 ELSE {_KIND_SQL[kind].format(c=c)} END"
    )


def _one(db: sqlite3.Connection, sql: str) -> tuple[object, ...] | None:
    row = sqlite3.Connection.execute(db, sql).fetchone()
    return tuple(row) if row is not None else None


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# a blob (bytes: only a store written by hand holds one where vmio writes text): blobs sort above every text
_A_BLOB = "{c} >= X''"
# a finite number or NULL; text and blobs sort above every number, infinities beyond MAX_FLOAT (4 times as fast
# as typeof() and abs(): 100k points' run rows)
_NOT_A_NUMBER = f"NOT ({{c}} IS NULL OR {{c}} BETWEEN -{MAX_FLOAT!r} AND {MAX_FLOAT!r})"


def _check_numbers(db: sqlite3.Connection, path: str, table: str, cols: list[str]) -> None:
    if not cols:
        return
    bad = " OR ".join(_NOT_A_NUMBER.format(c=f'"{c}"') for c in cols)
    row = _one(db, f'SELECT rowid FROM "{table}" WHERE {bad} LIMIT 1')
    if row is None:
        return
    for col in cols:
        value = sqlite3.Connection.execute(
            db, f'SELECT "{col}" FROM "{table}" WHERE rowid = ?', row
        ).fetchone()
        v = value[0] if value else None
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, float) and abs(v) > MAX_FLOAT):
            raise damaged_row(db, path, table, row[0], f"{col} = {shown(v)} is not a finite number")


_KIND_SQL = {
    "object": "json_type({c}) <> 'object'",
    "array": "json_type({c}) <> 'array'",
    "pairs": (
        "json_type({c}) <> 'array' OR EXISTS (SELECT 1 FROM json_each({c}) AS p WHERE p.type <> 'array' "
        "OR json_array_length(p.value) <> 2 OR json_type(p.value, '$[0]') NOT IN ('integer', 'real') "
        "OR json_type(p.value, '$[1]') NOT IN ('integer', 'real'))"
    ),
    "any": "0",
}
_KIND_WORDS = {"object": "a JSON object", "array": "a JSON array", "pairs": "a list of [value, count] pairs"}


def _check_json(db: sqlite3.Connection, path: str, table: str, col: str, kind: str) -> None:
    c = f'"{col}"'
    row = _one(db, f'SELECT rowid, {c} FROM "{table}" WHERE {c} IS NOT NULL AND json_valid({c}) = 0 LIMIT 1')
    if row is not None:
        raise damaged_row(db, path, table, row[0], f"{col} = {shown(row[1])} is not valid JSON")
    cond = _KIND_SQL[kind].format(c=c)
    row = _one(db, f'SELECT rowid, {c} FROM "{table}" WHERE {c} IS NOT NULL AND ({cond}) LIMIT 1')
    if row is not None:
        raise damaged_row(db, path, table, row[0], f"{col} = {shown(row[1])} is not {_KIND_WORDS[kind]}")
    if (table, col) == ("campaign", "canonical"):
        _check_canonical(db, path)


def _check_canonical(db: sqlite3.Connection, path: str) -> None:
    """The canonical spec's lists that reports read as lists of objects are such lists."""
    c = '"canonical"'
    for key in CANONICAL_LISTS:
        cond = (
            f"json_type({c}, '$.{key}') NOT IN ('array') OR EXISTS (SELECT 1 FROM json_each({c}, "
            f"'$.{key}') AS e WHERE e.type <> 'object')"
        )
        row = _one(
            db,
            f"SELECT rowid, {c} FROM campaign WHERE json_type({c}, '$.{key}') IS NOT NULL "
            f"AND ({cond}) LIMIT 1",
        )
        if row is not None:
            raise damaged_row(db, path, "campaign", row[0], f"canonical.{key} is not a list of objects")
