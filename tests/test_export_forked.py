"""``vmio export`` of a big campaign on two CPUs: a forked child makes the points table while this process
makes the ``.series`` and ``.oplat`` tables (``export._beside``). The files are byte for byte those of an
export in one process; a child that fails leaves its part to this process; no child outlives the command;
a store read through a migrated copy in memory is exported in one process."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from test_store_samples import recorded  # a store of one run with one sample
from vmio.cli import main
from vmio.errors import StoreError
from vmio.store import Store, export, show_json
from vmio.system import forked

from conftest import only_this_thread, store_from_sql

STORES = Path(__file__).parent / "data" / "stores"


def _export(db: Path, fmt: str, out: Path) -> dict[str, bytes]:
    out.mkdir()
    assert main(["export", "demo", "--format", fmt, "-o", str(out / f"x.{fmt}"), "--db", str(db)]) == 0
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _no_child_left() -> None:
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_child_makes_the_points_and_the_files_are_the_same(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(os.sched_getaffinity(0)) >= 2, "this machine has one CPU: export would not fork"
    only_this_thread()
    db = tmp_path / "demo.db"
    shutil.copy(STORES / "demo000.db", db)
    Store(db).close()  # migrated in its file (a read-only open of an older store reads a migrated copy)
    alone = _export(db, fmt, tmp_path / "alone")  # 42 points: under FORK_POINTS, one process
    started = []
    start = forked.start
    monkeypatch.setattr(forked, "start", lambda work: started.append(1) or start(work))
    monkeypatch.setattr(export, "FORK_POINTS", 1)
    assert _export(db, fmt, tmp_path / "two") == alone
    assert started == [1] and len(alone) == (1 if fmt == "json" else 3)
    _no_child_left()
    # the child's make fails (in the child only): this process makes the points itself, the same files
    parent = os.getpid()
    made = show_json.flat_items if fmt == "json" else show_json.flat_values

    here = []  # the points made by this process

    def fails_in_the_child(*args: object, **kwargs: object) -> object:
        if os.getpid() != parent:
            raise RuntimeError("the child's part failed")
        here.append(1)
        return made(*args, **kwargs)  # type: ignore[operator]

    monkeypatch.setattr(show_json, made.__name__, fails_in_the_child)
    assert _export(db, fmt, tmp_path / "failed") == alone
    assert started == [1, 1] and here == [1]  # the child's failure reached, and its part made here
    _no_child_left()


def test_a_store_migrated_in_memory_is_exported_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = store_from_sql("schema-v12-samples.sql", tmp_path / "v12.db")
    monkeypatch.setattr(forked, "start", lambda work: pytest.fail("forked for a store migrated in memory"))
    monkeypatch.setattr(export, "FORK_POINTS", 1)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["export", "fixture", "--format", "csv", "-o", str(out / "x.csv"), "--db", str(db)]) == 0
    assert (out / "x.series.csv").read_text().count("\n") > 1


@pytest.fixture
def forking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, bytes]]:
    """The demo store migrated in its file, its JSON exported in one process, and exports made to fork
    (``FORK_POINTS`` 1) in chunks of 5 points (``show_json.CHUNK``: 42 points, 9 chunks)."""
    assert len(os.sched_getaffinity(0)) >= 2, "this machine has one CPU: export would not fork"
    only_this_thread()
    db = tmp_path / "demo.db"
    shutil.copy(STORES / "demo000.db", db)
    Store(db).close()
    alone = _export(db, "json", tmp_path / "alone")
    monkeypatch.setattr(export, "FORK_POINTS", 1)
    monkeypatch.setattr(show_json, "CHUNK", 5)
    return db, alone


def _slow_child(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Each chunk of points the child makes takes ``seconds`` longer (this process' none)."""
    parent, fill = os.getpid(), show_json._fill

    def slow(*args: Any) -> str:
        if os.getpid() != parent:
            time.sleep(seconds)
        return fill(*args)

    monkeypatch.setattr(show_json, "_fill", slow)


def _wholes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each time this process writes every point itself (``export._json_points``: the child's text cut off)."""
    made: list[int] = []
    points = export._json_points
    monkeypatch.setattr(export, "_json_points", lambda *a: made.append(1) or points(*a))
    return made


def _shares(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """What the child told this process when asked for a share (``export._told``), as the export runs."""
    told: list[int | None] = []
    tell = export._told
    monkeypatch.setattr(export, "_told", lambda fd: told.append(tell(fd)) or told[-1])
    return told


def test_the_child_gives_a_share_of_the_points_and_the_document_is_the_same(
    forking: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked once this process has made the series and oplat, the child (slowed: it has made its first
    chunks of 5 points, not all 9) gives this process the later half of the runs it has not reached; each
    writes its points and the document is byte for byte the one-process export's."""
    db, alone = forking
    _slow_child(monkeypatch, 0.2)
    told, wholes = _shares(monkeypatch), _wholes(monkeypatch)
    assert _export(db, "json", tmp_path / "shared") == alone
    assert wholes == []  # the child's text and this process' share, as they were written
    with Store(db, readonly=True) as s:
        ids = [r[export.RUN_ID] for c in s.run_tuples("demo", show_json.COLUMNS) for r in c]
    assert len(told) == 1 and told[0] in ids[10:-5], (told, ids)  # past two chunks, short of the last
    _no_child_left()


def test_a_child_done_before_it_is_asked_shares_nothing(
    forking: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process slowed instead: the child has written every point when asked, and ended (told: 0)."""
    db, alone = forking
    told = _shares(monkeypatch)
    _slow_rest(monkeypatch)
    wholes = _wholes(monkeypatch)
    assert _export(db, "json", tmp_path / "unshared") == alone
    assert told == [0] and wholes == []
    _no_child_left()


def _slow_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process makes the series and oplat 1.5 s later (the child, 42 points, has long ended)."""
    rest = export._json_rest
    monkeypatch.setattr(export, "_json_rest", lambda *a: time.sleep(1.5) or rest(*a))


@pytest.mark.parametrize("when", ["before it is asked", "after it gave a share"])
def test_a_child_that_fails_having_written_points_leaves_them_all_to_this_process(
    when: str, forking: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child's text is cut off where it began and this process writes every point: the document is
    the same, no child is left."""
    db, alone = forking
    parent, items = os.getpid(), show_json.flat_items
    _slow_child(monkeypatch, 0.2)
    told = _shares(monkeypatch)
    if when == "before it is asked":
        _slow_rest(monkeypatch)

    def fails_in_the_child(*args: Any) -> Iterator[str]:
        made = items(*args)
        if os.getpid() == parent:
            yield from made
            return
        for k, item in enumerate(made):
            if k == (1 if when == "before it is asked" else 4):  # after a share is given: 3 chunks in
                raise RuntimeError("the child's part failed")
            yield item

    monkeypatch.setattr(show_json, "flat_items", fails_in_the_child)
    wholes = _wholes(monkeypatch)
    assert _export(db, "json", tmp_path / "failed") == alone
    assert wholes == [1]
    assert told == ([0] if when == "before it is asked" else told[:1]) and told[0] is not None
    assert when == "before it is asked" or told[0] > 0, told
    _no_child_left()


def test_a_child_past_its_time_is_stopped_before_its_text_is_cut_off(
    forking: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that neither tells nor ends within ``CHILD_TIMEOUT`` is killed, then its text cut off and
    every point written by this process: the same document. Not stopped, the child would write its first
    chunk (at 1 s) into the file while this process writes its points (from 0.3 s, 1.5 s long) and the
    texts would mix."""
    db, alone = forking
    _slow_child(monkeypatch, 1.0)
    monkeypatch.setattr(export, "CHILD_TIMEOUT", 0.3)
    points = export._json_points
    monkeypatch.setattr(export, "_json_points", lambda *a: time.sleep(1.5) or points(*a))
    wholes = _wholes(monkeypatch)
    assert _export(db, "json", tmp_path / "late") == alone
    assert wholes == [1]
    _no_child_left()


def test_a_share_that_is_not_for_the_templates_is_written_by_this_process_whole(
    forking: tuple[Path, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a point of this process' share is not for the templates (``Untemplated``: the generic
    printer's), the child's text is cut off and ``flat_text`` writes all the points: the same document."""
    db, alone = forking
    parent, items = os.getpid(), show_json.flat_items
    _slow_child(monkeypatch, 0.2)
    told = _shares(monkeypatch)

    def untemplated_share(*args: Any) -> Iterator[str]:
        if os.getpid() == parent and len(args) > 4:  # the share's runs given: not flat_text's call
            raise show_json.Untemplated
        return items(*args)

    monkeypatch.setattr(show_json, "flat_items", untemplated_share)
    wholes = _wholes(monkeypatch)
    assert _export(db, "json", tmp_path / "generic") == alone
    assert wholes == [1]
    assert len(told) == 1 and told[0], told
    _no_child_left()


@pytest.mark.parametrize("apart", [False, True], ids=["ids in a row", "ids apart"])
def test_runs_from_an_id_and_a_share_in_both_of_run_tuples_reading_orders(
    apart: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_tuples(first=)`` and ``run_id_past`` against the campaign's ids in order (sqlite3's own query),
    with its runs' ids in a row (read in id order) and four in five runs deleted (read through the index);
    and the document of a shared export of the latter the same as the one-process one."""
    db = tmp_path / "demo.db"
    shutil.copy(STORES / "demo000.db", db)
    with Store(db) as s:
        if apart:
            s.db.execute("DELETE FROM run WHERE id % 5 <> 0")
    with sqlite3.connect(db) as plain:
        demo = "SELECT r.id FROM run r JOIN campaign c ON c.id = r.campaign_id WHERE c.name = 'demo'"
        ids = [r[0] for r in plain.execute(demo + " ORDER BY r.id")]
    plain.close()
    assert len(ids) == (8 if apart else 42) and (ids[-1] - ids[0] + 1 > 4 * len(ids)) == apart
    with Store(db, readonly=True) as s:
        for k in (0, 1, len(ids) // 2, len(ids) - 1):
            assert [r[0] for c in s.run_tuples("demo", ["id"], 3, first=ids[k]) for r in c] == ids[k:]
            for skip in (0, 2):
                past = ids[k + 1 + skip] if k + 1 + skip < len(ids) else None
                assert s.run_id_past("demo", ids[k], skip) == past
    if apart:
        alone = _export(db, "json", tmp_path / "alone")
        monkeypatch.setattr(export, "FORK_POINTS", 1)
        monkeypatch.setattr(show_json, "CHUNK", 2)
        _slow_child(monkeypatch, 0.6)  # this process asks well within the child's first chunk
        told, wholes = _shares(monkeypatch), _wholes(monkeypatch)
        assert _export(db, "json", tmp_path / "shared") == alone
        assert wholes == []
        assert told == [ids[5]], (told, ids)  # after the child's first chunk of 2: half of the 6 left
        _no_child_left()


def test_a_reader_opens_the_file_this_store_has_open_not_one_put_in_its_place(tmp_path: Path) -> None:
    """``Store.reader`` (the child's connection, without the open's checks) reads the file this store
    checked; a file renamed into its path since is refused (one error naming the store), and the export of
    a child that met it is this process' (its file's 42 points, not the other's 41)."""
    db, other = tmp_path / "demo.db", tmp_path / "other.db"
    shutil.copy(STORES / "demo000.db", db)
    Store(db).close()
    shutil.copy(db, other)
    with Store(other) as o:
        o.db.execute("DELETE FROM run WHERE id = 42")
    with Store(db, readonly=True) as s:
        with s.reader() as twin:
            assert twin.run_count("demo") == 42
        os.replace(other, db)
        with pytest.raises(StoreError, match=r"demo\.db' was replaced while vmio read it"):
            s.reader()
        assert s.run_count("demo") == 42


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_an_error_in_this_process_part_ends_the_child_and_writes_nothing(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged series row met by this process while the child makes the points: one error naming the row,
    the child ended (none left), no file written (the document's temporary removed too)."""
    only_this_thread()
    db, run_id = recorded(tmp_path / "s.db")
    with sqlite3.connect(db) as c:
        c.execute("UPDATE sample SET t = ? WHERE run_id = ?", ('["x"]', run_id))
    c.close()
    started = []
    start = forked.start
    monkeypatch.setattr(forked, "start", lambda work: started.append(1) or start(work))
    monkeypatch.setattr(export, "FORK_POINTS", 1)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["export", "fixture", "--format", fmt, "-o", str(out / f"e.{fmt}"), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"(table sample, row {run_id}: t holds 'x', which is not a finite number)" in err, err
    assert started == [1] and list(out.iterdir()) == []
    _no_child_left()
