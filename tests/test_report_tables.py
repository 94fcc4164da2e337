"""Summary table, baseline ratios and before/after verdicts over fixed stored data: exact output."""

from __future__ import annotations

import json
import math
import re
import sqlite3
import statistics
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from vmio.cli import main
from vmio.fio.output import JobResult
from vmio.report import compare, compare_text, data, page
from vmio.report import summary_table as saturation
from vmio.report.figure import to_svg
from vmio.spec import Campaign, HostTarget, QemuTarget, Workload
from vmio.stats.spread import Spread, ratio, welch
from vmio.store import RunRecord, Store

TARGETS: list[Mapping[str, object]] = [
    {"name": "bare", "kind": "host"},
    {"name": "vm", "kind": "qemu", "vcpus": 2, "vms": 1},
]
HOST = {"kernel": "6.1.0-test", "cpu_model": "Test CPU", "cores": 2, "fio_version": "fio-3.33"}


def new_campaign(store: Store, name: str, targets: Sequence[Mapping[str, object]] = TARGETS) -> None:
    """The campaign as vmio stores it: the canonical text of a real spec model."""
    models = tuple(
        QemuTarget(
            str(t["name"]), (f"/var/tmp/{t['name']}.img",), vcpus=int(str(t["vcpus"])), vms=int(str(t["vms"]))
        )
        if t["kind"] == "qemu"
        else HostTarget(str(t["name"]), f"/var/tmp/{t['name']}.img")
        for t in targets
    )
    workloads = (Workload("rr", "randread", (4096,)), Workload("rw", "randwrite", (4096,)))
    store.ensure_campaign(name, f"{name}.toml", "", Campaign(name, 1, models, workloads).canonical())


def add(
    store: Store, campaign: str, target: str, offered: int | None, rep: int, iops: float,
    p50_us: float = 100.0, p99_us: float = 900.0, workload: str = "rr", ddir: str = "read",
    samples: list[tuple[float, str, str, float]] | None = None, load: int = 0,
    oplat: list[tuple[str, str, int, int, str]] | None = None, layers: dict[str, object] | None = None,
) -> None:  # fmt: skip
    vm = target == "vm"
    lat: dict[str, float | None] = {"min": 20e3, "mean": p50_us * 1.1e3, "max": 5e6, "stddev": 1.0, "p50": p50_us * 1e3,
           "p90": p50_us * 2e3, "p99": p99_us * 1e3, "p99.9": p99_us * 2e3, "p99.99": p99_us * 3e3}  # fmt: skip
    result = JobResult("127.0.0.1:8765" if vm else "local", "measure", ddir, iops, iops * 4096,
                       int(iops * 10), 10_000, lat, 5.0, 10.0)  # fmt: skip
    key = f"{target}/{workload}/bs=4096/offered={offered or 'max'}/load={load}/rep={rep}"
    store.record(RunRecord(
        campaign=campaign, point_key=key, target=target, target_kind="qemu" if vm else "host",
        workload=workload, bs=4096, offered_iops=offered, load_processes=load, repetition=rep, status="done",
        started=1000.0, ended=1010.0, host=HOST, accel="tcg" if vm else None, fio_version="fio-3.33",
        qemu_version="7.2.0" if vm else None, device="vda", results=[result],
        metrics={("dev:vda", "busy_pct"): 50.0 + rep, ("cpu", "usr_pct"): 10.0, ("cpu", "sys_pct"): 20.0},
        samples=samples or [], oplat=oplat or [], layers=layers,
    ))  # fmt: skip


@pytest.fixture
def fixed(store: Store) -> Store:
    """bare reaches 1000 and 5000 IOPS offered; vm reaches 1000 only; at "max" vm has half of bare."""
    new_campaign(store, "fixed")
    for rep, (b1k, b5k, bmax, v1k, v5k, vmax) in enumerate(
        [(1000, 4990, 9000, 998, 3000, 4000), (999, 4900, 10000, 1000, 2900, 5000),
         (1001, 5000, 11000, 990, 3100, 6000)], start=1,
    ):  # fmt: skip
        add(store, "fixed", "bare", 1000, rep, b1k)
        add(store, "fixed", "bare", 5000, rep, b5k)
        add(store, "fixed", "bare", None, rep, bmax, p50_us=100 + rep, p99_us=1000 + 100 * rep)
        add(store, "fixed", "vm", 1000, rep, v1k)
        add(store, "fixed", "vm", 5000, rep, v5k)
        add(store, "fixed", "vm", None, rep, vmax, p50_us=150 + 10 * rep, p99_us=3000)
    add(store, "fixed", "bare", None, 1, 500, workload="rw", ddir="write")
    add(store, "fixed", "vm", None, 1, 400, workload="rw", ddir="write")
    return store


SUMMARY = """\
campaign 'fixed': medians over repetitions; a rate is achieved at >= 95% of it; knee = lowest rate not achieved
workload  bs  load  target    IOPS at max [min-max]  vs bare           knee  offered rates
rr        4k  0     bare      10000 [9000-11000]     baseline          none  1000 yes (1000), 5000 yes (4990)
rr        4k  0     vm [TCG]  5000 [4000-6000]       0.50 [0.36-0.67]  5000  1000 yes (998), 5000 no (3000)
rw        4k  0     bare      500                    baseline          -     -
rw        4k  0     vm [TCG]  400                    0.80              -     -
[TCG]: the VMs ran under TCG (QEMU emulating the CPU, no KVM): their ratios to bare metal measure the emulator, not a KVM host
"""


def test_summary_table_text(fixed: Store) -> None:
    loaded = data.load(fixed, "fixed")
    rows = saturation.summarize(loaded, "bare")
    assert saturation.format_text(rows, "fixed", "bare") == SUMMARY


def test_summary_table_cli_json(fixed: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "fixed.db"
    fixed.db.execute("VACUUM INTO ?", (str(db),))
    assert main(["report", "fixed", "--db", str(db)]) == 0
    assert capsys.readouterr().out == SUMMARY
    assert main(["report", "fixed", "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    vm = doc["rows"][1]
    assert (doc["baseline"], vm["target"], vm["knee"]) == ("bare", "vm", 5000)
    assert vm["ratio_to_baseline"] == {"median": 0.5, "min": 4000 / 11000, "max": 6000 / 9000, "n": 3}
    assert [r["ok"] for r in vm["rates"]] == [True, False]


BASELINE = """\
campaign 'fixed': each target / baseline 'bare'; median over repetitions [range from the extremes]; a latency ratio above 1 is slower
workload  bs  offered  load  dir    target    IOPS ratio        p50 ratio         p99 ratio
rr        4k  1000     0     read   vm [TCG]  1.00 [0.99-1.00]  1.00 [1.00-1.00]  1.00 [1.00-1.00]
rr        4k  5000     0     read   vm [TCG]  0.60 [0.58-0.63]  1.00 [1.00-1.00]  1.00 [1.00-1.00]
rr        4k  max      0     read   vm [TCG]  0.50 [0.36-0.67]  1.67 [1.55-1.78]  2.50 [2.31-2.73]
rw        4k  max      0     write  vm [TCG]  0.80              1.00              1.00
[TCG]: the VMs ran under TCG (QEMU emulating the CPU, no KVM): their ratios to bare metal measure the emulator, not a KVM host
"""


def test_compare_against_baseline(fixed: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = compare.against_baseline(data.load(fixed, "fixed"), "bare")
    assert compare_text.format_baseline(rows, "fixed", "bare") == BASELINE
    db = tmp_path / "fixed.db"
    fixed.db.execute("VACUUM INTO ?", (str(db),))
    assert main(["compare", "fixed", "--baseline", "bare", "--db", str(db)]) == 0
    assert capsys.readouterr().out == BASELINE
    assert main(["compare", "fixed", "--baseline", "bare", "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    at_max = doc["rows"][2]
    assert (at_max["offered_iops"], at_max["ddir"], at_max["ratio"]["p99"]["median"]) == (
        "max",
        "read",
        3000 / 1200,
    )
    assert at_max["value"]["IOPS"] == {"median": 5000, "min": 4000, "max": 6000, "n": 3}


def _layers(app: float, host: float, qemu: float | None = None) -> dict[str, object]:
    """A traced point's ``layers`` as ``show --json`` prints them (reads only; the figures in µs)."""

    def one(mean: float) -> dict[str, object]:
        return {"read": {"mean_us": mean, "p50_us": mean, "p99_us": 2 * mean, "ios": 1000}, "write": None}

    shown = {"app": one(app), "host_block": {**one(host), "disks": ["vda"]}}
    return shown if qemu is None else {**shown, "qemu": one(qemu)}


def test_compare_against_baseline_has_the_layer_means(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare --baseline`` gives each traced layer's mean as the other figures: the ratio of medians over
    repetitions with the range from the extremes, in text and JSON (held against SQL on the stored
    ``layers``); a layer only one side traced has its figures and no ratio; an untraced point has none."""
    new_campaign(store, "lay")
    for rep, (app_b, host_b, app_v, host_v, qemu_v) in enumerate(
        [
            (100.0, 80.0, 900.0, 90.0, 400.0),
            (104.0, 82.0, 1000.0, 96.0, 440.0),
            (98.0, 78.0, 950.0, 85.0, 380.0),
        ],
        1,
    ):
        add(store, "lay", "bare", None, rep, 1000, layers=_layers(app_b, host_b))
        add(store, "lay", "vm", None, rep, 500, layers=_layers(app_v, host_v, qemu_v))
    add(store, "lay", "bare", None, 1, 500, workload="rw", ddir="write")  # not traced
    add(store, "lay", "vm", None, 1, 400, workload="rw", ddir="write")
    db = tmp_path / "lay.db"
    store.db.execute("VACUUM INTO ?", (str(db),))
    mean = "json_extract(layers_json, '$.' || ? || '.read.mean_us')"
    stored: dict[tuple[str, str], list[float]] = {}
    for layer in ("app", "host_block", "qemu"):
        query = f"SELECT target, {mean} FROM run WHERE workload = 'rr' AND {mean} IS NOT NULL"
        for target, value in sqlite3.connect(db).execute(query, (layer, layer)):
            stored.setdefault((layer, target), []).append(value)
    assert main(["compare", "lay", "--baseline", "bare", "--db", str(db), "--json"]) == 0
    rr, rw = json.loads(capsys.readouterr().out)["rows"]
    for layer in ("app", "host_block"):
        vm, bare = stored[(layer, "vm")], stored[(layer, "bare")]
        got = rr["ratio"][f"{layer} layer mean"]
        assert got["median"] == pytest.approx(statistics.median(vm) / statistics.median(bare), rel=1e-12)
        assert (got["min"], got["max"]) == pytest.approx(
            (min(vm) / max(bare), max(vm) / min(bare)), rel=1e-12
        )
        assert rr["value"][f"{layer} layer mean"]["median"] == pytest.approx(statistics.median(vm) * 1000)
    assert rr["ratio"]["qemu layer mean"] is None  # the baseline has no QEMU
    assert rr["value"]["qemu layer mean"]["median"] == pytest.approx(
        statistics.median(stored[("qemu", "vm")]) * 1000
    )
    assert rr["unit"]["host_block layer mean"] == "ns"
    assert not any("layer" in m for m in rw["ratio"])  # neither side traced the writes
    assert main(["compare", "lay", "--baseline", "bare", "--db", str(db)]) == 0
    head, first, second = capsys.readouterr().out.splitlines()[1:4]
    assert re.split(r"\s{2,}", head)[-3:] == [
        "app layer mean ratio",
        "qemu layer mean ratio",
        "host_block layer mean ratio",
    ]
    app = stored[("app", "vm")], stored[("app", "bare")]
    host = stored[("host_block", "vm")], stored[("host_block", "bare")]
    cells = [f"{statistics.median(v) / statistics.median(b):.2f} [{min(v) / max(b):.2f}-{max(v) / min(b):.2f}]"
             for v, b in (app, host)]  # fmt: skip
    assert re.split(r"\s{2,}", first)[-3:] == [cells[0], "-", cells[1]], first
    assert re.split(r"\s{2,}", second)[-3:] == ["-", "-", "-"], second


def before_after_store(store: Store) -> Store:
    targets: list[Mapping[str, object]] = [{"name": "bare", "kind": "host"}]
    new_campaign(store, "before", targets)
    new_campaign(store, "after", targets)
    for rep, (b, a, p50b, p50a) in enumerate(
        [(100, 120, 100, 101), (102, 121, 110, 109), (98, 119, 90, 91)], 1
    ):
        add(store, "before", "bare", None, rep, b, p50_us=p50b, p99_us=1000)
        add(store, "after", "bare", None, rep, a, p50_us=p50a, p99_us=800 + rep)
    add(store, "before", "bare", 1000, 1, 1000)
    add(store, "after", "bare", 1000, 1, 990)
    add(store, "before", "bare", 2000, 1, 2000)
    return store


BEFORE_AFTER = """\
'before' -> 'after': difference of means (after - before) per point, 95% interval (Welch t) over repetitions
verdict at a change of 5 %: higher/lower when the whole 95% interval lies beyond 5 % of the before mean, no change when within 5 %, else inconclusive (fewer than 2 a side too)
point                              dir   metric  before        after        difference       95% interval      verdict
bare/rr/bs=4k/offered=1000/load=0  read  IOPS    1000.0 (n=1)  990.0 (n=1)  -10.0 (-1.0%)    -                 inconclusive
bare/rr/bs=4k/offered=1000/load=0  read  MiB/s   3.9 (n=1)     3.9 (n=1)    +0.0 (-1.0%)     -                 inconclusive
bare/rr/bs=4k/offered=1000/load=0  read  p50 us  100.0 (n=1)   100.0 (n=1)  +0.0 (+0.0%)     -                 inconclusive
bare/rr/bs=4k/offered=1000/load=0  read  p99 us  900.0 (n=1)   900.0 (n=1)  +0.0 (+0.0%)     -                 inconclusive
bare/rr/bs=4k/offered=max/load=0   read  IOPS    100.0 (n=3)   120.0 (n=3)  +20.0 (+20.0%)   [+15.8, +24.2]    higher (better)
bare/rr/bs=4k/offered=max/load=0   read  MiB/s   0.4 (n=3)     0.5 (n=3)    +0.1 (+20.0%)    [+0.1, +0.1]      higher (better)
bare/rr/bs=4k/offered=max/load=0   read  p50 us  100.0 (n=3)   100.3 (n=3)  +0.3 (+0.3%)     [-21.3, +22.0]    inconclusive
bare/rr/bs=4k/offered=max/load=0   read  p99 us  1000.0 (n=3)  802.0 (n=3)  -198.0 (-19.8%)  [-200.5, -195.5]  lower (better)
only in 'before': bare/rr/bs=4k/offered=2000/load=0
"""


def test_before_after_verdicts(store: Store) -> None:
    result = compare.before_after(data.load(before_after_store(store), "before"), data.load(store, "after"))
    assert compare_text.format_before_after(result) == BEFORE_AFTER
    doc = result.as_dict()
    iops = next(c for c in doc["changes"] if c["offered_iops"] == "max" and c["metric"] == "IOPS")
    ref = scipy_stats.ttest_ind([120, 121, 119], [100, 102, 98], equal_var=False).confidence_interval(0.95)
    assert (iops["ci_low"], iops["ci_high"]) == pytest.approx((ref.low, ref.high), rel=1e-9)
    assert iops["significant"] and doc["only_before"] == ["bare/rr/bs=4k/offered=2000/load=0"]


def test_before_after_cli(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "ba.db"
    before_after_store(store).db.execute("VACUUM INTO ?", (str(db),))
    assert main(["compare", "before", "after", "--db", str(db)]) == 0
    assert capsys.readouterr().out == BEFORE_AFTER
    assert main(["compare", "before", "after", "--db", str(db), "--json"]) == 0
    verdicts = [c["verdict"] for c in json.loads(capsys.readouterr().out)["changes"]]
    # per point: IOPS, bandwidth, p50, p99
    # the p50's interval (-21 % to +22 %) reaches across 5 %: the repetitions cannot tell (it was "no
    # significant change" before issue 38's rule); the table's words, by tell.change at --min-change
    assert verdicts[4:] == ["higher (better)", "higher (better)", "inconclusive", "lower (better)"]
    # the same intervals (IOPS +15.8 % to +24.2 %, p50 -21 % to +22 %, p99 -20.1 % to -19.6 %) at other sizes
    for pct, want in (("25", ["no change"] * 4), ("18", [*["inconclusive"] * 3, "lower (better)"])):
        assert main(["compare", "before", "after", "--db", str(db), "--json", "--min-change", pct]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["min_change"] == float(pct) / 100 and [c["verdict"] for c in doc["changes"]][4:] == want


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compare", "fixed"], "needs --baseline TARGET"),
        (["compare", "fixed", "--baseline", "nope"], "--baseline 'nope' is not a target of campaign 'fixed'"),
        (["compare", "fixed", "fixed", "--baseline", "bare"], "give one campaign with it"),
        (["compare", "a", "b", "c"], "one campaign (with --baseline) or two"),
        (["compare", "missing", "--baseline", "bare"], "no campaign 'missing'"),
        (["report", "fixed", "--png-dir", "x"], "--png-dir needs -o/--output"),
        (["report", "fixed", "--baseline", "nope"], "--baseline 'nope' is not a target"),
    ],
)
def test_bad_input_gives_one_clear_error(
    fixed: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    db = tmp_path / "fixed.db"
    fixed.db.execute("VACUUM INTO ?", (str(db),))
    assert main([*argv, "--db", str(db)]) in (1, 2)
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(1, 1e6), min_size=2, max_size=8),
    st.lists(st.floats(1, 1e6), min_size=2, max_size=8),
)
def test_welch_interval_matches_scipy(before: list[float], after: list[float]) -> None:
    diff = welch(before, after)
    assert diff is not None and diff.lo is not None and diff.hi is not None
    if diff.lo == diff.hi:  # both samples constant: no spread, the interval is the difference itself
        assert math.isclose(diff.lo, diff.diff)
        return
    with warnings.catch_warnings():  # the referee warns about near-constant samples; ours does not care
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = scipy_stats.ttest_ind(after, before, equal_var=False).confidence_interval(0.95)
    assert diff.lo == pytest.approx(ref.low, rel=1e-6, abs=1e-6)
    assert diff.hi == pytest.approx(ref.high, rel=1e-6, abs=1e-6)


def test_ratio_bounds_come_from_the_extremes() -> None:
    r = ratio(Spread(10, 8, 12, 3), Spread(5, 4, 6, 3))
    assert r == Spread(2.0, 8 / 6, 3.0, 3)
    assert ratio(Spread(1, 1, 1, 1), Spread(0, 0, 0, 1)) is None


def test_qemu_thread_plot_from_fixed_samples(store: Store) -> None:
    new_campaign(store, "vmthreads")
    for rep in (1, 2):
        for offered, scale in ((1000, 1.0), (None, 3.0)):
            samples = [(t, "qemu:vm0", m, v * scale * rep) for t in (1.0, 2.0)
                       for m, v in (("vcpu_pct", 40.0), ("iothread_pct", 30.0), ("main_pct", 5.0),
                                    ("other_pct", 1.0))]  # fmt: skip
            samples += [(t, "dev:vda", "read_iops", 900.0) for t in (1.0, 2.0)]
            add(store, "vmthreads", "vm", offered, rep, 900 * scale, samples=samples)
        add(store, "vmthreads", "bare", None, rep, 3000)
    report = page.build(data.load(store, "vmthreads"))
    (plot,) = [p for p in report.plots if p.id.startswith("qemu-")]
    assert plot.series == ["vm vCPU threads", "vm I/O threads", "vm main loop", "vm other threads"]
    svg = to_svg(plot)
    for gid in plot.series_ids():
        assert f'id="{gid}"' in svg
    vcpu = next(line for line in plot.figure.axes[0].get_lines() if line.get_gid() == plot.series_ids()[0])
    assert np.asarray(vcpu.get_ydata(), dtype=float).tolist() == [
        60.0,
        180.0,
    ]  # median of reps 1 and 2 (40, 80) and (120, 240)
    assert "accel: vm=tcg" in plot.caption and "QEMU 7.2.0" in plot.caption


def test_per_operation_latency_faceted_by_vcpus_and_vms(store: Store) -> None:
    targets = [*TARGETS, {"name": "vm2", "kind": "qemu", "vcpus": 1, "vms": 2}]
    new_campaign(store, "ops", targets)
    for target, base in (("bare", 100), ("vm", 300), ("vm2", 500)):
        for load in (0, 2):
            for rep in (1, 2):
                ops = [
                    ("local", "measure", 10 * i, (base + 10 * load + i + rep) * 1000, "read")
                    for i in range(20)
                ]
                add(store, "ops", target, None, rep, 100, workload="ops", load=load, oplat=ops)
    plot, series = page.build(data.load(store, "ops")).section("per-operation-latency").plots  # type: ignore[union-attr]
    # okayama-hypervisors-2020 Fig. 5: each operation in turn, a panel per target, a line per load count (first repetition)
    assert series.id == "opseries-0" and len([ax for ax in series.figure.axes if ax.get_visible()]) == 3
    assert series.values["opseries-0--vm-2-load"] == [[i + 1.0, (300 + 20 + i + 1) / 1000] for i in range(20)]
    assert [ax.get_title() for ax in plot.figure.axes] == ["host (no VM)", "1 vCPU · 2 VMs", "2 vCPUs · 1 VM"]
    assert [t.get_text() for t in plot.figure.axes[0].get_xticklabels()] == ["0", "2"]
    assert plot.series == ["bare (baseline)", "bare (baseline) avg", "bare (baseline) min", "bare (baseline) max",
                           "vm2", "vm2 avg", "vm2 min", "vm2 max", "vm", "vm avg", "vm min", "vm max"]  # fmt: skip
    lows = next(line for line in plot.figure.axes[2].get_lines() if line.get_gid() == "oplat-0--vm-min")
    assert np.asarray(lows.get_ydata(), dtype=float).tolist() == [
        301.0,
        321.0,
    ]  # µs: fastest op at load 0 and 2
    assert "all 240 operations" in plot.caption


def test_a_campaign_with_only_failed_points_still_reports(store: Store, tmp_path: Path) -> None:
    new_campaign(store, "broken")
    store.record(RunRecord(
        campaign="broken", point_key="vm/rr/bs=4096/offered=max/load=0/rep=1", target="vm", target_kind="qemu",
        workload="rr", bs=4096, offered_iops=None, load_processes=0, repetition=1, status="failed",
        started=1.0, ended=2.0, error="guest did not reach its ready marker in 30 s",
    ))  # fmt: skip
    report = page.build(data.load(store, "broken"))
    assert report.baseline == "bare" and report.plots == []
    written = page.write(report, tmp_path / "r.html", tmp_path / "png")
    html = (tmp_path / "r.html").read_text()
    assert written == [tmp_path / "r.html"] and "guest did not reach its ready marker" in html
    assert saturation.format_text(report.summary, "broken", "bare").endswith("no points done\n")


def test_an_unwritable_output_is_one_clear_error(
    fixed: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "fixed.db"
    fixed.db.execute("VACUUM INTO ?", (str(db),))
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["report", "fixed", "--db", str(db), "-o", str(blocker / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"argument -o/--output: '{blocker / 'r.html'}': '{blocker}' is a file, not a folder" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
