"""NDJSON (PKB's sample shape) and Prometheus textfile exports, re-read: NDJSON line by line, Prometheus
with prometheus_client's own text parser."""

from __future__ import annotations

import json
import re
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
    iops = families["vmio_read_operations_per_second"]
    assert iops.type == "gauge"
    assert [(s.labels["offered_iops"], s.labels["repetition"], s.value) for s in iops.samples] == [
        ("500", "1", 481.0), ("500", "2", 482.0), ("max", "1", 481.0)
    ]  # fmt: skip
    assert sorted(iops.samples[0].labels) == sorted(LABELS) and iops.samples[0].labels["host"] == 'h"1'
    assert families["vmio_read_latency_p99_seconds"].samples[0].value == pytest.approx(500e-6)  # 500,000 ns
    assert families["vmio_cpu_user_ratio"].samples[0].value == pytest.approx(0.125)  # 12.5 %
    ndjson = tmp_path / "s.ndjson"
    assert main(["export", "exp", "--db", str(db), "--format", "ndjson", "-o", str(ndjson)]) == 0
    assert sum(len(f.samples) for f in families.values()) == len(ndjson.read_text().splitlines())


# Prometheus' naming rules (https://prometheus.io/docs/practices/naming/ and the exposition format): the metric
# name's characters, one application prefix, a base unit's suffix in plural once at the end, never a unit that
# is not a base unit (nanoseconds, percent) and never one unit twice.
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
BASE_SUFFIXES = ("_seconds", "_bytes_per_second", "_operations_per_second", "_ratio")
NOT_BASE = {"nanoseconds", "milliseconds", "microseconds", "percent", "pct", "ns", "ms", "us"}


def test_prometheus_names_follow_the_naming_rules(db: Path, tmp_path: Path) -> None:
    """Issue 38: ``vmio_cpu_sys_pct_percent`` said its unit twice and ``..._nanoseconds`` is not a base unit."""
    from prometheus_client.parser import text_string_to_metric_families

    from vmio.store.export import SAMPLE_METRICS, prom_name

    names = [prom_name(metric, unit)[0] for metric, unit, _ in SAMPLE_METRICS]
    assert len(set(names)) == len(names)
    for name in names:
        assert NAME.fullmatch(name) and name.startswith("vmio_") and name.endswith(BASE_SUFFIXES), name
        words = name.removeprefix("vmio_").split("_")
        assert not NOT_BASE & set(words), name
        assert sum(w in ("seconds", "ratio", "bytes", "operations") for w in words) == 1, name
    out = tmp_path / "vmio.prom"
    assert main(["export", "exp", "--db", str(db), "--format", "prometheus", "-o", str(out)]) == 0
    assert {f.name for f in text_string_to_metric_families(out.read_text())} <= set(names)


def test_every_table_has_its_header_even_empty(db: Path, tmp_path: Path) -> None:
    """Issue 38: ``quick.oplat.csv`` was 0 bytes and ``oplat.parquet`` had 0 columns."""
    out = tmp_path / "e.csv"
    assert main(["export", "exp", "--db", str(db), "-o", str(out)]) == 0
    oplat = (tmp_path / "e.oplat.csv").read_text().splitlines()
    assert oplat == ["point,host,job,seq,t_ms,lat_ns,ddir,offset"]  # no timed operations stored: the header
    assert (tmp_path / "e.series.csv").read_text().splitlines()[0] == "point,t,source,metric,value"
    pq = pytest.importorskip("pyarrow.parquet")
    assert main(["export", "exp", "--db", str(db), "-o", str(tmp_path / "e.parquet")]) == 0
    table = pq.read_table(tmp_path / "e.oplat.parquet")
    assert table.num_rows == 0 and table.column_names == ["point", "host", "job", "seq", "t_ms", "lat_ns", "ddir",
                                                          "offset"]  # fmt: skip
