"""Points whose guest kernel reported disk trouble are named in the report, with fixed data."""

from __future__ import annotations

from vmio.fio.output import JobResult
from vmio.report import data as report_data
from vmio.report import page
from vmio.store import RunRecord, Store

LAT = {
    "min": 1e5,
    "mean": 2e5,
    "max": 9e8,
    "stddev": 1e5,
    "p50": 2e5,
    "p90": 3e5,
    "p99": 2e9,
    "p99.9": 2e9,
    "p99.99": 2e9,
}


def rec(target: str, kind: str, warnings: int | None) -> RunRecord:
    host = {"kernel": "6.1", "fio_version": "fio-3.33", "cores": 2}
    if warnings is not None:
        host["guest_io_warnings"] = warnings
    res = JobResult(
        "local", "measure", "read", 500.0, 2048000.0, 2000, 4000, dict(LAT), 1.0, 2.0, {200000: 2000}
    )
    return RunRecord(
        campaign="g", point_key=f"{target}/rr/bs=4096/offered=max/load=0/rep=1", target=target, target_kind=kind,
        workload="rr", bs=4096, offered_iops=None, load_processes=0, repetition=1, status="done", started=0.0,
        ended=1.0, host=host, accel="tcg" if kind == "qemu" else None, results=[res],
    )  # fmt: skip


def test_guest_warnings_section() -> None:
    with Store(":memory:") as store:
        store.ensure_campaign("g", "g.toml", "", "{}")
        store.record(rec("bare", "host", None))
        store.record(rec("nvme", "qemu", 23))
        store.record(rec("vblk", "qemu", 0))
        html = page.render(page.build(report_data.load(store, "g"), "bare"))
    section = html.split("<h2>Guest disk warnings</h2>")[1].split("</ul>")[0]
    assert "nvme/rr/bs=4096/offered=max/load=0/rep=1: 23 guest kernel disk warnings" in section
    assert "vblk/" not in section and "bare/" not in section
