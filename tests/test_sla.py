"""The SLA knee on stored sweeps with known latencies: a crossing interpolated between two offered loads,
a sweep that never crosses, one over the bound from the start; the CLI contract and the report column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.fio.output import JobResult
from vmio.report import data, page, sla
from vmio.spec import Campaign, HostTarget, Workload
from vmio.spec.sla import Sla, parse_sla
from vmio.store import RunRecord, Store

# offered → (achieved IOPS, p50 µs, p99 µs)
FAST = {
    1000: (1000.0, 200, 500),
    2000: (2000.0, 300, 1000),
    4000: (3900.0, 800, 3000),
    None: (5000.0, 900, 6000),
}
NEVER = {
    1000: (1000.0, 100, 300),
    2000: (1990.0, 100, 400),
    4000: (2500.0, 120, 450),
    None: (2600.0, 130, 500),
}
OVER = {
    1000: (900.0, 3000, 9000),
    2000: (950.0, 3000, 9500),
    4000: (960.0, 3100, 9900),
    None: (970.0, 3000, 9990),
}


def point(store: Store, target: str, offered: int | None, iops: float, p50_us: int, p99_us: int) -> None:
    # 1000 operations: 980 at p50, 10 at p99, 10 far out: fio's rule puts p99 on the second bucket
    bins = {p50_us * 1000: 980, p99_us * 1000: 10, p99_us * 10_000: 10}
    lat: dict[str, float | None] = {"min": 1e4, "mean": p50_us * 1e3, "max": p99_us * 1e4, "stddev": 1.0,
                                    "p50": None, "p90": None, "p99": None, "p99.9": None, "p99.99": None}  # fmt: skip
    res = JobResult("local", "measure", "read", iops, iops * 4096, 1000, 10_000, lat, 1.0, 1.0, bins)
    store.record(RunRecord(
        campaign="sweep", point_key=f"{target}/rr/bs=4096/offered={offered or 'max'}/load=0/rep=1", target=target,
        target_kind="host", workload="rr", bs=4096, offered_iops=offered, load_processes=0, repetition=1,
        status="done", started=1.0, ended=2.0, results=[res],
    ))  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "vmio.db"
    targets = tuple(HostTarget(n, f"/var/tmp/{n}.img") for n in ("fast", "never", "over"))
    canonical = Campaign("sweep", 1, targets, (Workload("rr", "randread", (4096,)),)).canonical()
    with Store(path) as store:
        spec = '[campaign]\nname = "sweep"\nsla = "p99=2ms"\n'
        store.ensure_campaign("sweep", "sweep.toml", spec, canonical)
        for target, sweep in (("fast", FAST), ("never", NEVER), ("over", OVER)):
            for offered, (iops, p50, p99) in sweep.items():
                point(store, target, offered, iops, p50, p99)
    return path


def test_show_sla_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "sweep", "--db", str(db), "--sla", "p99=2ms", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    base = {
        "workload": "rr",
        "bs": 4096,
        "load_processes": 0,
        "dir": "read",
        "metric": "p99",
        "bound_ms": 2.0,
    }
    # crossing between offered 2000 (2000 IOPS, 1 ms) and 4000 (3900 IOPS, 3 ms): 2000 + (2-1)/(3-1) × 1900
    assert rows == [
        {"target": "fast", **base, "iops": pytest.approx(2950.0), "crossed": True, "between": [2000, 4000]},
        {"target": "never", **base, "iops": 2600.0, "crossed": False, "between": ["max", None]},
        {"target": "over", **base, "iops": None, "crossed": True, "between": [None, 1000]},
    ]
    assert list(rows[0]) == ["target", "workload", "bs", "load_processes", "dir", "metric", "bound_ms", "iops",
                             "crossed", "between"]  # fmt: skip


def test_other_metrics(db: Path) -> None:
    with Store(db) as store:
        loaded = data.load(store, "sweep")
    (fast, *_) = sla.knees(loaded, parse_sla("p50=500us"))
    # p50: 0.3 ms at 2000 IOPS, 0.8 ms at 3900: 2000 + (0.5-0.3)/(0.8-0.3) × 1900
    assert fast.iops == pytest.approx(2760.0) and fast.as_dict()["between"] == [2000, 4000]
    (fast, *_) = sla.knees(loaded, Sla("mean", 0.25))  # the mean is the stored lat_mean (200, 300 µs)
    assert fast.iops == pytest.approx(1500.0)


def test_show_sla_text_and_errors(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "sweep", "--db", str(db), "--sla", "p99=2ms"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1:3] == [
        "target  workload  bs  load  dir   IOPS at p99<=2ms  between",
        "fast    rr        4k  0     read              2950  offered 2000 .. 4000",
    ]
    assert "never crossed (up to offered max)" in text and "over the bound from offered 1000" in text
    for bad in ("p98=2ms", "p99", "p99=fast", "p99=0ms"):
        assert main(["show", "sweep", "--db", str(db), "--sla", bad]) == 2
        assert "--sla" in capsys.readouterr().err


def test_report_summary_has_the_sla_column(db: Path) -> None:
    with Store(db) as store:
        report = page.build(data.load(store, "sweep"), "fast")
    html = page.render(report)
    assert "<th>IOPS at p99 &lt;= 2 ms</th>" in html
    assert '<td class="sla">read 2950</td>' in html and "read 2600 (never crossed)" in html


def test_spec_sla_round_trip_and_error() -> None:
    from vmio.errors import SpecError
    from vmio.spec import loads_spec
    from vmio.spec.dump import dumps

    text = '[campaign]\nname = "c"\nsla = "p99.9=500us"\n\n[[target]]\nname = "t"\nkind = "host"\npath = "/tmp/x"\n'
    text += '\n[[workload]]\nname = "w"\nrw = "randread"\n'
    camp = loads_spec(text)
    assert camp.sla == Sla("p99.9", 0.5) and loads_spec(dumps(camp)) == camp
    with pytest.raises(SpecError, match=r":3.*sla.*p42"):
        loads_spec(text.replace("p99.9=500us", "p42=1ms"))
