"""A point's latency per layer, traced around its fio run (``[campaign] layers = true``; docs/layers.md).

``Tracing`` starts what can be started before fio (the host's block layer: ``metrics.blocktrace``) and says
why a layer was not traced (no local disk, no root, no bpftrace, no tracefs, a failed attach): the point is
measured either way. ``finish`` fills the record's ``layers`` (``show --json``'s figures, with ``app`` from
fio's own results) and ``layer_hists`` (the histograms the store keeps) over the measured window.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from vmio.metrics import blocktrace
from vmio.metrics import layers as lay
from vmio.metrics.sampler import DiskProbe
from vmio.store.records import JobResult, RunRecord
from vmio.system.process import Runner
from vmio.targets import Rig

ATTACH_S = blocktrace.ATTACH_TIMEOUT_S


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

    def __init__(self, rig: Rig, runner: Runner, sys_root: str | Path, limit_s: float) -> None:
        self.disks = rig_disks(rig, sys_root)
        self.runner, self.sys_root, self.limit_s = runner, sys_root, limit_s
        self.host: blocktrace.HostBlockTrace | None = None
        self.why: dict[str, str] = {}

    def __enter__(self) -> Tracing:
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

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.host is not None:
            self.host.stop()

    def finish(self, rec: RunRecord, results: Sequence[JobResult], window: tuple[float, float]) -> None:
        """The record's ``layers`` and ``layer_hists`` over ``window`` (``time.monotonic`` seconds)."""
        shown: dict[str, object] = {"app": lay.app(results)}
        spans: dict[str, lay.Spans] = {}
        if self.host is not None:
            spans["host_block"] = self.host.window(*window)
            shown["host_block"] = {
                **lay.traced(spans["host_block"], insert=True),
                "disks": [d.name for d in self.disks],
            }
        for layer, why in self.why.items():
            shown[layer] = lay.untraced(why)
        rec.layers = lay.shown(shown)
        rec.layer_hists = lay.rows(spans)


def tracing(
    wanted: bool, rig: Rig, runner: Runner, sys_root: str | Path, limit_s: float
) -> contextlib.AbstractContextManager[Tracing | None]:
    """``Tracing`` when the campaign asks for layers, else nothing."""
    return Tracing(rig, runner, sys_root, limit_s) if wanted else contextlib.nullcontext()
