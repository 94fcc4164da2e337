"""Every case of ``tests/data/bad/cases.toml`` through the CLI: its exit code, one line on stderr naming the
value, no traceback, no file left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from vmio.cli import main

from conftest import store_from_sql

BAD = Path(__file__).parent / "data" / "bad"
CASES: list[dict[str, Any]] = tomllib.loads((BAD / "cases.toml").read_text())["case"]


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c["argv"])[:60] for c in CASES])
def test_bad_input_is_one_clear_error(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    fixture = store_from_sql("schema-v2.sql", tmp_path / "fixture.db")
    special = _special_files(tmp_path / "special", case)
    monkeypatch.chdir(tmp)
    monkeypatch.delenv("VMIO_DB", raising=False)
    names = {"data": BAD, "tmp": tmp, "fixture": fixture, "special": special}
    argv = [a.format(**names) for a in case["argv"]]
    beside = sorted(special.iterdir())
    code = _within(HANG_S, main, argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert case["message"] in lines[0]
    assert code == case["exit"], lines[0]
    assert list(tmp.iterdir()) == [], "a bad input left a file behind"
    assert sorted(special.iterdir()) == beside, "a read left a file beside its input (a store's -wal/-shm?)"


HANG_S = 60  # a case still running after this is a hang (a FIFO opened for reading blocks forever)


def _within(seconds: int, func: Callable[[list[str]], int], argv: list[str]) -> int:
    """``func(argv)``, failing the test when it takes more than ``seconds`` (an alarm interrupts a blocked
    open)."""

    def hung(_signum: int, _frame: object) -> None:
        raise AssertionError(f"vmio {' '.join(argv)} still runs after {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        return func(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _special_files(folder: Path, case: dict[str, Any]) -> Path:
    """{special}/fifo and fifo.fio (named pipes), {special}/store.db (the fixture store in WAL mode, changed by the case's
    ``store_sql``), {special}/folder, {special}/file, {special}/other.db (SQLite of another program),
    {special}/truncated.db (the store's first third): inputs that cannot live in the repository."""
    folder.mkdir()
    os.mkfifo(folder / "fifo")
    os.mkfifo(folder / "fifo.fio")
    (folder / "folder").mkdir()
    (folder / "file").write_text("a file\n")
    store = folder / "store.db"
    with contextlib.closing(sqlite3.connect(store)) as db:
        db.executescript((BAD.parent / "stores" / "schema-v2.sql").read_text())
        db.execute("PRAGMA journal_mode = WAL")
        if case.get("store_sql"):
            db.executescript(case["store_sql"])
        db.commit()
    assert not (folder / "store.db-wal").exists()
    with contextlib.closing(sqlite3.connect(folder / "other.db")) as db:  # a SQLite file of another program
        db.executescript("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
    whole = (folder / "store.db").read_bytes()  # a store cut short (a copy that stopped midway)
    (folder / "truncated.db").write_bytes(whole[: len(whole) // 3])
    return folder


# fio's JSON has a grammar: a job's directions, each with counts, times, rates and latency tables. Any figure
# vmio reads, set out of its range anywhere, ends in one sentence naming the file and the field, exit 2, and no
# store (issue 38: 10^400 total_ios was an OverflowError, runtime = -1 and a percentile key "nan" were stored).
IMPORT_FIELDS = [("read", "total_ios"), ("read", "runtime"), ("read", "iops"), ("read", "bw_bytes"),
                 ("read", "io_bytes"), ("write", "total_ios"), ("write", "runtime"), ("", "usr_cpu"),
                 ("", "sys_cpu"), ("", "job_runtime"), ("read/lat_ns", "min"), ("read/lat_ns", "mean"),
                 ("read/clat_ns", "max"), ("read/clat_ns", "stddev")]  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(IMPORT_FIELDS),
    value=st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63), st.floats(max_value=-1e-9)),
)
def test_an_import_figure_out_of_range_is_one_sentence_and_no_store(
    field: tuple[str, str], value: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import uuid

    doc = json.loads((BAD / "import-runtime-minus-1.json").read_text())
    job = doc["jobs"][0]
    job["read"]["runtime"] = 1000  # the base: fio's own run, valid
    where, key = field
    table = job
    for part in filter(None, where.split("/")):
        table = table[part]
    table[key] = value
    folder = tmp_path / uuid.uuid4().hex
    folder.mkdir()
    path = folder / "fio.json"
    path.write_text(json.dumps(doc))
    code = main(["import", str(path), "--campaign", "c", "--db", str(folder / "v.db")])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err + out
    (line,) = err.strip().splitlines()
    assert str(path) in line and key in line
    assert sorted(p.name for p in folder.iterdir()) == ["fio.json"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.one_of(st.sampled_from(["nan", "inf", "-1", "0", "100.5", "p99", ""]), st.text(max_size=8)))
def test_a_percentile_key_that_is_not_a_share_is_refused(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import math
    import uuid

    try:
        share = float(key)
        assume(not (math.isfinite(share) and 0 < share <= 100))
    except ValueError:
        pass
    doc = json.loads((BAD / "import-runtime-minus-1.json").read_text())
    doc["jobs"][0]["read"]["runtime"] = 1000
    doc["jobs"][0]["read"]["clat_ns"]["percentile"][key] = 5
    folder = tmp_path / uuid.uuid4().hex
    folder.mkdir()
    (folder / "fio.json").write_text(json.dumps(doc))
    code = main(["import", str(folder / "fio.json"), "--campaign", "c", "--db", str(folder / "v.db")])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a percentile" in err
    assert sorted(p.name for p in folder.iterdir()) == ["fio.json"]
