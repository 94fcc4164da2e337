"""Points whose guest kernel reported disk trouble, or whose guest's clock was coarse, are named in the report,
and TCG targets are marked in its #layers figure, with fixed data."""

from __future__ import annotations

import re

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


def test_the_layers_figure_marks_tcg_targets() -> None:
    """``#layers`` (docs/layers.md): a target run under TCG is named with the TCG mark on its bars and the
    figure's caption says what that means (its guest-side shares measure the emulator); a bare target is
    not marked."""
    figures = {"read": {"ios": 2000, "mean_us": 200.0, "p50_us": 180.0, "p99_us": 900.0}, "write": None}
    inner = {"read": {"ios": 2000, "mean_us": 80.0, "p50_us": 70.0, "p99_us": 300.0}, "write": None}
    with Store(":memory:") as store:
        store.ensure_campaign("g", "g.toml", "", "{}")
        for target, kind in (("bare", "host"), ("vblk", "qemu")):
            point = rec(target, kind, 0 if kind == "qemu" else None)
            point.layers = {"app": figures, "host_block": {**inner, "disks": ["vda"]}}
            store.record(point)
        html = page.render(page.build(report_data.load(store, "g"), "bare"))
    figure = html.split('id="layers-0"')[1].split("</figure>")[0]
    text = " ".join(re.sub(r"<[^>]+>", " ", figure).split())
    # the bars' names (the y axis), then the caption's note
    assert f"bare · max vblk {report_data.TCG_MARK} · max" in text, text
    assert text.endswith(report_data.TCG_NOTE.strip()), text


def test_points_read_off_a_coarse_guest_clock_are_named() -> None:
    """A point whose layers carry a ``clock`` note (its guest's clock stepped by the kernel's tick) is named
    in the report with the note, layer by layer; a point without one is not."""
    note = "the guest's trace clock is coarse (vmio-0's in 4000 µs steps: ...)"
    figures = {"read": {"ios": 2000, "mean_us": 2395.0, "p50_us": 4014.08, "p99_us": 8028.16}, "write": None}
    with Store(":memory:") as store:
        store.ensure_campaign("g", "g.toml", "", "{}")
        coarse, fine = rec("vblk", "qemu", 0), rec("bare", "host", None)
        coarse.layers = {"guest_block": {**figures, "clock": note}}
        fine.layers = {"app": figures}
        store.record(coarse)
        store.record(fine)
        html = page.render(page.build(report_data.load(store, "g"), "bare"))
    section = html.split("<h2>Coarse guest clocks</h2>")[1].split("</ul>")[0]
    assert (
        "vblk/rr/bs=4096/offered=max/load=0/rep=1, guest_block: the guest&#x27;s trace clock is coarse"
        in section
    )
    assert "bare/" not in section
