from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.errors import StoreError
from vmio.fio.output import JobResult
from vmio.store import SCHEMA_VERSION, RunRecord, Store

finite = st.floats(min_value=0, max_value=1e12, allow_nan=False)
results = st.builds(
    JobResult,
    host=st.sampled_from(["local", "127.0.0.1:5000"]),
    job=st.sampled_from(["measure", "load"]),
    ddir=st.sampled_from(["read", "write"]),
    iops=finite,
    bw_bytes=finite,
    total_ios=st.integers(0, 10**9),
    runtime_ms=st.integers(0, 10**7),
    lat_ns=st.fixed_dictionaries(
        {k: finite for k in ("min", "mean", "max", "stddev", "p50", "p90", "p99", "p99.9", "p99.99")}
    ),
    usr_cpu=finite,
    sys_cpu=finite,
    bins=st.dictionaries(st.integers(1, 10**10), st.integers(1, 10**6), max_size=20),
)


def record(key: str, res: list[JobResult], status: str = "done") -> RunRecord:
    return RunRecord(
        campaign="c", point_key=key, target="t", target_kind="host", workload="w", bs=4096,
        offered_iops=None, load_processes=0, repetition=1, status=status, started=1.0, ended=2.0,
        host={"kernel": "6.1"}, results=res, samples=[(0.5, "cpu", "usr_pct", 12.5)],
        metrics={("cpu", "usr_pct"): 12.5}, oplat=[("local", "measure.1", 3, 52000, "read")],
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(results, max_size=4))
def test_round_trip(res: list[JobResult]) -> None:
    with Store(":memory:") as store:
        store.ensure_campaign("c", "c.toml", "text", "{}")
        run_id = store.record(record("k", res))
        rows = store.results(run_id)
        assert [(r["host"], r["job"], r["ddir"], r["iops"], r["total_ios"]) for r in rows] == [
            (x.host, x.job, x.ddir, x.iops, x.total_ios) for x in res
        ]
        for row, x in zip(rows, res, strict=True):
            assert store.histogram(row["id"]) == x.bins
            assert row["p99"] == x.lat_ns["p99"] and row["p999"] == x.lat_ns["p99.9"]
        assert store.run_metrics(run_id) == {("cpu", "usr_pct"): 12.5}
        assert [tuple(r)[1:] for r in store.oplat(run_id)] == [
            ("local", "measure.1", 0, 3, 52000, "read", None)
        ]  # no offset logged


def test_recording_a_point_again_replaces_it_whole(store: Store) -> None:
    store.ensure_campaign("c", "c.toml", "text", "{}")
    store.record(record("k", [], status="failed"))
    store.record(record("k", []))
    runs = store.runs("c")
    assert len(runs) == 1 and runs[0]["status"] == "done"
    assert store.db.execute("SELECT COUNT(*) FROM sample").fetchone()[0] == 1
    assert store.done_keys("c") == {"k"}


def test_a_changed_spec_under_the_same_name_is_refused(store: Store) -> None:
    store.ensure_campaign("c", "a.toml", "text", '{"targets": 1}')
    store.record(record("k", []))
    with pytest.raises(StoreError, match="already stored .* new campaign name"):
        store.ensure_campaign("c", "b.toml", "text", '{"targets": 2}')


def test_a_campaign_without_a_done_point_gives_its_name_to_a_changed_spec(store: Store) -> None:
    first = store.ensure_campaign("c", "a.toml", "text", '{"targets": 1}')
    store.record(record("k", [], status="failed"))
    assert store.ensure_campaign("c", "b.toml", "new", '{"targets": 2}') == first
    row = store.require("c")
    assert (row["spec_path"], row["spec_text"], row["canonical"]) == ("b.toml", "new", '{"targets": 2}')
    assert store.runs("c") == []  # the failed point of the old spec is gone with it


def test_schema_version_and_reopen(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    with Store(db) as s:
        assert s.schema_version == SCHEMA_VERSION
        s.ensure_campaign("c", "c.toml", "t", "{}")
    with Store(db) as s:
        assert s.campaigns() == ["c"]
        assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    Store(db).close()
    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO migrations VALUES (99, 'future', 0)")
    with pytest.raises(StoreError, match="schema version 99, newer"):
        Store(db)


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="is not a vmio store .not an SQLite file"):
        Store(bad)


RESTORED_SPEC = """[campaign]
name = "r"
repetitions = 3
sla = "p99=2ms"
seed = 7
[[target]]
name = "bare"
path = "/var/tmp/r.img"
size = "16M"
[[target]]
name = "vm"
kind = "qemu"
backing = ["/var/tmp/a.img", "/var/tmp/b.img"]
vms = 2
vcpus = 2
iothreads = 1
machine = "microvm"
bus = "virtio-blk"
[[workload]]
name = "rr"
rw = "randread"
bs = ["4k", "16k"]
offered_iops = [500, "max"]
steady = "iops_slope:2%:10s"
[[workload]]
name = "ops"
rw = "randwrite"
bs = "4k"
ops = 20
load_processes = [0, 2]
"""


def test_the_stored_spec_is_restored_as_the_model_that_was_run(tmp_path: Path) -> None:
    from vmio.spec import loads_spec

    ran = loads_spec(RESTORED_SPEC, "r.toml")
    with Store(tmp_path / "s.db") as store:
        store.ensure_campaign("r", "r.toml", RESTORED_SPEC, ran.canonical())
        assert store.spec("r") == ran  # targets, workloads, repetitions, sla and seed, field for field


def test_a_stored_spec_that_no_longer_reads_is_one_error(tmp_path: Path) -> None:
    from vmio.spec import loads_spec

    ran = loads_spec(RESTORED_SPEC, "r.toml")
    with Store(tmp_path / "s.db") as store:
        store.ensure_campaign("r", "r.toml", RESTORED_SPEC.replace("p99=2ms", "p99=fast"), ran.canonical())
        with pytest.raises(
            StoreError, match=r"campaign 'r' in .*s\.db: its stored spec no longer reads .*sla"
        ):
            store.spec("r")


def test_two_opens_of_an_old_store_at_once_migrate_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two vmio commands opening a store of an older schema at the same moment: the one that reads the old
    version first finds the other has migrated meanwhile, and applies nothing twice (it used to fail with
    "table imported_file already exists")."""
    import shutil

    db = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "data" / "stores" / "import-v10.db", db)
    apply = Store._apply
    raced: list[int] = []

    def another_vmio_first(self: Store, have: int) -> None:
        if not raced:
            raced.append(have)
            Store(str(db)).close()  # the other command migrates between our read and our writes
        apply(self, have)

    monkeypatch.setattr(Store, "_apply", another_vmio_first)
    with Store(str(db)) as store:
        assert store.schema_version == SCHEMA_VERSION
    assert raced == [10]
    versions = [r[0] for r in sqlite3.connect(db).execute("SELECT version FROM migrations ORDER BY version")]
    assert versions == sorted(set(versions)) and versions[-1] == SCHEMA_VERSION
