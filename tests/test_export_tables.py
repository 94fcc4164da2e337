"""``vmio export``'s ``.series`` and ``.oplat`` tables (CSV and JSON) and its CSV points table, whatever the
cells hold: the same text as the reference, the standard library's CSV writer and ``json.dumps(indent=1)`` over
the rows a plain SQLite query reads (text cells starting with a formula's sign made inert, as the rule
says). The export writes most chunks of rows as one %-format and falls back to the writers for a chunk
holding a character they would quote or escape: both ways are held here against the reference."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.cli import main
from vmio.store import RunRecord, Store, export, show_json
from vmio.store.rows import point_rows

SERIES = ("point", "t", "source", "metric", "value")
OPLAT = ("point", "host", "job", "seq", "t_ms", "lat_ns", "ddir", "offset")
FORMULA = ("=", "+", "-", "@", "\t", "\r")

plain_text = st.text(alphabet="abcxyz:_./0189 %", min_size=1, max_size=8)  # nothing a writer quotes
texts = (
    plain_text
    | st.text(max_size=6)
    | st.sampled_from(["=1+1", "-x", "@a", "a,b", 'q"', "l\nb", "\r", "é", "\x7f"])
)
numbers = st.none() | st.integers(-(2**62), 2**62) | st.floats(allow_nan=False, allow_infinity=False)
sample_rows = st.lists(
    st.tuples(st.sampled_from([0.0, 0.5, -1.25, 1e16]), texts, texts, numbers), min_size=1, max_size=30
)
oplat_rows = st.lists(
    st.tuples(st.none() | texts, st.none() | texts, numbers, numbers, numbers, st.none() | texts, numbers),
    max_size=20,
)


def point(rep: int, samples: Sequence[tuple[Any, ...]] = ()) -> RunRecord:
    """A done point of repetition ``rep`` with ``samples`` and no figures (the tests write what they need into
    its rows)."""
    return RunRecord(
        campaign="c", point_key=f"t/w/bs=4096/offered=max/load=0/rep={rep}", target="t", target_kind="host",
        workload="w", bs=4096, offered_iops=None, load_processes=0, repetition=rep, status="done", started=0.0,
        ended=1.0, samples=list(samples),
    )  # fmt: skip


def split(samples: Sequence[tuple[object, ...]]) -> list[list[tuple[object, ...]]]:
    """The samples of the two points: by turns, the first three again (a sample's duplicates tie on the export's
    order: they keep the order written)."""
    rows = [*samples, *samples[:3]]
    return [rows[0::2], rows[1::2]]


def store(
    path: Path, keys: list[str], samples: Sequence[tuple[object, ...]], ops: Sequence[tuple[object, ...]]
) -> None:
    """Two points recorded by vmio with their samples (``split``), their keys and operations then written as
    given."""
    with Store(path) as s:
        s.ensure_campaign("c", "c.toml", "", json.dumps({"targets": [], "workloads": []}))
        for rep, mine in enumerate(split(samples), 1):
            s.record(point(rep, mine))
    db = sqlite3.connect(path)
    with db:
        ids = [r[0] for r in db.execute("SELECT id FROM run ORDER BY id")]
        for run_id, key in zip(ids, keys, strict=True):
            db.execute("UPDATE run SET point_key = ? WHERE id = ?", (key, run_id))
        db.executemany(
            "INSERT INTO oplat (run_id, host, job, seq, t_ms, lat_ns, ddir, offset) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(ids[i % 2], *row) for i, row in enumerate(ops)],
        )
    db.close()


def reference(path: Path, table: str, columns: tuple[str, ...], order: str) -> list[tuple[object, ...]]:
    """The table's rows as a plain query reads them: by run, then the export's order, then as written."""
    db = sqlite3.connect(path)
    picked = ", ".join(f"t.{c}" for c in columns[1:])
    rows = db.execute(
        f"SELECT r.point_key, {picked} FROM run r JOIN {table} t ON t.run_id = r.id ORDER BY r.id, {order}, t.rowid"
    ).fetchall()
    db.close()
    return rows


def sample_reference(keys: list[str], samples: Sequence[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """The two points' samples (``split``) as a plain SQLite table of one REAL-typed row a sample (the store's
    form before schema 13) reads them: by point, then time, source and metric, then as written."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE TABLE sample (run INTEGER, point TEXT, t REAL NOT NULL, source TEXT NOT NULL, metric TEXT NOT NULL, "
        "value REAL)"
    )
    for run, (key, mine) in enumerate(zip(keys, split(samples), strict=True)):
        db.executemany("INSERT INTO sample VALUES (?, ?, ?, ?, ?, ?)", [(run, key, *row) for row in mine])
    rows = db.execute(
        "SELECT point, t, source, metric, value FROM sample ORDER BY run, t, source, metric, rowid"
    ).fetchall()
    db.close()
    return rows


def csv_text(columns: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(
        [("'" + v if isinstance(v, str) and v.startswith(FORMULA) else v) for v in row] for row in rows
    )
    return buf.getvalue()


@settings(max_examples=20, deadline=None)
@given(keys=st.lists(texts, min_size=2, max_size=2, unique=True), samples=sample_rows, ops=oplat_rows)
def test_side_tables_as_the_writers_write_them(
    tmp_path_factory: pytest.TempPathFactory,
    keys: list[str],
    samples: list[tuple[object, ...]],
    ops: list[tuple[object, ...]],
) -> None:
    folder = tmp_path_factory.mktemp("t")
    db = folder / "s.db"
    store(db, keys, samples, ops)
    series = sample_reference(keys, samples)
    oplat = reference(db, "oplat", OPLAT, "t.seq")
    assert main(["export", "c", "--format", "csv", "-o", str(folder / "e.csv"), "--db", str(db)]) == 0
    assert (folder / "e.series.csv").read_bytes() == csv_text(SERIES, series).encode()
    assert (folder / "e.oplat.csv").read_bytes() == csv_text(OPLAT, oplat).encode()
    assert main(["export", "c", "--format", "json", "-o", str(folder / "e.json"), "--db", str(db)]) == 0
    text = (folder / "e.json").read_text()
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=1)
    assert doc["series"] == [dict(zip(SERIES, r, strict=True)) for r in series]
    assert doc["oplat"] == [dict(zip(OPLAT, r, strict=True)) for r in oplat]


def test_a_plain_chunk_and_one_with_quotes_in_one_table(tmp_path: Path) -> None:
    """More rows than a chunk holds (5000): the first chunk with a comma and formulas in its text cells (through
    the writers), the second plain (one %-format)."""
    samples: list[tuple[object, ...]] = [(i * 0.5, "dev:vda", "read_iops", i * 1.1) for i in range(6000)]
    samples += [(1.0, "a,b", "m", -2.5), (2.0, "=cmd", "-m", None)]  # a comma: the one cell the writer quotes
    db = tmp_path / "s.db"
    store(db, ["k/1", "-k/2"], samples, [])
    series = sample_reference(["k/1", "-k/2"], samples)
    assert main(["export", "c", "--format", "csv", "-o", str(tmp_path / "e.csv"), "--db", str(db)]) == 0
    assert (tmp_path / "e.series.csv").read_text() == csv_text(SERIES, series)
    text = (tmp_path / "e.series.csv").read_text()
    assert 'k/1,1.0,"a,b",m,-2.5\n' in text and "'-k/2,2.0,'=cmd,'-m,\n" in text
    assert main(["export", "c", "--format", "json", "-o", str(tmp_path / "e.json"), "--db", str(db)]) == 0
    assert json.loads((tmp_path / "e.json").read_text())["series"] == [
        dict(zip(SERIES, r, strict=True)) for r in series
    ]


def test_the_points_table_as_the_writer_writes_it(tmp_path: Path) -> None:
    """The points' cells as the CSV writer writes ``flat_points``' rows, text starting with a formula's sign
    made inert: a point key that starts with "-" and one that does not, in chunks of 1000 points."""
    db = tmp_path / "s.db"
    store(db, ["-t/1", "t/2"], [], [])
    with Store(db) as s:
        rows = export.flat_points(s, "c")
    names = list(dict.fromkeys(k for r in rows for k in r))
    want = csv_text(tuple(names), [tuple(r.get(k, "") for k in names) for r in rows])
    assert main(["export", "c", "--format", "csv", "-o", str(tmp_path / "e.csv"), "--db", str(db)]) == 0
    got = (tmp_path / "e.csv").read_text()
    assert got == want and "\n'-t/1," not in got and ",'-t/1," in got and ",t/2," in got


def _items(rows: list[dict[str, object]]) -> str:
    """The rows' keys in order and values with their types (``1 == 1.0`` would hide a changed type)."""
    return repr([list(r.items()) for r in rows])


ODD_POINTS = (  # run columns a store written by vmio over the years can hold, one point each
    {"target": "=cmd", "workload": "a,b", "accel": 'q"x'},
    {"workload": "l\nb", "qemu_version": "+1", "device": "é", "error": "-boom\r"},
    {"dev_busy_pct": None, "cpu_usr_pct": None, "read_p99": None, "status": "failed"},
    {
        "layers_json": json.dumps(
            {"guest": {"read": {"mean_us": 1.5, "ios": 5}}, "host_block": {"why": "off"}}
        )
    },
    {
        "host_json": json.dumps(
            {
                "qemu_machine": "microvm",
                "guest_io_warnings": 3,
                "dstore": {"pool": ["a"]},
                "storage": [{"filesystem": "ext4", "disks": [{"model": "=X", "rotational": 0}]}],
            }
        )
    },  # fmt: skip
    {"host_json": json.dumps({"storage": [], "qemu_machine": {"odd": 1}}), "target_kind": "qemu"},
    {
        "qemu_cpu_json": json.dumps({"vcpu": 1.5, "main_loop": 0.5, "iothreads": [1.0, 2], "other": 0}),
        "target_kind": "qemu",
        "qemu_version": "10.0.2",
    },  # fmt: skip
    {"qemu_cpu_json": json.dumps({"vcpu": 1}), "target_kind": "libvirt"},
    {
        "steady_json": json.dumps({"criterion": "iops:5%", "reached": True, "at_s": None, "jobs": 2}),
        "iodepth": 8,
        "numjobs": 2,
        "offered_pct": 12.5,
        "arrivals": "poisson",
        "fio_job_json": json.dumps({"file": "=x.fio"}),
    },  # fmt: skip
    {"offered_iops": 300, "read_iops": -5.0, "write_bw": 1e16, "read_lat_mean": 0.1 + 0.2, "read_jobs": 0},
    {"hosts_json": json.dumps(["h1", "-h2", "h,3"]), "host_json": json.dumps({"hostname": "x\\y"})},
    {"read_jobs": None},  # no stored summary: read from the results, as a store whose columns were emptied
)


def test_the_flat_rows_as_each_point_row_flattens(tmp_path: Path) -> None:
    """``export.flat_points`` (one getter per point, a template per shape) gives the same rows, keys in the same
    order and values of the same types, as ``flat_row`` of each ``PointRow``, and ``show_json.flat_text`` the
    same text as ``json.dumps(indent=1)`` of them: points of every shape a store
    holds (optional fields, QEMU threads, storage, dstore, traced layers, odd text, no stored summary) and the
    stores of tests/data/stores."""
    db = tmp_path / "s.db"
    store(db, ["t/1", "t/2"], [], [])
    with Store(db) as s:
        for rep in range(3, 3 + len(ODD_POINTS)):
            s.record(point(rep))
    conn = sqlite3.connect(db)
    with conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM run ORDER BY id")][2:]
        for run_id, values in zip(ids, ODD_POINTS, strict=True):
            conn.execute(
                f"UPDATE run SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?",
                (*values.values(), run_id),
            )
    conn.close()
    stores = [db]
    for fixture in sorted(Path(__file__).parent.glob("data/stores/*.db")):
        stores.append(tmp_path / fixture.name)
        stores[-1].write_bytes(fixture.read_bytes())
    for path in stores:
        with Store(path) as s:
            for name in s.campaigns():
                flat = export.flat_points(s, name)
                assert _items(flat) == _items([export.flat_row(r) for r in point_rows(s, name)]), (path, name)
                assert show_json.flat_text(s, name, export.flat_row) == json.dumps(flat, indent=1), (
                    path,
                    name,
                )
                assert flat
    with Store(db) as s:
        keys = {k for r in export.flat_points(s, "c") for k in r}
    assert {
        "layer_guest_read_mean_us",
        "dstore_pool",
        "filesystem",
        "model",
        "steady",
        "iodepth",
    } <= keys  # every shape was there
