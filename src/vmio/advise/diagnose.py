"""The tuning guideline (seed 000, Fig. 10) as a walk over evidence: is I/O at its limit, and what limits it.

The walk follows the figure's order: (a) is a device dedicated to the VM, (b) is a device free, (c) does one
VM run several jobs, then (f) its iothread, or (d) the read/write mix, (e) the device and (g) the CPU split.
Where the seed trusts a signal that later evidence shows to mislead (``%util`` on NVMe), the walk judges by
IOPS against measured capacity and by queue depth instead; where a measurement is missing it falls back to
the seed's own conclusion and says so. Every step records the numbers it used.

``at_limit`` means some resource is saturated, so more offered load will not raise IOPS in this
configuration; ``limit`` names it; ``actions`` are what would raise the ceiling, most promising first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from vmio.advise.device_saturation import device_saturation
from vmio.advise.evidence import Evidence, Measured, Vm
from vmio.advise.thresholds import (
    HOST_CPU_BUSY,
    IOTHREAD_VQ_MAPPING_QEMU,
    QEMU_THREAD_BUSY,
    WRITE_HEAVY_READ_PCT,
)

Limit = Literal["device", "host-cpu", "qemu-io-thread", "guest-cpu", "none"]
Action = Literal[
    "dedicate-disk", "spread-disks", "add-iothread", "iothread-vq-mapping", "scale-out-vms", "none"
]
PASSTHROUGH_BUSES = ("vfio", "block")


@dataclass(frozen=True)
class Step:
    """One question of the walk, its answer, and the numbers the answer rests on."""

    node: str
    question: str
    answer: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "question": self.question,
            "answer": self.answer,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class Diagnosis:
    """The verdict of the tuning guideline over one piece of evidence."""

    limit: Limit
    actions: tuple[Action, ...]
    steps: tuple[Step, ...]

    @property
    def at_limit(self) -> bool:
        return self.limit != "none"

    def to_dict(self) -> dict[str, Any]:
        return {
            "at_limit": self.at_limit,
            "limit": self.limit,
            "actions": list(self.actions),
            "steps": [s.to_dict() for s in self.steps],
        }


Verdict = tuple[Limit, list[Action]]


def diagnose(evidence: Evidence) -> Diagnosis:
    """Walk Fig. 10 over ``evidence``."""
    walk = _Walk(evidence)
    dedicable = walk.dedication()
    free = walk.free_devices()
    limit, first = walk.limit()
    actions: list[Action] = list(first)
    if limit == "device" and free:
        actions.insert(0, "spread-disks")
    if limit in ("qemu-io-thread", "host-cpu") and dedicable:
        actions.append("dedicate-disk")
    return Diagnosis(limit, tuple(actions) or ("none",), tuple(walk.steps))


class _Walk:
    def __init__(self, evidence: Evidence) -> None:
        self.ev = evidence
        self.m: Measured = evidence.measured
        self.steps: list[Step] = []

    def note(self, node: str, question: str, answer: str, evidence: dict[str, Any]) -> None:
        self.steps.append(Step(node, question, answer, evidence))

    def free(self) -> list[str]:
        return [d.name for d in self.ev.devices if d.in_use is False and not d.dedicated_to_vm]

    # (a) and (b): what could be changed about the devices
    def dedication(self) -> bool:
        vm = self.ev.vm
        question = "Is a device dedicated to the VM?"
        if vm is None:
            self.note("a", question, "not asked: bare-host evidence", {"vm": None})
            return False
        dedicated = [d.name for d in self.ev.devices if d.dedicated_to_vm]
        cited = {"vm.bus": vm.bus, "vm.count": vm.count, "devices.dedicated_to_vm": dedicated}
        if vm.bus in PASSTHROUGH_BUSES or dedicated:
            self.note("a", question, "yes: the VM owns its device already", cited)
            return False
        free = self.free()
        if vm.count == 1 or free:
            why = "one VM uses the device" if vm.count == 1 else f"{', '.join(free)} is free"
            self.note("a", question, f"no, but it can be: {why}; passed through it ran at 1.0x bare", cited)
            return True
        answer = f"no, and it cannot be: {vm.count} VMs share the device and none is free"
        self.note("a", question, answer, cited)
        return False

    def free_devices(self) -> list[str]:
        free = self.free()
        cited = {"devices.in_use": {d.name: d.in_use for d in self.ev.devices}}
        if free:
            answer = f"yes: {', '.join(free)}; spreading VM disks over two SSDs gave 1.57x read, 2.75x write"
        elif any(d.in_use is None for d in self.ev.devices):
            answer = "unknown: some devices' in_use is null; none is known to be free"
        else:
            answer = "no: every device is in use" if self.ev.devices else "no devices in the evidence"
        self.note("b", "Is a device free to take VM disks?", answer, cited)
        return free

    # (c) to (g): what limits I/O now
    def limit(self) -> Verdict:
        vm = self.ev.vm
        if vm is not None:
            jobs = vm.jobs_per_vm
            several = jobs is not None and jobs > 1
            plural = "" if jobs == 1 else "s"
            answer = "unknown" if jobs is None else f"{'yes' if several else 'no'}: {jobs} job{plural} per VM"
            cited = {"vm.jobs_per_vm": jobs, "vm.count": vm.count}
            self.note("c", "Does one VM run several jobs?", answer, cited)
            if several:
                found = self.io_thread(vm)
                if found is not None:
                    return found
        return self.by_mix()

    def io_thread(self, vm: Vm) -> Verdict | None:
        question = "Does the VM have an iothread, and is QEMU's I/O thread saturated?"
        threads = vm.iothreads or 0
        vq_ok = self.vq_mapping_possible(vm)
        cited: dict[str, Any] = {"vm.iothreads": vm.iothreads, "vm.bus": vm.bus}
        cited["host.qemu_version"] = self.ev.host.qemu_version
        if vm.bus == "vfio":
            self.note("f", question, "not asked: with vfio passthrough QEMU is not in the I/O path", cited)
            return None
        if threads == 0:
            key, load, who = "measured.qemu_main_loop_cpu_pct", self.m.qemu_main_loop_cpu_pct, "main loop"
            fix: list[Action] = ["add-iothread", "iothread-vq-mapping"] if vq_ok else ["add-iothread"]
        else:
            key, load, who = "measured.qemu_iothread_cpu_pct", self.m.qemu_iothread_cpu_pct, "iothread"
            cited["vm.vq_mapping"] = vm.vq_mapping
            fix = ["iothread-vq-mapping"] if vq_ok and not vm.vq_mapping else []
        cited[key] = load
        busy = QEMU_THREAD_BUSY.value
        head = "no iothread" if threads == 0 else f"{threads} iothread(s)"
        if load is not None and load < busy:
            self.note("f", question, f"{head}; QEMU's {who} at {load:g} % of a core is not the limit", cited)
            return None
        state = f"at {load:g} % of a core (>= {busy:g} %)" if load is not None else "not measured"
        answer = f"{head}; QEMU's {who} {state}: QEMU's I/O thread is the limit"
        if load is None:
            answer += " (seed 000: 16 jobs in one VM ran at 0.21x bare without an iothread, 0.78x with one)"
        if threads and not vq_ok:
            answer += "; " + self.why_no_vq_mapping(vm)
        self.note("f", question, answer, cited)
        return "qemu-io-thread", fix

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

    def by_mix(self) -> Verdict:
        read_pct, cited = self.read_share()
        split = WRITE_HEAVY_READ_PCT.value
        question = f"Is the load write-heavy (reads < {split:g} %)?"
        if read_pct is None:
            answer = "unknown; taking the read branch, which judges the device directly"
            self.note("d", question, answer, cited)
            return self.device_branch()
        heavy = read_pct < split
        self.note("d", question, f"{'yes' if heavy else 'no'}: {read_pct:.0f} % reads", cited)
        return self.cpu_split() if heavy else self.device_branch()

    def read_share(self) -> tuple[float | None, dict[str, Any]]:
        pct = self.ev.workload.read_pct
        if pct is not None:
            return pct, {"workload.read_pct": pct}
        r, w = self.m.read_iops, self.m.write_iops
        cited = {"workload.read_pct": None, "measured.read_iops": r, "measured.write_iops": w}
        total = (r or 0) + (w or 0)
        return (100 * (r or 0) / total if total > 0 else None), cited

    def device_branch(self) -> Verdict:
        if self.saturated("e"):
            return "device", []
        return self.cpu_limit(guest_by_default=False)

    def cpu_split(self) -> Verdict:
        usr, sys = self.m.cpu_usr_pct, self.m.cpu_sys_pct
        cited = {"measured.cpu_usr_pct": usr, "measured.cpu_sys_pct": sys}
        question = "Does the kernel (%sys) use more CPU than applications (%usr)?"
        if usr is None or sys is None:
            self.note("g", question, "unknown; judging the device directly", cited)
            return self.device_branch()
        kernel = sys > usr
        answer = f"{'yes' if kernel else 'no'}: %sys {sys:g} vs %usr {usr:g}"
        self.note("g", question, answer, cited)
        if self.saturated("g"):
            return "device", []
        return self.cpu_limit(guest_by_default=not kernel)

    def saturated(self, node: str) -> bool:
        sat, answer, cited = device_saturation(self.ev.devices, self.m)
        self.note(node, "Is the device saturated?", answer, cited)
        return sat

    def cpu_limit(self, *, guest_by_default: bool) -> Verdict:
        usr, sys, vcpu = self.m.cpu_usr_pct, self.m.cpu_sys_pct, self.m.qemu_vcpu_cpu_pct
        vm = self.ev.vm
        cited = {"measured.cpu_usr_pct": usr, "measured.cpu_sys_pct": sys, "measured.qemu_vcpu_cpu_pct": vcpu}
        question = "Is a CPU the limit?"
        host = (usr or 0) + (sys or 0)
        if host >= HOST_CPU_BUSY.value:
            answer = f"yes, the host's: usr+sys {host:g} % (>= {HOST_CPU_BUSY.value:g} %)"
            self.note("cpu", question, answer, cited)
            return "host-cpu", []
        busy = QEMU_THREAD_BUSY.value
        head = f"host usr+sys {host:g} % (< {HOST_CPU_BUSY.value:g} %)"
        if vm is not None and vcpu is not None and vcpu >= busy:
            self.note("cpu", question, f"yes, the guest's: vCPU at {vcpu:g} % of a core; {head}", cited)
            return "guest-cpu", ["scale-out-vms"]
        if vm is not None and vcpu is None and guest_by_default:
            answer = f"yes, the guest's (seed 000 Fig. 10(g): %usr leads, vCPU not measured); {head}"
            self.note("cpu", question, answer, cited)
            return "guest-cpu", ["scale-out-vms"]
        vcpu_text = "" if vm is None else f"; vCPU {'not measured' if vcpu is None else f'{vcpu:g} %'}"
        load = "; more load (more VMs) would raise IOPS" if vm is not None else ""
        self.note("cpu", question, f"no: {head}{vcpu_text}{load}", cited)
        return "none", ["scale-out-vms"] if vm is not None else []
