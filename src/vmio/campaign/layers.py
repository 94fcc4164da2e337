"""A point's latency per layer, traced around its fio run (``[campaign] layers = true``; docs/layers.md).

``Tracing`` starts what can be started before fio (the host's block layer: ``metrics.blocktrace``; QEMU's
request events; the guests' block layer through vmio's guest tracer: ``metrics.guesttrace``) and says
why a layer was not traced (no local disk, no root, no bpftrace, no tracefs, a failed attach): the point is
measured either way. ``finish`` fills the record's ``layers`` (``show --json``'s figures, with ``app`` from
fio's own results) and ``layer_hists`` (the histograms the store keeps) over the measured window.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from vmio.errors import VmioError
from vmio.metrics import blocktrace, guesttrace, qemutrace
from vmio.metrics import layers as lay
from vmio.metrics.sampler import DiskProbe
from vmio.store.records import JobResult, RunRecord
from vmio.system.process import Runner
from vmio.targets import Rig
from vmio.targets.base import TracesGuest, TracesQemu
from vmio.units import human_bytes

ATTACH_S = blocktrace.ATTACH_TIMEOUT_S
# what a coarse clock does to a layer's figures (its ``clock`` note ends so)
COARSE_READS = (
    "a request shorter than a step reads 0 µs, p50_us and p99_us are multiples of a step; the mean is not "
    "biased (a step falls anywhere within a request)"
)
GUEST_KEEP_S = 60  # a guest switches its tracing off by itself this long past the point's time limit


def rig_disks(rig: Rig, sys_root: str | Path) -> list[blocktrace.Disk]:
    """The whole disks a rig's I/O lands on: under each device it samples that is not a loop device (a loop
    device's backing file's device is sampled too)."""
    out: list[blocktrace.Disk] = []
    for probe in rig.probes:
        if not isinstance(probe, DiskProbe) or (Path(sys_root) / "block" / probe.device / "loop").exists():
            continue
        for disk in blocktrace.landing_disks([probe.device], sys_root):
            if disk not in out:
                out.append(disk)
    return out


class Tracing:
    """The layers of one point: started on entry, stopped on exit (however the point ends)."""

    def __init__(
        self,
        rig: Rig,
        runner: Runner,
        sys_root: str | Path,
        limit_s: float,
        seconds: float | None = None,
        bs: int = 512,
    ) -> None:
        self.bs = bs  # fio's smallest block size: bounds the start sectors the guests' pairing tables hold
        self.disks = rig_disks(rig, sys_root)
        self.runner, self.sys_root, self.limit_s = runner, sys_root, limit_s
        self.host: blocktrace.HostBlockTrace | None = None
        self.why: dict[str, str] = {}
        self.rig = rig
        self.qemu: list[tuple[Path, int]] = []  # each VM's log and where the point's lines start
        self.cut: str | None = None  # why QEMU's events were switched off before the point ended
        self._done = threading.Event()
        self._watcher: threading.Thread | None = None
        self.slot = guesttrace.slot_ns(limit_s if seconds is None else seconds)
        self.guest: list[guesttrace.Tracer] = []  # the guests tracing their block layer
        self.tables: list[guesttrace.Table] | None = None  # what they counted, read at the point's end
        self.left: list[str] = []  # guests whose tracing could not be switched off, in their words
        self.owner = guesttrace.owner()  # this run's name in the guests' claims (another run's is refused)
        self.clocks: dict[str, tuple[str, str]] = {}  # each traced guest's clocksource and trace clock

    def __enter__(self) -> Tracing:
        self._start_qemu()
        self._start_guest()
        why = blocktrace.why_not(self.disks, self.sys_root, self.runner)
        if why is None:
            trace = blocktrace.HostBlockTrace(self.disks, self.limit_s + ATTACH_S)
            try:
                trace.start()
            except (RuntimeError, OSError) as exc:
                why = str(exc)
            else:
                self.host = trace
        if why is not None:
            self.why["host_block"] = why
        return self

    def _start_qemu(self) -> None:
        """QEMU's request events on, in a rig whose VMs vmio started with their log."""
        if not isinstance(self.rig, TracesQemu):
            return
        logs = self.rig.qemu_logs()
        if isinstance(logs, str):
            self.why["qemu"] = logs
            return
        try:
            self.rig.qemu_events(True)
        except VmioError as exc:
            self.why["qemu"] = f"QEMU's request events could not be switched on: {exc}"
            with contextlib.suppress(VmioError):  # any that went on before the refusal
                self.rig.qemu_events(False)
            return
        self.qemu = [(log, _size(log)) for log in logs]
        self._watcher = threading.Thread(target=self._bound_logs, name="vmio-qemu-log-bound", daemon=True)
        self._watcher.start()

    def _bound_logs(self) -> None:
        """Switch QEMU's request events off as soon as a VM's log has grown by ``qemutrace.LIMIT`` in the
        point (checked every ``qemutrace.POLL_S``): the log stays near the bound however long the point runs,
        and what passed it would not be read anyway."""
        began = time.monotonic()
        while not self._done.wait(qemutrace.POLL_S):
            if all(_size(log) - start <= qemutrace.LIMIT for log, start in self.qemu):
                continue
            assert isinstance(self.rig, TracesQemu)  # the watcher runs only for such rigs
            late = f"{time.monotonic() - began:.1f} s into the point"
            try:
                self.rig.qemu_events(False)
            except VmioError as exc:
                self.cut = (
                    f"a VM's log passed {human_bytes(qemutrace.LIMIT)} {late}; QEMU's events stayed on: {exc}"
                )
            else:
                self.cut = (
                    f"a VM's log passed {human_bytes(qemutrace.LIMIT)} {late}: QEMU's request events were "
                    "switched off there, and the point's later requests are not counted"
                )
            return

    def _start_guest(self) -> None:
        """The guests' block layer traced (``vmio-trace on``), in a rig whose VMs run vmio's guest (or whose
        libvirt domains' agents run its text); a guest that refuses says why (its own words) and every guest
        is switched off again. ``on`` is given the point's limit and a minute: past it the guest switches
        itself off, whatever became of vmio."""
        if not isinstance(self.rig, TracesGuest):
            return
        tracers = self.rig.guest_tracers()
        if isinstance(tracers, str):
            self.why["guest_block"] = tracers
            return
        keep = math.ceil(self.limit_s) + GUEST_KEEP_S  # what a killed vmio leaves on goes off by then
        for tracer, disk in tracers:
            try:
                rc, said = tracer.command(
                    f"on {disk} {self.slot} {guesttrace.SIZE} {self.bs} {keep} {self.owner}"
                )
            except VmioError as exc:
                rc, said = 1, str(exc)
            if rc != 0:  # (another run's live tracer: refused in the guest, which this run leaves alone)
                self.why["guest_block"] = f"{tracer.name}'s block layer could not be traced: {said.strip()}"
                self._stop_guest()
                return
            self.guest.append(tracer)
            if (clock := guesttrace.clock(said)) is not None:
                self.clocks[tracer.name] = clock

    def _stop_guest(self) -> None:
        """Read what each guest counted, then switch its tracing off (whatever the reading did)."""
        tables, tracers, self.guest = [], self.guest, []
        for tracer in tracers:
            try:
                rc, said = tracer.command(f"read {self.owner}")
                if rc != 0:
                    raise VmioError(said.strip())
                tables.append(guesttrace.read(said, vm=tracer.name))
            except VmioError as exc:
                self.why["guest_block"] = f"{tracer.name}'s count could not be read: {exc}"
            finally:
                try:
                    rc, said = tracer.command(f"off {self.owner}")
                except VmioError:  # a VM that cannot answer is failing the point already
                    rc, said = 0, ""
                if rc != 0:  # the guest's own words; what is left goes off at the limit ``on`` gave it
                    self.left.append(f"{tracer.name}'s tracing could not be switched off: {said.strip()}")
        if tracers and "guest_block" not in self.why:
            self.tables = tables
        elif self.left and "guest_block" in self.why:  # no table to carry it: the why does
            self.why["guest_block"] = "; ".join([self.why["guest_block"], *self.left])

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        if self._watcher is not None:  # before the events go off here: one QMP call at a time
            self._watcher.join()
        try:
            self._stop_guest()
            if self.qemu and isinstance(self.rig, TracesQemu):
                # a VM that cannot answer is failing the point already; its log goes with it
                with contextlib.suppress(VmioError):
                    self.rig.qemu_events(False)
        finally:
            if self.host is not None:
                self.host.stop()

    def finish(self, rec: RunRecord, results: Sequence[JobResult], window: tuple[float, float]) -> None:
        """The record's ``layers`` and ``layer_hists`` over ``window`` (``time.monotonic`` seconds)."""
        shown: dict[str, object] = {"app": lay.app(results)}
        spans: dict[str, lay.Spans] = {}
        if self.qemu:
            window = self._qemu(window, spans, shown)
        if self.tables is not None:
            spans["guest_block"] = lay.Spans()
            guesttrace.window(self.tables, window[1] - window[0], self.slot, spans["guest_block"])
            guest = lay.traced(spans["guest_block"])
            dropped = sum(t.dropped for t in self.tables)
            cuts = [t.failed for t in self.tables if t.failed] + self.left
            if dropped:
                cuts.append(f"the guests' tables were full: {dropped} requests were not counted")
            renewals = sum(t.renewals for t in self.tables)
            if renewals:
                counted = ", ".join(
                    f"{d}: {spans['guest_block'].ios(d, 'issue')} counted of fio's {n}"
                    for d in lay.DIRECTIONS
                    if (n := sum(r.total_ios for r in results if r.role == "measure" and r.ddir == d))
                )
                cuts.append(
                    f"the guests' pairing tables were renewed {renewals} times in the point: requests in flight "
                    f"then were not counted ({counted})"
                )
            if cuts:
                guest["cut"] = "; ".join(cuts)
            shown["guest_block"] = guest
        self._clocks(rec, shown)
        if self.host is not None:
            spans["host_block"] = self.host.window(*window)
            shown["host_block"] = {
                **lay.traced(spans["host_block"], insert=self.host.insert),
                "disks": [d.name for d in self.disks],
            }
        for layer, why in self.why.items():
            shown[layer] = lay.untraced(why)
        rec.layers = lay.shown(shown)
        rec.layer_hists = lay.rows(spans)
        rec.warnings += self.left  # vmio run says so too: something of vmio's is left in a guest

    def _clocks(self, rec: RunRecord, shown: dict[str, object]) -> None:
        """The guests' clocks in the point's facts (``guest_clock``), and a note (``clock``) on the guest's
        layers whose clock steps by the kernel's tick (docs/layers.md): there a latency shorter than a step
        reads 0, so the percentiles are multiples of a step (the mean is not biased: a step falls anywhere
        within a request)."""
        steps = {t.vm: t.step_us() for t in self.tables or []}
        if not self.clocks and not steps:
            return
        facts = {}
        for vm in {**self.clocks, **steps}:
            source, trace_clock = self.clocks.get(vm, (None, None))
            facts[vm] = {"clocksource": source, "trace_clock": trace_clock, "trace_step_us": steps.get(vm)}
        rec.host["guest_clock"] = facts
        coarse = {vm: step for vm, step in steps.items() if step is not None}
        guest = shown.get("guest_block")
        if coarse and isinstance(guest, dict):
            each = ", ".join(
                f"{vm}'s in {step} µs steps" if step else f"{vm}'s read 0 µs for every request"
                for vm, step in coarse.items()
            )
            guest["clock"] = (
                f"the guest's trace clock is coarse ({each}: the guest kernel's sched_clock counts its tick, as "
                f"when it found no usable TSC): {COARSE_READS}"
            )
        jiffies = {vm: cs for vm, (cs, _) in self.clocks.items() if guesttrace.coarse(cs)}
        app = shown.get("app")
        if jiffies and isinstance(app, dict):
            each = ", ".join(
                f"{vm}'s is {cs}" + (f" ({steps[vm]} µs steps)" if steps.get(vm) else "")
                for vm, cs in jiffies.items()
            )
            app["clock"] = (
                f"fio's clock in the guest is coarse (its clocksource: {each}; it steps by the kernel's tick): "
                f"{COARSE_READS}"
            )

    def _qemu(
        self, window: tuple[float, float], spans: dict[str, lay.Spans], shown: dict[str, object]
    ) -> tuple[float, float]:
        """The qemu layer from the VMs' logs; the window moved to end where the VMs' requests ended, for the
        layers traced on the host."""
        spans["qemu"] = lay.Spans()
        wall = time.time() - time.monotonic()  # QEMU stamps its lines with the wall clock
        read = [  # a log cut short ends early: the window stays fio's
            qemutrace.read(log, start, (window[0] + wall, window[1] + wall), spans["qemu"], move=not self.cut)
            for log, start in self.qemu
        ]
        qemu = lay.traced(spans["qemu"])
        if self.cut is not None:
            qemu["cut"] = self.cut
        elif not all(whole for whole, _ in read):
            qemu["cut"] = (
                f"a VM's log passed {human_bytes(qemutrace.LIMIT)} in the point: the rest was not read"
            )
        shown["qemu"] = qemu
        shifts = [shift for _, shift in read if shift is not None]
        shift = min(shifts) if shifts else 0.0
        return window[0] - shift, window[1] - shift


def _size(path: Path) -> int:
    """A log's size now (0 before QEMU wrote to it)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def tracing(
    wanted: bool,
    rig: Rig,
    runner: Runner,
    sys_root: str | Path,
    limit_s: float,
    seconds: float | None = None,
    bs: int = 512,
) -> contextlib.AbstractContextManager[Tracing | None]:
    """``Tracing`` when the campaign asks for layers, else nothing (``seconds``: the point's ramp and
    runtime, which size the guests' time slots; ``bs``: fio's smallest block size)."""
    return Tracing(rig, runner, sys_root, limit_s, seconds, bs) if wanted else contextlib.nullcontext()
