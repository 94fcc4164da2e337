"""``vmio export`` of a big campaign on two CPUs: a forked child makes the points table while this process
makes the ``.series`` and ``.oplat`` tables (``export._beside``). The files are byte for byte those of an
export in one process; a child that fails leaves its part to this process; no child outlives the command;
a store read through a migrated copy in memory is exported in one process."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vmio.cli import main
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
    made = show_json.flat_text if fmt == "json" else show_json.flat_values

    def fails_in_the_child(*args: object, **kwargs: object) -> object:
        if os.getpid() != parent:
            raise RuntimeError("the child's part failed")
        return made(*args, **kwargs)  # type: ignore[operator]

    monkeypatch.setattr(show_json, made.__name__, fails_in_the_child)
    assert _export(db, fmt, tmp_path / "failed") == alone
    assert started == [1, 1]
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
