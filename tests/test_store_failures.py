"""Every way a store can fail, on real SQLite files: one sentence naming the file, exit 1 or 2, no traceback.

Damaged pages, a lock held beyond the timeout, a read-only mount (root ignores file modes, so a real
read-only filesystem), a full disk (a small tmpfs), newer and older schemas (fixtures of each released
version under ``tests/data/stores/``), missing and foreign files; and two ``vmio run`` on one store.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.errors import StoreError
from vmio.fio.output import JobResult
from vmio.store import MIGRATIONS, SCHEMA_VERSION, RunRecord, Store
from vmio.store import rows as summary
from vmio.system import files

from conftest import store_from_sql

STORES = Path(__file__).parent / "data" / "stores"
READERS = (["show"], ["show", "fixture"], ["show", "--json"], ["report", "fixture"])


def point(key: str, n_results: int = 1) -> RunRecord:
    res = [
        JobResult(host="local", job="measure", ddir="read", iops=100.0 + i, bw_bytes=409600.0, total_ios=200,
                  runtime_ms=2000, lat_ns={"min": 1.0, "mean": 2.0, "max": 3.0, "stddev": 0.5, "p50": 2.0,
                  "p90": 2.5, "p99": 3.0, "p99.9": 3.0, "p99.99": 3.0}, usr_cpu=1.0, sys_cpu=1.0,
                  bins={2000 + i: 100, 3000: 100})
        for i in range(n_results)
    ]  # fmt: skip
    return RunRecord(campaign="fixture", point_key=key, target="host", target_kind="host", workload="w", bs=4096,
                     offered_iops=None, load_processes=0, repetition=1, status="done", started=1.0, ended=2.0,
                     results=res, samples=[(0.5 * i, "cpu", "usr_pct", 1.0) for i in range(50)],
                     log="x" * 2000)  # fmt: skip


def filled(db: Path, points: int = 40) -> Path:
    with Store(db) as s:
        s.ensure_campaign("fixture", "f.toml", "text", "{}")
        for i in range(points):
            s.record(point(f"p{i:03d}"))
    return db


def from_fixture(version: int, db: Path) -> Path:
    return store_from_sql(f"schema-v{version}.sql", db)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- fixtures of every released schema version -------------------------------------------------------------


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_every_schema_version_has_its_fixture(version: int) -> None:
    text = (STORES / f"schema-v{version}.sql").read_text()
    names = [name for v, name, _ in MIGRATIONS if v <= version]
    assert all(f"'{name}'" in text for name in names)


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_an_older_store_migrates_and_keeps_its_points(version: int, tmp_path: Path) -> None:
    db = from_fixture(version, tmp_path / "old.db")
    with Store(db) as s:
        assert s.schema_version == SCHEMA_VERSION
        applied = [r[0] for r in s.db.execute("SELECT version FROM migrations ORDER BY version")]
        assert applied == list(range(1, SCHEMA_VERSION + 1))
        rows = {r.point: r for r in summary.point_rows(s, "fixture")}
        # the figures written into the fixture by the vmio of that version
        assert rows["host/randread/4k/max/1"].read_iops == 2500.0
        assert rows["host/randread/4k/max/1"].status == "done"
        assert rows["host/randread/4k/max/2"].error == "fio exited with code 1"
        assert s.db.execute("SELECT COUNT(*) FROM oplat").fetchone()[0] == 1
        # the migrated store takes new points
        s.record(point("new"))
        assert "new" in s.done_keys("fixture")
        assert s.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_reading_an_older_store_never_changes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = from_fixture(1, tmp_path / "v1.db")
    before = digest(db)
    code, _ = run_cli(["show", "fixture", "--json", "--db", str(db)], capsys)
    assert code == 0
    assert digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v1.db"]
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT MAX(version) FROM migrations").fetchone()[0] == 1


def test_a_newer_schema_is_refused_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = from_fixture(SCHEMA_VERSION, tmp_path / "new.db")
    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO migrations VALUES (?, 'from the future', 0)", (SCHEMA_VERSION + 1,))
    c.close()
    for argv in [*READERS, ["export", "fixture", "--format", "csv", "-o", str(tmp_path / "x.csv")]]:
        code, err = run_cli([*argv, "--db", str(db)], capsys)
        assert code == 2, argv
        assert f"{str(db)!r} has schema version {SCHEMA_VERSION + 1}, newer" in one_line(err)
        assert "upgrade vmio" in err
    assert not (tmp_path / "x.csv").exists()


# -- missing, empty and foreign files ----------------------------------------------------------------------


def test_reading_a_missing_store_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "none.db"
    for argv in READERS:
        code, err = run_cli([*argv, "--db", str(db)], capsys)
        assert code == 2
        assert f"there is no store at {str(db)!r}" in one_line(err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("content", "why"),
    [(b"", "it is empty"), (b"name,iops\n1,2\n" * 50, "not an SQLite file"), (None, "has no vmio schema")],
)
def test_a_foreign_file_is_refused_and_left_alone(
    content: bytes | None, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "other.db"
    if content is None:
        with sqlite3.connect(db) as c:
            c.execute("CREATE TABLE mine (x)")
        c.close()
    else:
        db.write_bytes(content)
    before = digest(db)
    for argv in READERS:
        code, err = run_cli([*argv, "--db", str(db)], capsys)
        assert code == 2
        assert f"{str(db)!r} is not a vmio store" in one_line(err) and why in err
    assert digest(db) == before
    assert [p.name for p in tmp_path.iterdir()] == ["other.db"]


def test_a_store_with_other_tables_is_not_written_into(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE users (name)")
    c.close()
    with pytest.raises(StoreError, match="is not a vmio store .it holds other tables .users") as err:
        Store(db)
    assert err.value.exit_code == 2
    with sqlite3.connect(db) as c:
        assert [r[0] for r in c.execute("SELECT name FROM sqlite_master")] == ["users"]


def test_an_unknown_campaign_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = from_fixture(2, tmp_path / "s.db")
    for argv in (
        ["show", "nope"],
        ["report", "nope"],
        ["export", "nope", "--format", "json", "-o", "x.json"],
    ):
        code, err = run_cli([*argv, "--db", str(db)], capsys)
        assert code == 2
        assert "no campaign 'nope'" in one_line(err) and "fixture" in err


def test_a_store_path_that_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(["show", "--db", str(tmp_path)], capsys)
    assert code == 2 and "is a folder" in one_line(err)


# -- damaged pages -------------------------------------------------------------------------------------------


def damage(db: Path, table: str) -> None:
    """Overwrite the root page of ``table`` with garbage (the store is closed and checkpointed)."""
    with sqlite3.connect(db) as c:
        root = c.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        size = c.execute("PRAGMA page_size").fetchone()[0]
    c.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xa5" * size)


@pytest.mark.parametrize("table", ["run", "result", "sample"])
def test_a_damaged_page_is_one_sentence_for_every_command(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = filled(tmp_path / "d.db")
    damage(db, table)
    before = digest(db)
    (tmp_path / "out").mkdir()
    commands = [*READERS, ["report", "fixture", "-o", str(tmp_path / "out" / "r.html")]]
    # export reads the samples; its points' figures are the summaries stored in the run table
    if table != "result":
        commands.append(["export", "fixture", "--format", "csv", "-o", str(tmp_path / "out" / "x.csv")])
    for argv in commands:
        code, err = run_cli([*argv, "--db", str(db)], capsys)
        if table != "run" and argv[0] == "show":
            continue  # show reads each point's summary stored in the run table, not its detail
        assert code == 2, (argv, err)
        line = one_line(err)
        assert f"the store {str(db)!r} is damaged" in line and ".recover" in line, argv
    assert digest(db) == before
    assert list((tmp_path / "out").iterdir()) == []


def test_a_damaged_store_refuses_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = filled(tmp_path / "d.db")
    damage(db, "campaign")
    spec = tmp_path / "s.toml"
    spec.write_text('[campaign]\nname = "fixture"\n[[target]]\nname = "host"\nkind = "host"\n'
                    f'path = "{tmp_path}/disk.img"\nsize = "4M"\n[[workload]]\nname = "w"\nrw = "randread"\n'
                    'runtime = "1s"\n')  # fmt: skip
    code, err = run_cli(["run", str(spec), "--db", str(db)], capsys)
    assert code == 2 and "is damaged" in one_line(err)


# -- a lock held beyond the timeout ------------------------------------------------------------------------


def test_a_lock_beyond_the_timeout_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = filled(tmp_path / "l.db", points=2)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        monkeypatch.setenv("VMIO_DB_TIMEOUT", "0.3")
        spec = tmp_path / "s.toml"
        spec.write_text('[campaign]\nname = "other"\n[[target]]\nname = "host"\nkind = "host"\n'
                        f'path = "{tmp_path}/disk.img"\nsize = "4M"\n[[workload]]\nname = "w"\n'
                        'rw = "randread"\nruntime = "1s"\n')  # fmt: skip
        code, err = run_cli(["run", str(spec), "--db", str(db)], capsys)
        assert code == 1
        assert f"the store {str(db)!r} is locked by another process" in one_line(err)
        with Store(db, timeout=0.2) as s, pytest.raises(StoreError, match="is locked"):
            s.record(point("late"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Store(db, readonly=True) as s:
        assert len(s.runs("fixture")) == 2 and s.campaigns() == ["fixture"]


def test_a_bad_lock_timeout_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VMIO_DB_TIMEOUT", "nan")
    code, err = run_cli(["show", "--db", "x.db"], capsys)
    assert code == 2 and "VMIO_DB_TIMEOUT='nan'" in one_line(err)


# -- a read-only filesystem and a full disk ---------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted for the test (root needed)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small filesystem")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True, timeout=30)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False, timeout=30)


def test_a_read_only_mount_reads_but_refuses_writes(
    small_fs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = filled(small_fs / "ro.db", points=3)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True, timeout=30)
    code, err = run_cli(["show", "fixture", "--json", "--db", str(db)], capsys)
    assert (code, err) == (0, "")
    with pytest.raises(StoreError, match="cannot be written: it or its folder is read-only") as exc:
        Store(db)
    assert exc.value.exit_code == 1
    spec = small_fs.parent / "s.toml"
    spec.write_text('[campaign]\nname = "fixture2"\n[[target]]\nname = "host"\nkind = "host"\n'
                    f'path = "{small_fs.parent}/disk.img"\nsize = "4M"\n[[workload]]\nname = "w"\n'
                    'rw = "randread"\nruntime = "1s"\n')  # fmt: skip
    code, err = run_cli(["run", str(spec), "--db", str(db)], capsys)
    assert code == 1 and "read-only" in one_line(err) and str(db) in err


def test_a_full_disk_keeps_every_earlier_point(small_fs: Path) -> None:
    db = small_fs / "full.db"
    recorded = []
    with Store(db) as s:
        s.ensure_campaign("fixture", "f.toml", "text", "{}")
        with pytest.raises(StoreError) as exc:
            for i in range(10_000):
                s.record(point(f"p{i:05d}", n_results=4))
                recorded.append(f"p{i:05d}")
    assert f"the disk holding the store {str(db)!r} is full" in str(exc.value)
    assert "\n" not in str(exc.value)
    assert len(recorded) > 3
    with Store(db, readonly=True) as s:
        assert [r["point_key"] for r in s.runs("fixture")] == recorded
        assert s.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert {len(s.results(r["id"])) for r in s.runs("fixture")} == {4}


# -- two runs on one store ---------------------------------------------------------------------------------


def test_a_second_run_on_the_same_store_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    first = Store(db)
    entered = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with first.exclusive_run():
            entered.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    assert entered.wait(10)
    try:
        spec = tmp_path / "s.toml"
        spec.write_text('[campaign]\nname = "c"\n[[target]]\nname = "host"\nkind = "host"\n'
                        f'path = "{tmp_path}/disk.img"\nsize = "4M"\n[[workload]]\nname = "w"\n'
                        'rw = "randread"\nruntime = "1s"\n')  # fmt: skip
        proc = subprocess.run([sys.executable, "-m", "vmio", "run", str(spec), "--db", str(db)],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    finally:
        release.set()
        t.join()
        first.close()
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    line = one_line(proc.stderr)
    assert f"another vmio run is writing to the store {str(db)!r} (pid {os.getpid()}" in line
    with Store(db, readonly=True) as s:
        assert s.campaigns() == []


def test_the_run_lock_leaves_no_file_and_a_removed_lock_is_not_shared(tmp_path: Path) -> None:
    """After a run the store has nothing beside it; a run that opened the lock file just before its holder
    removed it locks the new file, never the removed one (so two runs cannot both hold the lock)."""
    import fcntl

    db = tmp_path / "lock.db"
    lock = tmp_path / "lock.db.run-lock"
    with Store(db) as store:
        with store.exclusive_run():
            assert lock.exists()
        assert not lock.exists()
        # a stale file of a run that died holds no lock: taken, then removed
        lock.write_text("pid 1\n")
        with store.exclusive_run():
            held = os.open(lock, os.O_RDWR)
            try:  # a second process would find the file locked
                with pytest.raises(BlockingIOError):
                    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(held)
        assert not lock.exists()
        # the race: the file this run opened is removed by its holder before the flock; it must relock
        real_open = files.open_lock
        opened: list[int] = []

        def open_then_removed(path: str) -> int:
            fd = real_open(path)
            if not opened:
                os.unlink(path)  # the holder before us finished and removed its file
            opened.append(fd)
            return fd

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(files, "open_lock", open_then_removed)
            with store.exclusive_run():
                assert len(opened) == 2 and lock.exists()
                assert os.fstat(opened[1]).st_ino == os.stat(lock).st_ino
        assert not lock.exists()


def test_a_stored_spec_without_its_points_target_is_named_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the fixture was written by hand: its canonical spec names no target, its runs are of target "host"
    db = store_from_sql("schema-v12.sql", tmp_path / "v12.db")
    code, err = run_cli(["diagnose", "fixture", "--db", str(db)], capsys)
    assert (
        code == 2
        and one_line(err) == "vmio: error: campaign 'fixture' has no target 'host' (its targets: none)"
    )
    # the report has no verdict for such a point (it cannot diagnose it) and writes the rest
    code, err = run_cli(["report", "fixture", "-o", str(tmp_path / "r.html"), "--db", str(db)], capsys)
    assert code == 0 and "Traceback" not in err
    assert "host/randread/4k" in (tmp_path / "r.html").read_text()
