"""``show --json``'s text built straight from the run rows (``store.show_json``) is byte for byte what the
contract prints: ``PointRow.to_json`` of each point through the standard library's ``json.dumps(...,
indent=1)``, for points of every shape a store holds (host, VM and imported targets, directions with and
without jobs or latencies, hosts, QEMU's I/O threads, host facts, steady state, preconditioning, job files,
sweeps, dstore profiles, odd text) and for points whose stored figures were emptied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmio.cli import main
from vmio.fio.output import JobResult
from vmio.store import RunRecord, Store, rows, show_json
from vmio.store.point_metrics import METRIC_COLUMNS
from vmio.store.summaries import SUMMARY_COLUMNS

STORES = Path(__file__).parent / "data" / "stores"
LAT = {"min": 1000.0, "mean": 2000.0, "max": 9000.0, "stddev": 5.0, "p50": 2.0, "p90": 2.5, "p99": 3.0,
       "p99.9": 3.0, "p99.99": 3.0}  # fmt: skip
texts = st.text(max_size=8) | st.sampled_from(["%s", '"%', "\n", "ü", '"}, {"', "\x00vmio: a value\x00"])
numbers = st.floats(min_value=0, max_value=1e12) | st.integers(0, 10**9)
values = st.none() | st.booleans() | numbers | texts
nested = st.dictionaries(texts, values | st.lists(values, max_size=3), max_size=3)


@st.composite
def jobs(draw: st.DrawFn) -> JobResult:
    total = draw(st.sampled_from([0, 7, 5000]))
    return JobResult(
        host=draw(st.sampled_from(["h1", "h2", "ü"])), job=draw(st.sampled_from(["measure.1", "load.1"])),
        ddir=draw(st.sampled_from(["read", "write"])), iops=draw(numbers), bw_bytes=draw(numbers),
        total_ios=total, runtime_ms=1000, lat_ns={**LAT, "mean": draw(st.floats(1, 1e9))}, usr_cpu=1.5,
        sys_cpu=2.0, bins=draw(st.sampled_from([{}, {1000: total}, {1000: 3, 2000: total}])),
    )  # fmt: skip


@st.composite
def facts(draw: st.DrawFn) -> dict[str, object]:
    out: dict[str, object] = {"hostname": draw(texts), "cores": 2}
    for key, value in (("qemu_machine", values | nested), ("guest_io_warnings", st.none() | st.integers(0, 9) | nested),
                       ("dstore", nested | texts), ("fio_disk_util", values)):  # fmt: skip
        if draw(st.booleans()):
            out[key] = draw(value)
    return out


METRICS = [("dev:vda", "busy_pct"), ("dev:vda", "read_iops"), ("cpu", "usr_pct"), ("cpu", "steal_pct"),
           ("qemu:vmio-0", "vcpu_pct"), ("qemu:vmio-1", "vcpu_pct"), ("qemu:vmio-0", "iothread0_pct"),
           ("qemu:vmio-1", "iothread2_pct"), ("qemu:vmio-0", "iothread_pct"), ("qemu:vmio-0", "main_pct")]  # fmt: skip
STEADY = {"criterion": "iops:10%", "reached": True, "at_s": None, "jobs": 2}
PRECONDITION = {"size": None, "fill_bytes": 4096, "random_bytes": 0, "seconds": 1.5}
FIO_JOB = {"file": "a%s.fio", "section": "ü", "replaced": ["rw", "bs"]}


@st.composite
def records(draw: st.DrawFn, campaign: str, key: str) -> RunRecord:
    kind = draw(st.sampled_from(["host", "qemu", "libvirt", "import"]))
    maybe = st.booleans()
    return RunRecord(
        campaign=campaign, point_key=key + draw(texts), target=draw(texts), target_kind=kind, workload=draw(texts),
        bs=4096, offered_iops=draw(st.none() | st.integers(0, 10**6)), load_processes=draw(st.integers(0, 3)),
        repetition=1, status=draw(st.sampled_from(["done", "failed"])), started=1.0, ended=2.0,
        host=draw(facts()), accel=draw(st.none() | texts), fio_version="fio-3.33",
        qemu_version=draw(st.sampled_from([None, "", "10.0.2"])), device=draw(st.sampled_from([None, "vda"])),
        error=draw(st.none() | texts), results=draw(st.lists(jobs(), max_size=4)),
        metrics={m: draw(st.floats(0, 1e4)) for m in draw(st.sampled_from([METRICS[:5], METRICS[::2], METRICS]))},
        steady=STEADY if draw(maybe) else None,  # type: ignore[arg-type]
        precondition=PRECONDITION if draw(maybe) else None,  # type: ignore[arg-type]
        fio_job=FIO_JOB if draw(maybe) else None,  # type: ignore[arg-type]
        iodepth=draw(st.none() | st.integers(1, 64)), numjobs=draw(st.none() | st.integers(1, 4)),
        offered_pct=draw(st.none() | st.floats(0, 100)), arrivals=draw(st.sampled_from([None, "poisson"])),
    )  # fmt: skip


# what a store can hold in a point's QEMU CPU column besides what vmio writes (integrity accepts any JSON)
ODD_QEMU = ['{"vcpu": 1, "main_loop": 2.5, "iothreads": [], "other": 0}', '{"other": 1, "vcpu": 2}',
            '{"vcpu": 1, "main_loop": 2, "iothreads": [[1]], "other": 0}', '[["vcpu", 3]]', "null"]  # fmt: skip


# host facts as another JSON writer could have put them: keys written with escapes, spaces, nothing
ODD_FACTS = ['{"guest\\u005fio_warnings": 3, "qemu\\u005fmachine": "pc"}', '{ "dstore" : {"pool": "p"} }', "",
             '{"hostname": "\\"qemu_machine\\""}', '{"guest_io_warnings":2}']  # fmt: skip


def reference(store: Store, campaign: str | None) -> str:
    return json.dumps([row.to_json(facts=False) for row in rows.point_rows(store, campaign)], indent=1)


# 100 examples of 0-6 points in each of two campaigns: every target kind, emptied column set, odd QEMU CPU
# figure and odd facts text is expected to come up dozens of times a run
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_same_text_as_the_rows_json_dumps_prints(data: st.DataObject) -> None:
    with Store(":memory:") as store:
        for campaign in ("a", "b%s"):
            store.ensure_campaign(campaign, "c.toml", "text", "{}")
            for i in range(data.draw(st.integers(0, 6))):
                store.record(data.draw(records(campaign, str(i))))
        for (run_id,) in store.db.execute("SELECT id FROM run").fetchall():
            # some points' stored figures emptied, or an odd QEMU CPU figure, as older or edited stores hold
            emptied = data.draw(
                st.sampled_from([(), (), (), (), SUMMARY_COLUMNS, METRIC_COLUMNS, ("hosts_json",)])
            )
            for column in emptied:
                store.db.execute(f"UPDATE run SET {column} = NULL WHERE id = ?", (run_id,))
            if data.draw(st.integers(0, 4)) == 0:
                odd = data.draw(st.sampled_from(ODD_QEMU))
                store.db.execute("UPDATE run SET qemu_cpu_json = ? WHERE id = ?", (odd, run_id))
            if data.draw(st.integers(0, 4)) == 0:
                odd = data.draw(st.sampled_from(ODD_FACTS))
                store.db.execute("UPDATE run SET host_json = ? WHERE id = ?", (odd, run_id))
        for campaign in ("a", "b%s", None):
            assert show_json.text(store, campaign) == reference(store, campaign)
        facts_as_decoded(store)


def facts_as_decoded(store: Store) -> None:
    """Each row's host facts and the fields taken out of them are what a plain ``json.loads`` of the stored
    text gives (rows decode the facts only when they can hold such a field, else on first read)."""
    stored = [
        r
        for name in store.campaigns()
        for r in store.db.execute(
            "SELECT host_json, target_kind, qemu_version FROM run JOIN campaign c ON c.id = run.campaign_id "
            "WHERE c.name = ? ORDER BY run.id",
            (name,),
        )
    ]
    points = rows.point_rows(store, None)
    assert len(points) == len(stored)
    for row, (text, kind, qemu_version) in zip(points, stored, strict=True):
        facts = json.loads(text or "{}")
        vm = kind in ("qemu", "libvirt")
        assert row.qemu_machine == (
            facts.get("qemu_machine", "q35" if qemu_version else None) if vm else None
        )
        assert row.guest_io_warnings == facts.get("guest_io_warnings")
        assert row.dstore == (facts["dstore"] if isinstance(facts.get("dstore"), dict) else None)
        assert row.fio_figures.get("disk_util") == (facts.get("fio_disk_util") if kind == "import" else None)
        assert dict(row.host_facts) == facts and len(row.host_facts) == len(facts)


def test_the_golden_store_and_a_campaign_without_points(tmp_path: Path) -> None:
    with Store(STORES / "v2-campaign.db", readonly=True) as store:
        assert show_json.text(store, None) == reference(store, None)
    with Store(tmp_path / "s.db") as store:
        store.ensure_campaign("empty", "c.toml", "text", "{}")
        assert show_json.text(store, "empty") == "[]" == reference(store, "empty")


def test_show_json_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.ensure_campaign("c", "c.toml", "text", "{}")
        store.record(RunRecord(campaign="c", point_key="p", target="t", target_kind="qemu", workload="w", bs=4096,
                               offered_iops=None, load_processes=0, repetition=1, status="done", started=1.0,
                               ended=2.0, qemu_version="10.0.2", metrics={("qemu:vmio-0", "vcpu_pct"): 5.0}))  # fmt: skip
        want = reference(store, "c") + "\n"
    assert main(["show", "c", "--json", "--db", str(db)]) == 0
    printed = capsys.readouterr().out
    assert printed == want
    assert json.loads(printed)[0]["qemu_cpu_pct"] == {
        "vcpu": 5.0,
        "main_loop": 0,
        "iothreads": [],
        "other": 0,
    }


@pytest.mark.parametrize(
    "others", [0, 1, 12]
)  # runs of another campaign between: read by id span or by index
def test_points_in_the_order_they_were_stored(others: int) -> None:
    with Store(":memory:") as store:
        for name in ("a", "b"):
            store.ensure_campaign(name, "c.toml", "text", "{}")
        keys = ["z", "a", "m", "b"]
        for key in keys:
            store.record(RunRecord(campaign="a", point_key=key, target="t", target_kind="host", workload="w",
                                   bs=4096, offered_iops=None, load_processes=0, repetition=1, status="done",
                                   started=1.0, ended=2.0))  # fmt: skip
            for i in range(others):
                store.record(RunRecord(campaign="b", point_key=f"{key}{i}", target="t", target_kind="host",
                                       workload="w", bs=4096, offered_iops=None, load_processes=0, repetition=1,
                                       status="done", started=1.0, ended=2.0))  # fmt: skip
        assert [p["point"] for p in json.loads(show_json.text(store, "a"))] == keys
        assert [p["point"] for p in json.loads(show_json.text(store, "b"))] == [
            r["point_key"] for r in store.runs("b")
        ]
        assert show_json.text(store, "a") == reference(store, "a")
