"""Outputs and stores at their edges: an export that meets a full disk (a real small tmpfs) keeps none of its
files and names the user's path, exit 1; read-only commands leave no -wal/-shm beside a store that had none,
and a `show` while a writer holds the store open still sees its committed points and leaves its files be."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.store import Store

from conftest import store_from_sql

STORES = Path(__file__).parent / "data" / "stores"


def _fixture_store(path: Path) -> Path:
    store_from_sql("schema-v2.sql", path)
    with Store(path):  # migrated to this vmio's schema, WAL mode, as `vmio run` leaves it
        pass
    assert not Path(f"{path}-wal").exists()
    return path


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "vmio-test-full", str(mnt)], check=True, timeout=30
    )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False, timeout=30)


def test_export_on_a_full_disk_keeps_no_file_and_names_the_users_path(
    small_tmpfs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _fixture_store(tmp_path / "vmio.db")
    filler = small_tmpfs / "filler"
    with open(filler, "wb") as f:  # leave one 4 KiB page: room for the first file, not the second
        f.write(b"x" * (12 << 10))
    out = small_tmpfs / "points.csv"
    code = main(["export", "fixture", "--format", "csv", "-o", str(out), "--db", str(db)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1, err
    assert len(err) == 1
    assert f"cannot write '{small_tmpfs / 'points.series.csv'}': No space left on device" in err[0]
    assert ".tmp" not in err[0]
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler"]
    filler.unlink()  # with room, the same command writes all three
    assert main(["export", "fixture", "--format", "csv", "-o", str(out), "--db", str(db)]) == 0
    assert sorted(p.name for p in small_tmpfs.iterdir()) == [
        "points.csv",
        "points.oplat.csv",
        "points.series.csv",
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["show"],
        ["show", "fixture"],
        ["show", "nope"],
        ["export", "fixture", "--format", "json", "-o", "{out}"],
        ["report", "fixture"],
        ["compare", "fixture", "fixture"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_read_only_commands_leave_no_side_files(argv: list[str], tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = _fixture_store(folder / "vmio.db")
    out = tmp_path / "out.json"
    before = sorted(folder.iterdir())
    main([a.format(out=out) for a in argv] + ["--db", str(db)])
    assert sorted(folder.iterdir()) == before


def test_show_during_a_writer_sees_its_points_and_leaves_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _fixture_store(tmp_path / "vmio.db")
    writer = Store(db)  # as a running `vmio run` holds it: open, WAL, a committed change not yet checkpointed
    try:
        with writer.transaction() as w:
            # and the point's stored sum, as record does
            w.execute("UPDATE result SET iops = 1234.0 WHERE id = 1")
            w.execute("UPDATE run SET read_iops = 1234.0 WHERE id = (SELECT run_id FROM result WHERE id = 1)")
        assert Path(f"{db}-wal").stat().st_size > 0
        capsys.readouterr()
        assert main(["show", "fixture", "--db", str(db)]) == 0
        assert "1234/0" in capsys.readouterr().out
        assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()  # the writer's, left alone
        with writer.transaction() as w:  # and the writer goes on writing
            # and the point's stored sum, as record does
            w.execute("UPDATE result SET iops = 4321.0 WHERE id = 1")
            w.execute("UPDATE run SET read_iops = 4321.0 WHERE id = (SELECT run_id FROM result WHERE id = 1)")
    finally:
        writer.close()
    assert not Path(f"{db}-wal").exists()
    assert main(["show", "fixture", "--db", str(db)]) == 0
    assert "4321/0" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vmio.db"]


def test_a_plan_on_a_full_disk_is_exit_1_naming_the_users_path(
    small_tmpfs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    rows = [f"{i * 0.01},vm{i % 2},r,{(i * 7919 % 500) << 20},4096" for i in range(400)]
    trace.write_text("time,image,op,offset,length\n" + "\n".join(rows) + "\n")
    with open(small_tmpfs / "filler", "wb") as f, contextlib.suppress(OSError):
        f.write(b"x" * (16 << 10))
    out = small_tmpfs / "plan.json"
    code = main(["relocate", "plan", str(trace), "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1, err
    assert err == [f"vmio: error: cannot write '{out}': No space left on device; nothing of this command's "
                   "output was kept"]  # fmt: skip
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler"]
