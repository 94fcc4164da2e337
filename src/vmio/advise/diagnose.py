"""The tuning guideline (seed 000, Fig. 10) as a walk over evidence: can a step raise I/O, and what limits it.

The walk is the figure's, branch by branch: (a) can a device be dedicated to the VM, (b) is a device free,
(c) does one VM run several jobs, then (f) is an iothread in use, or (d) is the load write-heavy, then
(g) %usr against %sys, or (e) is the device busy. (a) and (b) are steps that raise I/O whatever comes
after; the rest ends at one leaf, which is either a step (add an iothread, scale out) or the limit.

``at_limit`` is the paper's "I/O 性能限界": true only when the guideline has no step left that would raise
I/O. ``limit`` names the bottleneck the walk found (also when a step would lift it); ``actions`` are the
steps, in the figure's order. Where vmio's later evidence changes a branch (``thresholds.DEVIATIONS``),
the step says so in ``deviation`` with its source. Every step records the numbers it used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from vmio.advise.device_saturation import Saturation, device_saturation
from vmio.advise.evidence import Evidence, Measured, Vm
from vmio.advise.thresholds import DEVIATIONS, IOTHREAD_VQ_MAPPING_QEMU, WRITE_HEAVY_READ_PCT, Deviation

Limit = Literal["device", "host-cpu", "qemu-io-thread", "guest-cpu", "app-cpu", "none"]
Action = Literal[
    "dedicate-disk",
    "spread-disks",
    "add-iothread",
    "iothread-vq-mapping",
    "scale-out-vms",
    "add-jobs",
    "none",
]
PASSTHROUGH_BUSES = ("vfio", "block")
TCG_NOTE = "under TCG the guest's instruction emulation is counted in the host's %usr"


def _deviation(node: str, start: str) -> Deviation:
    return next(d for d in DEVIATIONS if d.node == node and d.change.startswith(start))


@dataclass(frozen=True)
class Step:
    """One question of the walk, its answer, the numbers it rests on, and where it departs from the seed."""

    node: str
    question: str
    answer: str
    evidence: dict[str, Any] = field(default_factory=dict)
    deviation: Deviation | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "question": self.question,
            "answer": self.answer,
            "evidence": self.evidence,
            "deviation": None if self.deviation is None else self.deviation.__dict__.copy(),
        }


@dataclass(frozen=True)
class Diagnosis:
    """The verdict of the tuning guideline over one piece of evidence."""

    limit: Limit
    actions: tuple[Action, ...]
    steps: tuple[Step, ...]
    at_limit: bool

    @property
    def deviations(self) -> list[Deviation]:
        return [s.deviation for s in self.steps if s.deviation is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "at_limit": self.at_limit,
            "limit": self.limit,
            "actions": list(self.actions),
            "steps": [s.to_dict() for s in self.steps],
            "deviations": [d.__dict__.copy() for d in self.deviations],
        }


@dataclass(frozen=True)
class Leaf:
    """Where (c) to (g) ended: the bottleneck, and the step that raises I/O (empty: at the limit)."""

    limit: Limit
    actions: tuple[Action, ...] = ()


def diagnose(evidence: Evidence) -> Diagnosis:
    """Walk Fig. 10 over ``evidence``."""
    walk = _Walk(evidence)
    first: list[Action] = []
    if walk.dedication():
        first.append("dedicate-disk")
    if walk.free_devices():
        first.append("spread-disks")
    leaf = walk.leaf()
    actions = first + [a for a in leaf.actions if a not in first]
    return Diagnosis(leaf.limit, tuple(actions) or ("none",), tuple(walk.steps), at_limit=not actions)


class _Walk:
    def __init__(self, evidence: Evidence) -> None:
        self.ev = evidence
        self.m: Measured = evidence.measured
        self.steps: list[Step] = []

    def note(
        self, node: str, question: str, answer: str, cited: dict[str, Any], dev: Deviation | None = None
    ) -> None:
        self.steps.append(Step(node, question, answer, cited, dev))

    def free(self) -> list[str]:
        return [d.name for d in self.ev.devices if d.in_use is False and not d.dedicated_to_vm]

    # (a) and (b): steps that raise I/O whatever comes after
    def dedication(self) -> bool:
        vm = self.ev.vm
        question = "Is a device dedicated to the VM, and if not, can one be?"
        if vm is None:
            self.note("a", question, "not asked: bare-host evidence", {"vm": None})
            return False
        dedicated = [d.name for d in self.ev.devices if d.dedicated_to_vm]
        free = self.free()
        count = vm.count or 1
        cited = {"vm.bus": vm.bus, "vm.count": vm.count, "devices.dedicated_to_vm": dedicated, "free": free}
        if vm.bus in PASSTHROUGH_BUSES or dedicated:
            self.note("a", question, "yes: the VM owns its device already", cited)
            return False
        if free and len(free) >= count:
            vms = "the VM" if count == 1 else f"each of the {count} VMs"
            answer = f"no, but it can be: {', '.join(free)} is free for {vms}; passed through, seed 000 "
            answer += "measured 1.0x bare (Fig. 5) -> dedicate-disk raises I/O"
            self.note("a", question, answer, cited)
            return True
        why = "no device is free" if not free else f"{len(free)} free device(s) for {count} VMs"
        self.note("a", question, f"no, and it cannot be: {why}", cited)
        return False

    def free_devices(self) -> list[str]:
        free = self.free()
        cited = {"devices.in_use": {d.name: d.in_use for d in self.ev.devices}}
        gain = "seed 000 Fig. 7: VM disks spread over 2 SSDs gave 689k/247k read/write IOPS, 1.57x/2.75x bare metal on 1 SSD"
        if free:
            answer = f"yes: {', '.join(free)} -> spread-disks raises I/O ({gain})"
        elif any(d.in_use is None for d in self.ev.devices):
            answer = "unknown: some devices' in_use is null; none is known to be free"
        else:
            answer = "no: every device is in use" if self.ev.devices else "no devices in the evidence"
        self.note("b", "Is a device free to take VM disks?", answer, cited)
        return free

    # (c) to (g): one leaf
    def leaf(self) -> Leaf:
        vm = self.ev.vm
        if vm is None:
            return self.by_mix()
        jobs = vm.jobs_per_vm
        cited = {"vm.jobs_per_vm": jobs, "vm.count": vm.count}
        question = "Does one VM run several jobs (fio)?"
        if jobs is None:
            self.note("c", question, "unknown: taken as one job per VM -> (d)", cited)
            return self.by_mix()
        several = jobs > 1
        plural = "" if jobs == 1 else "s"
        self.note("c", question, f"{'yes' if several else 'no'}: {jobs} job{plural} per VM", cited)
        if several:
            found = self.io_thread(vm)
            if found is not None:
                return found
        return self.by_mix()

    def io_thread(self, vm: Vm) -> Leaf | None:
        question = "Does the VM use an iothread?"
        threads = vm.iothreads or 0
        qemu_version = self.ev.host.qemu_version
        cited: dict[str, Any] = {
            "vm.iothreads": vm.iothreads,
            "vm.bus": vm.bus,
            "host.qemu_version": qemu_version,
        }
        cited["vm.vq_mapping"] = vm.vq_mapping
        cited["measured.qemu_main_loop_cpu_pct"] = self.m.qemu_main_loop_cpu_pct
        cited["measured.qemu_iothread_cpu_pct"] = self.m.qemu_iothread_cpu_pct
        if vm.bus == "vfio":
            self.note("f", question, "not asked: with vfio passthrough QEMU is not in the I/O path -> (d)", cited,
                      _deviation("f", "with vfio"))  # fmt: skip
            return None
        vq_ok = self.vq_mapping_possible(vm)
        if threads == 0:
            load = _load("main loop", self.m.qemu_main_loop_cpu_pct)
            answer = f"no ({load}) -> add-iothread raises I/O (seed 000 Fig. 8: 16 jobs in one VM went from "
            answer += "0.21x to 0.78x bare)"
            fix: tuple[Action, ...] = ("add-iothread",)
            if vq_ok:
                fix += ("iothread-vq-mapping",)
                answer += f"; QEMU {qemu_version} can also spread the disk's queues over several (iothread-vq-mapping)"
            self.note("f", question, answer, cited)
            return Leaf("qemu-io-thread", fix)
        head = f"yes: {threads} iothread{'s' if threads > 1 else ''} ({_load('busiest iothread', self.m.qemu_iothread_cpu_pct)})"
        if vq_ok and not vm.vq_mapping:
            answer = (
                f"{head}; seed 000 calls this the limit, but QEMU {qemu_version} spreads one disk's queues "
            )
            answer += "over several iothreads -> iothread-vq-mapping raises I/O"
            self.note("f", question, answer, cited, _deviation("f", "with an iothread"))
            return Leaf("qemu-io-thread", ("iothread-vq-mapping",))
        why = "queues already mapped over its iothreads" if vm.vq_mapping else self.why_no_vq_mapping(vm)
        self.note("f", question, f"{head} -> at the limit (seed 000 Fig. 10 (f)); {why}", cited)
        return Leaf("qemu-io-thread")

    def vq_mapping_possible(self, vm: Vm) -> bool:
        """iothread-vq-mapping: virtio-blk (or a raw device on it) on QEMU >= 9.0."""
        qemu = self.ev.host.qemu()
        on_blk = vm.bus in (None, "virtio-blk", "block")
        return on_blk and qemu is not None and qemu[:2] >= IOTHREAD_VQ_MAPPING_QEMU

    def why_no_vq_mapping(self, vm: Vm) -> str:
        if vm.bus not in (None, "virtio-blk", "block"):
            return f"iothread-vq-mapping is a virtio-blk property, not {vm.bus}'s"
        version = self.ev.host.qemu_version or "of unknown version"
        return f"QEMU {version} cannot spread one disk's queues (iothread-vq-mapping needs 9.0)"

    def by_mix(self) -> Leaf:
        read_pct, cited = self.read_share()
        split = WRITE_HEAVY_READ_PCT.value
        question = f"Is the load write-heavy (reads < {split:g} %)?"
        if read_pct is None:
            self.note("d", question, "unknown -> (e), which judges the device directly", cited)
            return self.device_busy()
        heavy = read_pct < split
        self.note("d", question, f"{'yes' if heavy else 'no'}: {read_pct:.0f} % reads", cited)
        return self.cpu_split() if heavy else self.device_busy()

    def read_share(self) -> tuple[float | None, dict[str, Any]]:
        pct = self.ev.workload.read_pct
        if pct is not None:
            return pct, {"workload.read_pct": pct}
        r, w = self.m.read_iops, self.m.write_iops
        cited = {"workload.read_pct": None, "measured.read_iops": r, "measured.write_iops": w}
        total = (r or 0) + (w or 0)
        return (100 * (r or 0) / total if total > 0 else None), cited

    def scale_out(self) -> tuple[Action, ...]:
        return ("scale-out-vms",) if self.ev.vm is not None else ("add-jobs",)

    def device_busy(self) -> Leaf:
        sat = device_saturation(self.ev.devices, self.m)
        deviation = (
            _deviation("e", "'device busy'") if sat.by == "capacity" or not self._rotational() else None
        )
        more = "more VMs" if self.ev.vm is not None else "more jobs"
        tail = " -> device neck: at the limit" if sat.saturated else f" -> {more} raise I/O"
        self.note("e", "Is the device busy?", sat.answer + tail, sat.cited, deviation)
        if sat.saturated:
            return Leaf("device")
        return Leaf("none", self.scale_out())

    def _rotational(self) -> bool:
        return bool(self.ev.devices) and all(d.rotational for d in self.ev.devices)

    def cpu_split(self) -> Leaf:
        usr, sys = self.m.cpu_usr_pct, self.m.cpu_sys_pct
        cited: dict[str, Any] = {"measured.cpu_usr_pct": usr, "measured.cpu_sys_pct": sys,
                                 "measured.qemu_vcpu_cpu_pct": self.m.qemu_vcpu_cpu_pct, "host.accel": self.ev.host.accel}  # fmt: skip
        question = "Which is higher, %usr (applications) or %sys (kernel)?"
        tcg = self.ev.host.accel == "tcg"
        note = f"; {TCG_NOTE}" if tcg else ""
        tcg_dev = _deviation("cpu", "under TCG") if tcg else None
        if usr is None or sys is None:
            self.note("g", question, f"unknown: %usr or %sys not measured -> judging the device (e){note}", cited,
                      tcg_dev)  # fmt: skip
            return self.device_busy()
        capacity = self.at_capacity()
        if usr > sys:
            answer = f"%usr {usr:g} > %sys {sys:g}"
            if capacity is not None and capacity.saturated:
                answer += f", but the device is at its capacity ({capacity.answer}) -> at the limit{note}"
                self.note(
                    "g", question, answer, {**cited, **capacity.cited}, _deviation("g", "a device already")
                )
                return Leaf("device")
            who = "more VMs raise I/O (scale-out-vms)" if self.ev.vm is not None else "more jobs raise I/O"
            self.note("g", question, f"{answer} -> {who}{note}", cited, tcg_dev)
            return Leaf("guest-cpu" if self.ev.vm is not None else "app-cpu", self.scale_out())
        answer = f"%sys {sys:g} >= %usr {usr:g} -> the kernel's I/O path: at the limit (seed 000 Fig. 10 (g)){note}"
        limit: Limit = "host-cpu"
        if capacity is not None and capacity.saturated:
            answer += f"; the device is at its capacity too ({capacity.answer})"
            limit = "device"
        self.note("g", question, answer, cited, tcg_dev)
        return Leaf(limit)

    def at_capacity(self) -> Saturation | None:
        """The device against its known capacity; None when no capacity is known (%util is not asked in (g))."""
        sat = device_saturation(self.ev.devices, self.m)
        return sat if sat.by == "capacity" else None


def _load(who: str, pct: float | None) -> str:
    return f"QEMU's {who} {'not measured' if pct is None else f'at {pct:g} % of a core'}"
