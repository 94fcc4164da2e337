"""The tuning guideline (hitachi-nvme-2016, Fig. 10) as a walk over evidence: can a step raise I/O, and what limits it.

The walk is the figure's, branch by branch: (a) can a device be dedicated to the VM, (b) is a device free,
(c) does one VM run several jobs, then (f) is an iothread in use, or (d) is the load write-heavy, then
(g) %usr against %sys, or (e) is the device busy. (a) and (b) are steps that raise I/O whatever comes
after; the rest ends at one leaf, which is either a step (add an iothread, scale out) or the limit.

``at_limit`` is the paper's "I/O 性能限界": true only when the guideline has no step left that would raise
I/O. ``limit`` names what the measured figures show saturated (the I/O thread, the vCPUs, the main loop,
the device, the kernel's path), ``unknown`` when no figure shows it; ``lift`` is the step outside the
figure that would lift that limit. ``actions`` are the figure's steps, in its order. Where vmio's later
evidence changes a branch (``thresholds.DEVIATIONS``), the step says so in ``deviation`` with its source.
Every step cites its numbers as comparisons that hold (``cite.Cite``). A verdict on a TCG point says so
(``accel``, ``tcg_affects``); ``warnings`` say when host-wide figures are unreliable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict

from vmio.advise.cite import Cite, CiteJson, against, fact
from vmio.advise.device_saturation import device_saturation
from vmio.advise.evidence import Evidence, Measured, Vm
from vmio.advise.thresholds import (
    DEVIATIONS,
    IOTHREAD_VQ_MAPPING_QEMU,
    KERNEL_CPU_HIGH,
    OTHER_WORK_CORES,
    THREAD_SATURATED_PCT,
    WRITE_HEAVY_READ_PCT,
    Deviation,
)

Limit = Literal[
    "device", "host-cpu", "qemu-io-thread", "qemu-main-loop", "guest-cpu", "app-cpu", "unknown", "none"
]
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
# what TCG changes: the guest's CPU is emulated, so IOPS are bounded by the emulation and the CPU figures
# hold it (vCPU threads, host %usr)
TCG_AFFECTS = (
    "measured.read_iops",
    "measured.write_iops",
    "measured.qemu_vcpu_cpu_pct",
    "measured.qemu_main_loop_cpu_pct",
    "measured.qemu_iothread_cpu_pct",
    "measured.cpu_usr_pct",
    "measured.fio_usr_pct",
    "measured.fio_sys_pct",
)


def _deviation(node: str, start: str) -> Deviation:
    return next(d for d in DEVIATIONS if d.node == node and d.change.startswith(start))


class StepJson(TypedDict):
    node: str
    question: str
    answer: str
    evidence: list[CiteJson]
    deviation: dict[str, str] | None  # a Deviation's fields


class DiagnosisJson(TypedDict):
    at_limit: bool
    limit: Limit
    lift: str | None
    actions: list[Action]
    accel: str | None
    tcg_affects: list[str]
    warnings: list[str]
    steps: list[StepJson]
    deviations: list[dict[str, str]]


@dataclass(frozen=True)
class Step:
    """One question of the walk, its answer, the numbers it rests on, and where it departs from the seed."""

    node: str
    question: str
    answer: str
    evidence: tuple[Cite, ...] = field(default_factory=tuple)
    deviation: Deviation | None = None

    def to_dict(self) -> StepJson:
        return {
            "node": self.node,
            "question": self.question,
            "answer": self.answer,
            "evidence": [c.to_dict() for c in self.evidence],
            "deviation": None if self.deviation is None else self.deviation.__dict__.copy(),
        }


@dataclass(frozen=True)
class Diagnosis:
    """The verdict of the tuning guideline over one piece of evidence."""

    limit: Limit
    actions: tuple[Action, ...]
    steps: tuple[Step, ...]
    at_limit: bool
    lift: str | None = None
    accel: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def deviations(self) -> list[Deviation]:
        return [s.deviation for s in self.steps if s.deviation is not None]

    @property
    def tcg_affects(self) -> list[str]:
        return list(TCG_AFFECTS) if self.accel == "tcg" else []

    def to_dict(self) -> DiagnosisJson:
        """``diagnose --json``."""
        return {
            "at_limit": self.at_limit,
            "limit": self.limit,
            "lift": self.lift,
            "actions": list(self.actions),
            "accel": self.accel,
            "tcg_affects": self.tcg_affects,
            "warnings": list(self.warnings),
            "steps": [s.to_dict() for s in self.steps],
            "deviations": [d.__dict__.copy() for d in self.deviations],
        }


@dataclass(frozen=True)
class Leaf:
    """Where (c) to (g) ended: the bottleneck, the step that raises I/O (empty: at the limit), and the
    step outside the figure that would lift the bottleneck."""

    limit: Limit
    actions: tuple[Action, ...] = ()
    lift: str | None = None


def diagnose(evidence: Evidence) -> Diagnosis:
    """Walk Fig. 10 over ``evidence``."""
    walk = _Walk(evidence)
    first: list[Action] = []
    if walk.dedication():
        first.append("dedicate-disk")
    if walk.free_devices():
        first.append("spread-disks")
    leaf = walk.leaf()
    walk.layers()
    actions = first + [a for a in leaf.actions if a not in first]
    return Diagnosis(
        leaf.limit,
        tuple(actions) or ("none",),
        tuple(walk.steps),
        at_limit=not actions,
        lift=leaf.lift,
        accel=evidence.host.accel,
        warnings=tuple(walk.warnings()),
    )


LAYER_DOMINATES = (
    0.5  # a share of fio's mean latency: the part before or in the block layer that is most of it
)


def _saturated(pct: float | None) -> bool:
    return pct is not None and pct >= THREAD_SATURATED_PCT.value


class _Walk:
    def __init__(self, evidence: Evidence) -> None:
        self.ev = evidence
        self.m: Measured = evidence.measured
        self.steps: list[Step] = []
        self.tcg = evidence.host.accel == "tcg"

    def note(
        self, node: str, question: str, answer: str, cited: list[Cite], dev: Deviation | None = None
    ) -> None:
        self.steps.append(Step(node, question, answer, tuple(cited), dev))

    def free(self) -> list[str]:
        return [d.name for d in self.ev.devices if d.in_use is False and not d.dedicated_to_vm]

    # (a) and (b): steps that raise I/O whatever comes after
    def dedication(self) -> bool:
        vm = self.ev.vm
        question = "Is a device dedicated to the VM, and if not, can one be?"
        if vm is None:
            self.note("a", question, "not asked: bare-host evidence", [fact("vm", None)])
            return False
        dedicated = [d.name for d in self.ev.devices if d.dedicated_to_vm]
        free = self.free()
        count = vm.count or 1
        cited = [
            fact("vm.bus", vm.bus),
            fact("vm.count", vm.count),
            fact("devices.dedicated_to_vm", dedicated),
            fact("devices.free", free),
        ]
        if vm.bus in PASSTHROUGH_BUSES or dedicated:
            self.note("a", question, "yes: the VM owns its device already", cited)
            return False
        if free and len(free) >= count:
            vms = "the VM" if count == 1 else f"each of the {count} VMs"
            answer = (
                f"no, but it can be: {', '.join(free)} is free for {vms}; passed through, hitachi-nvme-2016 "
            )
            answer += "measured 1.0x bare (Fig. 5) -> dedicate-disk raises I/O"
            self.note("a", question, answer, [*cited, against("devices.free.count", len(free), count)])
            return True
        why = "no device is free" if not free else f"{len(free)} free device(s) for {count} VMs"
        self.note("a", question, f"no, and it cannot be: {why}", cited)
        return False

    def free_devices(self) -> list[str]:
        free = self.free()
        cited = [fact(f"devices[{d.name}].in_use", d.in_use) for d in self.ev.devices] or [
            fact("devices", [])
        ]
        gain = "hitachi-nvme-2016 Fig. 7: VM disks spread over 2 SSDs gave 689k/247k read/write IOPS, 1.57x/2.75x bare metal on 1 SSD"
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
        question = "Does one VM run several jobs (fio)?"
        if jobs is None:
            self.note(
                "c", question, "unknown: taken as one job per VM -> (d)", [fact("vm.jobs_per_vm", None)]
            )
            return self.by_mix()
        several = jobs > 1
        plural = "" if jobs == 1 else "s"
        cited = [against("vm.jobs_per_vm", jobs, 1, strict_above=True)]
        self.note("c", question, f"{'yes' if several else 'no'}: {jobs} job{plural} per VM", cited)
        if several:
            found = self.io_thread(vm)
            if found is not None:
                return found
        return self.by_mix()

    def thread_cites(self) -> list[Cite]:
        limit = THREAD_SATURATED_PCT.value
        return [
            against("measured.qemu_iothread_cpu_pct", self.m.qemu_iothread_cpu_pct, limit),
            against("measured.qemu_vcpu_cpu_pct", self.m.qemu_vcpu_cpu_pct, limit),
            against("measured.qemu_main_loop_cpu_pct", self.m.qemu_main_loop_cpu_pct, limit),
        ]

    def saturated_elsewhere(self) -> tuple[Limit, str | None, str]:
        """What the figures show saturated besides the I/O thread: (limit, lift, words)."""
        m = self.m
        if _saturated(m.qemu_vcpu_cpu_pct):
            lift = (
                "run the VM under KVM: under TCG the vCPUs emulate the guest's instructions"
                if self.tcg
                else "give the VM more vCPUs (each fio job needs CPU in the guest)"
            )
            return "guest-cpu", lift, f"the busiest vCPU thread is at {m.qemu_vcpu_cpu_pct:g} % of a core"
        if _saturated(m.qemu_main_loop_cpu_pct):
            lift = "move the VM's other disks and devices off the main loop (give them an iothread)"
            return "qemu-main-loop", lift, f"QEMU's main loop is at {m.qemu_main_loop_cpu_pct:g} % of a core"
        sat = device_saturation(self.ev.devices, m)
        if sat.saturated:
            return "device", "spread the VM disks over more devices (Fig. 7), or a faster device", sat.answer
        if sat.measure is not None:
            return (
                "unknown",
                f"measure the device's capacity: {sat.measure}",
                "no measured figure is saturated",
            )
        return "unknown", None, "no measured figure is saturated"

    def io_thread(self, vm: Vm) -> Leaf | None:
        question = "Does the VM use an iothread?"
        threads = vm.iothreads or 0
        qemu_version = self.ev.host.qemu_version
        cited = [fact("vm.iothreads", vm.iothreads), fact("vm.bus", vm.bus)]
        if vm.bus == "vfio":
            self.note(
                "f",
                question,
                "not asked: with vfio passthrough QEMU is not in the I/O path -> (d)",
                cited,
                _deviation("f", "with vfio"),
            )
            return None
        cited += [fact("host.qemu_version", qemu_version), fact("vm.vq_mapping", vm.vq_mapping)]
        cited += self.thread_cites()
        vq_ok = self.vq_mapping_possible(vm)
        if threads == 0:
            answer = f"no ({_load('main loop', self.m.qemu_main_loop_cpu_pct)}) -> add-iothread raises I/O "
            answer += "(hitachi-nvme-2016 Fig. 8: 16 jobs in one VM went from 0.21x to 0.78x bare)"
            fix: tuple[Action, ...] = ("add-iothread",)
            if vq_ok:
                fix += ("iothread-vq-mapping",)
                answer += f"; QEMU {qemu_version} can also spread the disk's queues over several (iothread-vq-mapping)"
            if _saturated(self.m.qemu_main_loop_cpu_pct):
                limit: Limit = "qemu-main-loop"
                answer += "; the main loop, which does the disk's I/O without an iothread, is saturated"
            else:
                limit, _, words = self.saturated_elsewhere()
                answer += f"; limit now: {limit} ({words})"
            self.note("f", question, answer, cited)
            return Leaf(limit, fix, "add-iothread")
        head = f"yes: {threads} iothread{'s' if threads > 1 else ''} ({_load('busiest iothread', self.m.qemu_iothread_cpu_pct)})"
        if _saturated(self.m.qemu_iothread_cpu_pct):
            if vq_ok and not vm.vq_mapping:
                answer = f"{head}, saturated; hitachi-nvme-2016 calls this the limit, but QEMU {qemu_version} spreads "
                answer += "one disk's queues over several iothreads -> iothread-vq-mapping raises I/O"
                self.note("f", question, answer, cited, _deviation("f", "with an iothread in use, QEMU"))
                return Leaf("qemu-io-thread", ("iothread-vq-mapping",), "iothread-vq-mapping")
            why = "queues already mapped over its iothreads" if vm.vq_mapping else self.why_no_vq_mapping(vm)
            answer = f"{head}, saturated -> at the limit (hitachi-nvme-2016 Fig. 10 (f)); {why}"
            self.note("f", question, answer, cited)
            lift = None if vm.vq_mapping else f"a QEMU with iothread-vq-mapping ({why})"
            return Leaf("qemu-io-thread", (), lift)
        limit, lift, words = self.saturated_elsewhere()
        state = "not saturated" if self.m.qemu_iothread_cpu_pct is not None else "its CPU not measured"
        answer = (
            f"{head}, {state} -> at the limit by the paper's Fig. 10 (f) (no step of the figure is left); "
        )
        answer += f"the limit is not the iothread: {limit} ({words})"
        if lift:
            answer += f"; lifted by: {lift}"
        self.note("f", question, answer, cited, _deviation("f", "with an iothread in use, the iothread"))
        return Leaf(limit, (), lift)

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
        self.note(
            "d",
            question,
            f"{'yes' if heavy else 'no'}: {read_pct:.0f} % reads",
            [*cited, against("read_pct", round(read_pct, 1), split)],
        )
        return self.cpu_split() if heavy else self.device_busy()

    def read_share(self) -> tuple[float | None, list[Cite]]:
        pct = self.ev.workload.read_pct
        if pct is not None:
            return pct, [fact("workload.read_pct", pct)]
        r, w = self.m.read_iops, self.m.write_iops
        cited = [
            fact("workload.read_pct", None),
            fact("measured.read_iops", r),
            fact("measured.write_iops", w),
        ]
        total = (r or 0) + (w or 0)
        return (100 * (r or 0) / total if total > 0 else None), cited

    def scale_out(self) -> tuple[Action, ...]:
        return ("scale-out-vms",) if self.ev.vm is not None else ("add-jobs",)

    def device_busy(self) -> Leaf:
        sat = device_saturation(self.ev.devices, self.m)
        deviation = _deviation("e", "'device busy'")
        more = "more VMs" if self.ev.vm is not None else "more jobs"
        if sat.saturated:
            self.note(
                "e",
                "Is the device busy?",
                sat.answer + " -> device neck: at the limit",
                list(sat.cited),
                deviation,
            )
            return Leaf("device", (), "spread the disks over more devices (Fig. 7), or a faster device")
        if sat.by == "unknown":
            tail = f" -> {more} raise I/O until the device's capacity, which is unknown"
            self.note("e", "Is the device busy?", sat.answer + tail, list(sat.cited), deviation)
            return Leaf("unknown", self.scale_out(), f"measure the device's capacity: {sat.measure}")
        self.note(
            "e", "Is the device busy?", sat.answer + f" -> {more} raise I/O", list(sat.cited), deviation
        )
        return Leaf("none", self.scale_out())

    def cpu_split(self) -> Leaf:
        usr, sys, whose, cited = self.cpu_figures()
        question = "Which is higher, %usr (applications) or %sys (kernel)?"
        hostwide = whose == "host-wide"
        note = f"; {TCG_NOTE}" if self.tcg and hostwide else ""
        dev = _deviation("g", "%usr and %sys are those")
        if self.tcg and hostwide:
            dev = _deviation("cpu", "under TCG")
        if usr is None or sys is None:
            self.note(
                "g",
                question,
                f"unknown: %usr or %sys not measured -> judging the device (e){note}",
                cited,
                dev,
            )
            return self.device_busy()
        capacity = device_saturation(self.ev.devices, self.m)
        if usr > sys:
            answer = f"{whose} %usr {usr:g} > %sys {sys:g}"
            cited.append(Cite(f"{cited[0].figure} vs {cited[1].figure}", usr, ">", sys))
            if capacity.saturated:
                answer += f", but the device is at its capacity ({capacity.answer}) -> at the limit{note}"
                self.note(
                    "g", question, answer, [*cited, *capacity.cited], _deviation("g", "a device already")
                )
                return Leaf("device", (), "spread the disks over more devices (Fig. 7), or a faster device")
            who = "more VMs raise I/O (scale-out-vms)" if self.ev.vm is not None else "more jobs raise I/O"
            self.note("g", question, f"{answer} -> {who}{note}", cited, dev)
            return Leaf("guest-cpu" if self.ev.vm is not None else "app-cpu", self.scale_out())
        cited.append(Cite(f"{cited[1].figure} vs {cited[0].figure}", sys, ">=", usr))
        high = KERNEL_CPU_HIGH.value
        if sys < high:
            cited.append(Cite(f"{cited[1].figure} vs kernel_cpu_high", sys, "<", high))
            answer = (
                f"{whose} %sys {sys:g} >= %usr {usr:g}, but %sys is not high (below {high:g} %) "
                f"-> judging the device (e){note}"
            )
            self.note("g", question, answer, cited, _deviation("g", "%sys is high"))
            return self.device_busy()
        cited.append(Cite(f"{cited[1].figure} vs kernel_cpu_high", sys, ">=", high))
        answer = f"{whose} %sys {sys:g} >= %usr {usr:g} and high (at least {high:g}) -> the kernel's I/O path: at the limit (hitachi-nvme-2016 Fig. 10 (g)){note}"
        limit: Limit = "host-cpu"
        if capacity.saturated:
            answer += f"; the device is at its capacity too ({capacity.answer})"
            cited += capacity.cited
            limit = "device"
        self.note("g", question, answer, cited, dev)
        return Leaf(limit, (), "a faster kernel path (fewer, larger requests; io_uring) or more cores")

    def cpu_figures(self) -> tuple[float | None, float | None, str, list[Cite]]:
        """%usr and %sys of the processes that did the I/O (fio's own) where stored, else host-wide."""
        m = self.m
        if m.fio_usr_pct is not None and m.fio_sys_pct is not None:
            cites = [fact("measured.fio_usr_pct", m.fio_usr_pct), fact("measured.fio_sys_pct", m.fio_sys_pct)]
            return m.fio_usr_pct, m.fio_sys_pct, "fio's own", cites
        cites = [fact("measured.cpu_usr_pct", m.cpu_usr_pct), fact("measured.cpu_sys_pct", m.cpu_sys_pct)]
        return m.cpu_usr_pct, m.cpu_sys_pct, "host-wide", cites

    def layers(self) -> None:
        """Where the latency went, for a point traced with layers (docs/layers.md): the share of fio's mean
        spent before the host's block layer (the virtualization path and the host kernel above the block
        layer) against the share in the block layer and the device."""
        vm = self.ev.vm is not None
        for ddir in ("read", "write"):
            app, host = self.layer_mean("app", ddir), self.layer_mean("host_block", ddir)
            if not app or host is None:
                continue
            before = max(0.0, 1 - host / app)
            whose = "the VM's" if vm else "fio's"
            above = "the virtualization path" if vm else "the host kernel above the block layer and fio"
            if before >= LAYER_DOMINATES:
                answer = f"{before:.0%} of {whose} {ddir} latency is spent before the host's block layer: {above}, not the device"
            else:
                answer = f"{1 - before:.0%} of {whose} {ddir} latency is spent in the host's block layer and the device: the device, not {above}"
            share = Cite(f"1 - measured.layer_host_block_{ddir}_us / measured.layer_app_{ddir}_us", round(before, 4),
                         ">=" if before >= LAYER_DOMINATES else "<", LAYER_DOMINATES)  # fmt: skip
            cited = [
                fact(f"measured.layer_app_{ddir}_us", app),
                fact(f"measured.layer_host_block_{ddir}_us", host),
            ]
            self.note("layers", f"Where does the {ddir} latency go? (layers traced)", answer, [*cited, share])
        for ddir in ("read", "write") if vm else ():
            app, guest, host = (self.layer_mean(name, ddir) for name in ("app", "guest_block", "host_block"))
            if app and guest is not None and host is not None:
                self.guest_layers(ddir, app, guest, host)

    def layer_mean(self, layer: str, ddir: str) -> float | None:
        """The measured mean of ``layer`` in direction ``ddir`` (``measured.layer_<layer>_<ddir>_us``)."""
        value: float | None = getattr(self.m, f"layer_{layer}_{ddir}_us")
        return value

    def guest_layers(self, ddir: str, app: float, guest: float, host: float) -> None:
        """A VM point whose guest's block layer was traced: fio's mean split three ways, in the guest above
        its block layer, between the guest's block layer and the host's (the virtualization path proper),
        and in the host's block layer and the device; the largest part named, each cited as its formula."""
        a, g, h = (f"measured.layer_{name}_{ddir}_us" for name in ("app", "guest_block", "host_block"))
        parts = [  # (where, short name, share of fio's mean, its formula)
            ("in the guest above its block layer (fio and the guest's kernel)", "in the guest",
             max(0.0, app - guest) / app, f"1 - {g} / {a}"),
            ("between the guest's block layer and the host's (the guest's driver, the virtio hand-off, QEMU, "
             "the host kernel's submission)", "on the virtualization path", max(0.0, guest - host) / app,
             f"({g} - {h}) / {a}"),
            ("in the host's block layer and the device", "in the host's block layer and the device",
             min(host, app) / app, f"{h} / {a}"),
        ]  # fmt: skip
        top = max(parts, key=lambda part: part[2])
        rest = ", ".join(f"{part[2]:.0%} {part[1]}" for part in parts if part is not top)
        answer = f"of the VM's {ddir} latency, {top[2]:.0%} is spent {top[0]}; {rest}"
        cited = [fact(a, app), fact(g, guest), fact(h, host)]
        cited += [Cite(part[3], round(part[2], 4), ">=" if part is top else "<=", round(top[2], 4))
                  for part in parts]  # fmt: skip
        self.note(
            "layers-guest", f"Which layer holds the VM's {ddir} latency? (the guest's traced)", answer, cited
        )

    def warnings(self) -> list[str]:
        """Host-wide figures made unreliable by other work on the host."""
        out: list[str] = []
        m, cpus = self.m, self.ev.host.cpus
        if self.tcg:
            out.append("TCG: the guest's CPU is emulated; IOPS and CPU figures are TCG's, not KVM's")
        if m.guest_clock_step_us is not None:
            step = (
                f"{m.guest_clock_step_us:g} µs steps"
                if m.guest_clock_step_us
                else "steps longer than every request"
            )
            out.append(
                f"the guest's clock is coarse ({step}: its kernel's tick, no usable TSC): the guest's latency "
                "percentiles are multiples of a step and read 0 below one; the means are not biased"
            )
        if cpus and m.cpu_usr_pct is not None and m.cpu_sys_pct is not None and m.own_cpu_pct is not None:
            busy = (m.cpu_usr_pct + m.cpu_sys_pct) / 100 * cpus
            other = busy - m.own_cpu_pct / 100
            if other > OTHER_WORK_CORES.value:
                out.append(
                    f"other work on the host: host-wide %usr+%sys is {busy:.2f} of {cpus} cores while the "
                    f"run's own processes used {m.own_cpu_pct / 100:.2f}; host-wide CPU figures are unreliable"
                )
        load = self.ev.host.load_avg_1m
        if cpus and load is not None and load > cpus:
            out.append(
                f"load average {load:g} at the point's start, above the host's {cpus} CPUs, before the run's "
                "own processes started: other work competed for the CPUs"
            )
        return out


def _load(who: str, pct: float | None) -> str:
    return f"QEMU's {who} {'not measured' if pct is None else f'at {pct:g} % of a core'}"
