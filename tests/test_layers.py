"""Latency per layer (docs/layers.md): the host's block layer traced with bpftrace around real fio runs,
held against iostat; a refused trace still measures; nothing is left behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from test_campaign_host import Iostat, busy_loopdev, need_iostat
from vmio.campaign import layers as campaign_layers
from vmio.cli import main
from vmio.metrics import blocktrace, qemutrace
from vmio.store import Store
from vmio.system.blockdev import device_chain
from vmio.system.process import Runner, alive
from vmio.system.supervise import descendants
from vmio.targets import qemu as qemu_targets

from conftest import need
from qemu_support import needs_qemu

__all__ = ["busy_loopdev"]  # the fixture, used by name

pytestmark = [pytest.mark.fio, pytest.mark.root]


def need_tracing() -> None:
    need("bpftrace")
    if os.geteuid() != 0:
        pytest.skip("needs root (bpftrace)")
    why = blocktrace.tracefs("/sys", Runner())
    if why is not None:
        pytest.skip(why)


def enabled_events() -> dict[str, str]:
    """Every tracefs ``enable`` file of the block events and the dynamic event lists, as they read now."""
    base = next(Path("/sys", p) for p in blocktrace.TRACEFS if Path("/sys", p, blocktrace.EVENT).exists())
    files = sorted((base / "events" / "block").glob("*/enable")) + [
        base / "events" / "block" / "enable",
        base / "kprobe_events",
        base / "uprobe_events",
        base / "set_event",
    ]
    return {str(f): f.read_text() for f in files if f.exists()}


def bpftrace_pids() -> set[int]:
    """The bpftrace processes this test process started (through vmio's supervisor): another worker of
    ``make test`` tracing its own point at the same moment is not ours to count."""
    out = set()
    for pid in descendants(os.getpid()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "bpftrace":
                out.add(pid)
        except OSError:
            continue
    return out


def fio_on(device: str, seconds: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["fio", "--name=mix", f"--filename={device}", "--rw=randrw", "--rwmixread=70", "--bs=4k",
         "--iodepth=16", "--ioengine=libaio", "--direct=1", "--time_based", f"--runtime={seconds}",
         "--output-format=json"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


EDGE_S = 0.1  # how far around an end of the compared window the trace is looked at for a burst


def calm_ends(trace: blocktrace.HostBlockTrace, stamps: list[float], offset: float) -> list[float]:
    """The iostat report boundaries (wall clock) around which the trace saw no burst: within ``EDGE_S`` of
    each, latency completed at no more than twice the whole span's rate, reads and writes apart. The trace's
    end of a window and iostat's differ by up to half a slice (and bpftrace's few ms to read its maps): a
    burst of slow requests there (other users' writeback on the disk) would count on one side only."""
    whole = trace.window(stamps[0] - offset, stamps[-1] - offset)
    rate = {d: whole.sum_ns.get((d, "start"), 0) / (stamps[-1] - stamps[0]) for d in ("read", "write")}
    out = []
    for edge in stamps:
        near = trace.window(edge - offset - EDGE_S, edge - offset + EDGE_S)
        if all(near.sum_ns.get((d, "start"), 0) / (2 * EDGE_S) <= 2 * rate[d] for d in rate):
            out.append(edge)
    return out


@pytest.mark.alone  # the whole disk's requests against iostat's: the other worker's I/O would change the mix
def test_host_block_agrees_with_iostat_from_the_start(busy_loopdev: str) -> None:
    """The disk under a loop device: host_block from the request's start (``block_io_start``, where the
    kernel's accounting stamps the start its await counts from) to completion against iostat's r_await and
    w_await, over exactly iostat's whole reports inside fio's run, between report boundaries with no burst
    around them (``calm_ends``; 50 ms slices, so the trace's ends lie within 25 ms of iostat's), reads and
    writes apart; the requests counted against iostat's; and the spans nested: from issue within from
    insertion within from the start."""
    need_iostat()
    need("stdbuf")
    need_tracing()
    disks = blocktrace.landing_disks(device_chain(busy_loopdev))
    assert disks and not disks[0].name.startswith("loop"), disks
    iostat = Iostat(f"/dev/{disks[0].name}")
    trace = blocktrace.HostBlockTrace(disks[:1], 60, insert=True, start=True, slice_ms=50)
    try:
        trace.start()
        began = time.time()
        fio = fio_on(busy_loopdev, 6)
        fio.communicate(timeout=60)
        ended = time.time()
        time.sleep(0.3)
    finally:
        trace.stop()
        iostat.stop()
    assert fio.returncode == 0
    offset = time.time() - time.monotonic()  # iostat stamps the wall clock, the trace the monotonic one
    stamps = [t for t, _ in iostat.reports if began <= t <= ended]
    assert len(stamps) >= 4, f"iostat ended {len(stamps)} report(s) inside fio's run: {iostat.reports}"
    ends = calm_ends(trace, stamps, offset)
    assert len(ends) >= 2 and ends[-1] - ends[0] > 2.5, (
        f"no 3 reports between calm ends: {stamps}, calm {ends}"
    )
    first, last = ends[0], ends[-1]
    spans = trace.window(first - offset, last - offset)
    inside = [r for (t0, _), (t1, r) in zip(iostat.reports, iostat.reports[1:], strict=False)
              if t0 >= first and t1 <= last]  # fmt: skip
    assert inside
    print(f"{len(inside)} reports, {last - first:.2f} s; calm ends {len(ends)} of {len(stamps)}")
    for ddir, rate, waited in (("read", "r/s", "r_await"), ("write", "w/s", "w_await")):
        ios = spans.ios(ddir, "start")
        ours_ms = spans.sum_ns[(ddir, "start")] / ios / 1e6
        count = sum(r[rate] for r in inside)  # one report a second: its rate is its count
        theirs_ms = sum(r[rate] * r[waited] for r in inside) / count
        means = {
            span: round(spans.sum_ns[(ddir, span)] / ios / 1e6, 4) for span in ("issue", "insert", "start")
        }
        print(f"{ddir}: iostat {theirs_ms:.4f} ms over {count:.0f}; host_block {means} ms over {ios}")
        assert count > 200, f"the disk did too few {ddir}s to compare: {count}"
        assert ours_ms == pytest.approx(theirs_ms, rel=0.10), (ddir, ours_ms, theirs_ms)
        assert ios == pytest.approx(count, rel=0.10), (ddir, ios, count)
        assert ios == spans.ios(ddir, "insert") == spans.ios(ddir, "issue")
        # issue to completion is part of insertion to completion, which is part of start to completion
        assert spans.sum_ns[(ddir, "issue")] <= spans.sum_ns[(ddir, "insert")]
        if trace.start_event:  # the start was traced (not taken at insertion): it comes before the insertion
            assert spans.sum_ns[(ddir, "insert")] < spans.sum_ns[(ddir, "start")]


@pytest.fixture
def traced_run(scratch: Path, tmp_path: Path) -> Iterator[tuple[Path, dict[str, str], set[int]]]:
    need_tracing()
    before, pids = enabled_events(), bpftrace_pids()
    yield tmp_path / "l.db", before, pids


def spec(tmp_path: Path, path: str, *, layers: bool, direct: bool = True, size: str = "32M") -> Path:
    text = f"""
[campaign]
name = "lay"
layers = {str(layers).lower()}

[[target]]
name = "bare"
kind = "host"
path = "{path}"
size = "{size}"

[[workload]]
name = "mix"
rw = "randrw"
rwmixread = 70
bs = "4k"
iodepth = 8
direct = {str(direct).lower()}
runtime = "3s"
ramp = "1s"
"""
    out = tmp_path / "s.toml"
    out.write_text(text)
    return out


def show(db: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(["show", "lay", "--json", "--db", str(db)]) == 0
    [point] = json.loads(capsys.readouterr().out)
    assert isinstance(point, dict)
    return point


def test_run_layers_traces_host_block_and_leaves_nothing(
    traced_run: tuple[Path, dict[str, str], set[int]], scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vmio run --layers`` on a file: app and host_block per direction, their histograms stored (the counts
    add up to the figures shown), app above host_block on direct I/O, and after the point no tracer runs and
    no tracefs switch changed."""
    db, before, pids = traced_run
    assert main(["run", str(spec(scratch, str(scratch / "f.img"), layers=False)), "--db", str(db),
                 "--layers"]) == 0  # fmt: skip
    assert bpftrace_pids() <= pids, "a tracer outlived its point"
    assert enabled_events() == before
    point = show(db, capsys)
    layers = point["layers"]
    assert isinstance(layers, dict) and list(layers) == ["app", "host_block"]
    app, host = layers["app"], layers["host_block"]
    assert host["disks"] == [d.name for d in blocktrace.landing_disks(device_chain(str(scratch)))]
    for ddir in ("read", "write"):
        assert app[ddir]["ios"] == point[f"{ddir}_ops"]  # fio's own count
        assert app[ddir]["mean_us"] == pytest.approx(point[f"{ddir}_lat_ns"]["mean"] / 1000, rel=1e-3)
        figures = host[ddir]
        assert figures["ios"] > 0 and 0 < figures["p50_us"] <= figures["p99_us"]
        assert "insert_mean_us" not in figures  # points leave the insertion probe out (its cost)
    # each fio read is one request on the disk (the window's ends are within a 200 ms slice of fio's 3 s),
    # and its time there is part of fio's
    assert host["read"]["ios"] >= 0.8 * app["read"]["ios"]
    assert app["read"]["mean_us"] > host["read"]["mean_us"]
    capsys.readouterr()  # compare pairs the layers' means too (here a campaign with itself: equal)
    assert main(["compare", "lay", "lay", "--db", str(db), "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)["changes"]
    means = {(c["ddir"], c["metric"]): c["before_mean"] for c in changes if "layer" in c["metric"]}
    assert means[("read", "host_block layer mean")] == pytest.approx(host["read"]["mean_us"] * 1000)
    assert main(["report", "lay", "--db", str(db), "-o", str(scratch / "r.html")]) == 0
    page = (scratch / "r.html").read_text()
    assert 'id="layers-0"' in page and "host block layer and device" in page
    shown = " ".join(re.sub(r"<[^>]+>", " ", page).split())  # the page's text, as wrapped lines joined
    assert "the layers need not nest, and a share below zero is drawn as zero" in shown  # buffered I/O
    with Store(db) as store:
        [run] = store.runs("lay")
        hists = store.layer_hists(run["id"])
    stored = {(layer, ddir, span): (total, sum(bins.values())) for layer, ddir, span, total, bins in hists}
    for ddir in ("read", "write"):
        total, count = stored[("host_block", ddir, "issue")]
        assert count == host[ddir]["ios"]
        assert total / count / 1000 == pytest.approx(host[ddir]["mean_us"], abs=0.001)


def test_refused_trace_says_why_and_the_point_measures(
    traced_run: tuple[Path, dict[str, str], set[int]],
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No bpftrace: the point is measured and host_block says why."""
    db, _, _ = traced_run
    monkeypatch.setattr(blocktrace, "BPFTRACE", "vmio-no-such-bpftrace")
    assert main(["run", str(spec(scratch, str(scratch / "f.img"), layers=True)), "--db", str(db)]) == 0
    point = show(db, capsys)
    assert point["status"] == "done" and point["read_iops"] > 0
    layers = point["layers"]
    assert isinstance(layers, dict)
    assert layers["host_block"] == {
        "read": None,
        "write": None,
        "why": "vmio-no-such-bpftrace is not installed (Debian package bpftrace)",
    }
    assert layers["app"]["read"]["ios"] == point["read_ops"]
    with Store(db) as store:
        [run] = store.runs("lay")
        assert store.layer_hists(run["id"]) == []


class _RefusedMount(Runner):
    """A runner whose ``mount`` fails as an unprivileged or locked-down host's would (a seam: the program
    run instead says so and exits 32, mount's own failure status)."""

    def run(self, argv: Any, **kwargs: Any) -> Any:
        assert argv[0] == "mount", argv
        return super().run(["sh", "-c", "echo 'mount: permission denied' >&2; exit 32"], **kwargs)


def test_a_host_that_cannot_trace_says_why(tmp_path: Path) -> None:
    """Each way the host's block layer cannot be traced is one sentence (the point is measured all the
    same: test_refused_trace_says_why_and_the_point_measures): no disk of this host under the target, a
    kernel without tracefs, a tracefs that cannot be mounted (mount's own words)."""
    assert (
        blocktrace.why_not([], tmp_path, Runner()) == "the target's I/O lands on no block device of this host"
    )
    assert blocktrace.tracefs(tmp_path, Runner()) == (
        f"this kernel has no tracefs ({tmp_path / 'kernel/tracing'} does not exist)"
    )
    (tmp_path / "kernel/tracing").mkdir(parents=True)
    assert blocktrace.tracefs(tmp_path, _RefusedMount()) == (
        f"tracefs is not mounted and could not be mounted at {tmp_path / 'kernel/tracing'}: mount: permission "
        "denied"
    )


def test_the_tracer_dies_with_vmio(tmp_path: Path) -> None:
    """vmio killed by SIGKILL mid-trace: its tracer (under the supervisor) dies with it."""
    need_tracing()
    disks = blocktrace.landing_disks(device_chain(str(tmp_path)))
    if not disks:
        pytest.skip(f"{tmp_path} is on no block device")
    code = (
        "import sys, time\n"
        "from vmio.metrics import blocktrace\n"
        f"t = blocktrace.HostBlockTrace([blocktrace.Disk({disks[0].name!r}, {disks[0].major}, "
        f"{disks[0].minor})], 120)\n"
        "t.start()\n"
        "print(t.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})  # fmt: skip
    assert proc.stdout is not None
    supervisor = int(proc.stdout.readline())
    tracers = [p for p in bpftrace_pids() if _parent(p) == supervisor]
    assert tracers, "no bpftrace under the supervisor"
    proc.kill()
    proc.wait(timeout=10)
    proc.stdout.close()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(alive(p) for p in [supervisor, *tracers]):
        time.sleep(0.1)
    assert not any(alive(p) for p in [supervisor, *tracers])


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


MISSING_EVENT = "virtio_blk_req_done_by_another_build"  # a trace event no QEMU here has
VM_SPEC = """
[campaign]
name = "lay"
layers = true

[[target]]
name = "vblk"
kind = "qemu"
backing = ["{backing}"]
size = "32M"
cache = "none"

[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "3s"
ramp = "1s"

[[workload]]
name = "rr2"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "2s"
ramp = "1s"

[[workload]]
name = "rr3"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "1s"
"""


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_a_tcg_guest_nests_app_guest_block_qemu_host_block(
    traced_run: tuple[Path, dict[str, str], set[int]],
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One real guest, virtio-blk with cache = "none" (direct through to the disk), two points. The first:
    the guest's block layer and QEMU's each count one request per fio read, and the means nest, app >=
    guest_block >= qemu >= host_block (under TCG the gaps are wide: the guest's own time dwarfs the sampling
    error of the slices and µs stamps); the guest's tracefs, read through its tracer, holds the triggers
    during the point and nothing after it.
    The second runs with a bound of 4 KiB on QEMU's log (the seam ``qemutrace.LIMIT``; about 20 requests):
    the point switches QEMU's events off once the log passes it and says so in ``cut``; the log's own lines
    (read from the file when the point ends) hold far fewer requests than fio made, and the point measures.
    Nothing is left behind."""
    db, before, pids = traced_run
    logged: list[tuple[int, int]] = []  # per point: bytes and completed requests the point's log holds
    ends: list[int] = []  # the log's length at each traced point's end
    init, finish = campaign_layers.Tracing.__init__, campaign_layers.Tracing.finish

    def bound_the_second(self: campaign_layers.Tracing, *args: Any) -> None:
        init(self, *args)
        if len(logged) == 1:  # the first point is over
            monkeypatch.setattr(qemutrace, "LIMIT", 4 << 10)
        if len(logged) == 2:  # the third point: a build without one of the events (a name QEMU lacks)
            monkeypatch.setattr(qemu_targets, "LAYER_EVENTS", (*qemu_targets.LAYER_EVENTS, MISSING_EVENT))

    def read_the_log(self: campaign_layers.Tracing, *args: Any) -> None:
        if not self.qemu:  # not traced (the third point): the log as long as the second point left it
            [log] = self.rig.qemu_logs()
            logged.append((0, log.stat().st_size))
            return finish(self, *args)
        [(log, start)] = self.qemu
        with open(log, "rb") as f:
            f.seek(start)
            text = f.read()
        logged.append((len(text), text.count(b":virtio_blk_req_complete ")))
        ends.append(start + len(text))
        return finish(self, *args)

    guest_state: list[str] = []  # the guest's tracefs as its tracer reads it: in each point, after it
    enter, leave = campaign_layers.Tracing.__enter__, campaign_layers.Tracing.__exit__

    def entered(self: campaign_layers.Tracing) -> campaign_layers.Tracing:
        out = enter(self)
        guest_state.extend(t.command("state")[1] for t in self.guest)
        return out

    def left(self: campaign_layers.Tracing, *exc: object) -> None:
        tracers = list(self.guest)
        leave(self, *exc)  # type: ignore[arg-type]
        guest_state.extend(t.command("state")[1] for t in tracers)

    monkeypatch.setattr(campaign_layers.Tracing, "__init__", bound_the_second)
    monkeypatch.setattr(campaign_layers.Tracing, "finish", read_the_log)
    monkeypatch.setattr(campaign_layers.Tracing, "__enter__", entered)
    monkeypatch.setattr(campaign_layers.Tracing, "__exit__", left)
    spec_path = scratch / "vm.toml"
    spec_path.write_text(VM_SPEC.format(backing=scratch / "vm.img"))
    assert main(["run", str(spec_path), "--db", str(db)]) == 0
    assert bpftrace_pids() <= pids and enabled_events() == before
    capsys.readouterr()
    assert main(["show", "lay", "--json", "--db", str(db)]) == 0
    points = json.loads(capsys.readouterr().out)
    [point] = [p for p in points if "cut" not in p["layers"]["qemu"] and "why" not in p["layers"]["qemu"]]
    [bounded] = [p for p in points if "cut" in p["layers"]["qemu"]]
    [lacking] = [p for p in points if "why" in p["layers"]["qemu"]]
    layers = point["layers"]
    assert isinstance(layers, dict) and set(layers) == {"app", "guest_block", "qemu", "host_block"}
    app, guest, qemu, host = (layers[k]["read"] for k in ("app", "guest_block", "qemu", "host_block"))
    assert app["ios"] == point["read_ops"]
    # the guest's window is fio's length ending with its last 100 ms slot: its start is within a slot of
    # fio's (about 3 % of a 3 s window), so 10 % holds it with room for TCG's uneven rate across a slot
    assert guest["ios"] == pytest.approx(app["ios"], rel=0.1)
    assert qemu["ios"] == pytest.approx(app["ios"], rel=0.1)
    # Each request's time in an inner layer is part of its time in the outer one; the layers' windows
    # differ only at their edges (within a slot of 100 ms or 200 ms: a few % of the requests), so each mean
    # is over nearly the same requests. 3 % of slack per step covers that; under TCG the gaps between the
    # layers (the emulated guest's own time) are many times wider.
    tol = 0.97
    assert app["mean_us"] >= tol * guest["mean_us"], layers
    assert guest["mean_us"] >= tol * qemu["mean_us"], layers
    assert qemu["mean_us"] >= tol * host["mean_us"], layers
    # the guest's triggers were on during the point, and nothing of them is left after it
    during, after = guest_state[:2]  # the first point's
    assert "onmatch(block.block_rq_issue).trace(vmio_blk_lat" in during and "vmio_blk_lat" in during
    kept = [line for line in after.splitlines() if not line.startswith("== ")]
    assert kept == ["0"], after  # events/block/enable reads 0; no trigger, synthetic event or set_event
    with Store(db) as store:
        [run] = [r for r in store.runs("lay") if r["point_key"] == point["point"]]
        stored = {(h[0], h[1]): h for h in store.layer_hists(run["id"])}
    assert sum(stored[("qemu", "read")][4].values()) == qemu["ios"]
    assert sum(stored[("guest_block", "read")][4].values()) == guest["ios"]
    # the second point: its log stopped near the bound, well before fio did
    cut, app2 = bounded["layers"]["qemu"], bounded["layers"]["app"]["read"]
    assert bounded["status"] == "done" and app2["ios"] == bounded["read_ops"]
    assert cut["cut"].startswith("a VM's log passed 4.00 KiB ") and "switched off" in cut["cut"], cut
    [(_, whole), (size, requests), _] = logged
    assert whole >= app["ios"]  # the first point's log: every request
    assert size > 4 << 10 and requests < 0.5 * app2["ios"], (size, requests, app2["ios"])
    assert cut["read"] is None or cut["read"]["ios"] <= requests
    assert bounded["layers"]["host_block"]["read"]["ios"] > 0  # over fio's window (docs/layers.md)
    # the third point: QEMU lacked an event, so none was switched on and the entry says which; it measures
    assert lacking["status"] == "done" and lacking["layers"]["app"]["read"]["ios"] == lacking["read_ops"] > 0
    why = lacking["layers"]["qemu"]["why"]
    assert why.startswith("QEMU's request events could not be switched on: ") and MISSING_EVENT in why, why
    assert lacking["layers"]["qemu"]["read"] is None and lacking["layers"]["guest_block"]["read"]["ios"] > 0
    assert logged[2] == (0, ends[-1])  # nothing logged in it: no event was left on
    # diagnose cites the layer that dominates, with the stored figures
    capsys.readouterr()
    assert main(["diagnose", "lay", "--db", str(db), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)[point["point"]]
    [step] = [s for s in verdict["steps"] if s["node"] == "layers"]
    before = 1 - host["mean_us"] / app["mean_us"]
    assert step["answer"].startswith(
        f"{before:.0%} of the VM's read latency is spent before the host's block"
    )
    assert [c["value"] for c in step["evidence"][:2]] == [app["mean_us"], host["mean_us"]]
    [split] = [s for s in verdict["steps"] if s["node"] == "layers-guest"]  # the guest's layer splits it
    assert [c["value"] for c in split["evidence"][:3]] == [app["mean_us"], guest["mean_us"], host["mean_us"]]


def test_own_costs_stack_to_the_outer_mean() -> None:
    """Each layer's own share is its mean less the next traced layer inside; the stack adds up to app."""
    from vmio.report.plots_layers import own_costs

    layered = {"app": 4382.0, "qemu": 406.0, "host_block": 77.0}
    costs = own_costs(layered)
    assert costs == [("host_block", 77.0), ("qemu", 329.0), ("app", 3976.0)]
    assert sum(c for _, c in costs) == layered["app"]
    assert own_costs({"app": 50.0, "host_block": 80.0}) == [("host_block", 80.0), ("app", 0.0)]  # no nesting
    # with the guest's block layer between fio and QEMU (the TCG figures of docs/layers.md)
    guest = {"app": 17321.0, "guest_block": 6094.0, "qemu": 992.0, "host_block": 242.0}
    assert own_costs(guest) == [
        ("host_block", 242.0),
        ("qemu", 750.0),
        ("guest_block", 5102.0),
        ("app", 11227.0),
    ]
