"""NDJSON (PKB's sample shape) and Prometheus textfile exports, re-read: NDJSON line by line, Prometheus
with prometheus_client's own text parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.fio.output import JobResult
from vmio.store import RunRecord, Store

LABELS = ["campaign", "target", "workload", "bs", "offered_iops", "load_processes", "repetition", "accel",
          "qemu_version", "host"]  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "vmio.db"
    with Store(path) as store:
        store.ensure_campaign("exp", "exp.toml", "", json.dumps({"targets": [], "workloads": []}))
        for rep, offered in ((1, 500), (2, 500), (1, None)):
            lat = {"min": 1e4, "mean": 2e5, "max": 9e5, "stddev": 1.0, "p50": 2e5, "p90": 3e5, "p99": 5e5,
                   "p99.9": 8e5, "p99.99": 9e5}  # fmt: skip
            res = JobResult("local", "measure", "read", 480.0 + rep, 4096 * 480.0, 4800, 10_000, lat, 1.0, 2.0,
                            {200_000: 980, 500_000: 19, 800_000: 1})  # fmt: skip
            store.record(RunRecord(
                campaign="exp", point_key=f"vm/rr/bs=4096/offered={offered or 'max'}/load=0/rep={rep}",
                target="vm", target_kind="qemu", workload="rr", bs=4096, offered_iops=offered, load_processes=0,
                repetition=rep, status="done", started=100.0, ended=110.0 + rep, host={"hostname": 'h"1'},
                accel="tcg", qemu_version="7.2.0", results=[res], metrics={("cpu", "usr_pct"): 12.5},
            ))  # fmt: skip
        store.record(RunRecord(
            campaign="exp", point_key="vm/rr/bs=4096/offered=300/load=0/rep=1", target="vm", target_kind="qemu",
            workload="rr", bs=4096, offered_iops=300, load_processes=0, repetition=1, status="failed",
            started=1.0, ended=2.0, error="boom",
        ))  # fmt: skip
    return path


def test_ndjson_rows(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.ndjson"
    assert main(["export", "exp", "--db", str(db), "--format", "ndjson", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(list(r) == ["metric", "value", "unit", "labels", "timestamp"] for r in rows)
    assert all(list(r["labels"]) == LABELS for r in rows)
    iops = [r for r in rows if r["metric"] == "read_iops"]
    assert [(r["value"], r["unit"], r["labels"]["offered_iops"], r["labels"]["repetition"], r["timestamp"])
            for r in iops] == [(481.0, "ops/s", "500", 1, 111.0), (482.0, "ops/s", "500", 2, 112.0),
                               (481.0, "ops/s", "max", 1, 111.0)]  # fmt: skip
    assert iops[0]["labels"] == {"campaign": "exp", "target": "vm", "workload": "rr", "bs": 4096,
                                 "offered_iops": "500", "load_processes": 0, "repetition": 1, "accel": "tcg",
                                 "qemu_version": "7.2.0", "host": 'h"1'}  # fmt: skip
    p99 = next(r for r in rows if r["metric"] == "read_lat_p99")
    assert (p99["value"], p99["unit"]) == (500_000.0, "ns")  # from the stored bins: 980 + 19 reach 99 %
    assert not [r for r in rows if r["metric"].startswith("write_")]  # no writes done: no write samples
    assert {r["labels"]["offered_iops"] for r in rows} == {"500", "max"}  # the failed point has none


def test_prometheus_textfile_parses(db: Path, tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    out = tmp_path / "vmio.prom"
    assert main(["export", "exp", "--db", str(db), "--format", "prometheus", "-o", str(out)]) == 0
    families = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    iops = families["vmio_read_iops_ops_per_second"]
    assert iops.type == "gauge"
    assert [(s.labels["offered_iops"], s.labels["repetition"], s.value) for s in iops.samples] == [
        ("500", "1", 481.0), ("500", "2", 482.0), ("max", "1", 481.0)
    ]  # fmt: skip
    assert sorted(iops.samples[0].labels) == sorted(LABELS) and iops.samples[0].labels["host"] == 'h"1'
    assert families["vmio_read_lat_p99_nanoseconds"].samples[0].value == 500_000.0
    assert families["vmio_cpu_usr_pct_percent"].samples[0].value == 12.5
    ndjson = tmp_path / "s.ndjson"
    assert main(["export", "exp", "--db", str(db), "--format", "ndjson", "-o", str(ndjson)]) == 0
    assert sum(len(f.samples) for f in families.values()) == len(ndjson.read_text().splitlines())


def test_ndjson_lines_are_json_dumps_of_each_sample() -> None:
    """The lines built from pieces encoded once are ``json.dumps`` of each sample, for odd values too."""
    from vmio.store import export

    shared = {"campaign": "c\u00fc", "target": 't"', "bs": 4096, "offered_iops": "max", "accel": None}
    rows = [
        {"metric": m, "value": v, "unit": "ops/s", "labels": labels, "timestamp": t}
        for m, v, labels, t in [
            ("read_iops", 1.5, shared, 1.7e9), ("write_iops", float("nan"), shared, 1.7e9),
            ("read_bw", float("inf"), shared, 1.7e9 + 1), ("read_lat_p99_ns", 3, {"x": "\n"}, 2),
            ("dev_busy_pct", -0.0, shared, float("nan")), ("cpu_usr_pct", 1e300, {}, None),
        ]
    ]  # fmt: skip
    rows.append({"value": 1.0, "metric": "other order"})  # type: ignore[typeddict-item]
    want = "".join(json.dumps(r) + "\n" for r in rows)
    assert export.ndjson(rows).decode() == want  # type: ignore[arg-type]
