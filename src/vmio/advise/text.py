"""Human text for the guidelines: a diagnosis, the decision tree behind it, and a configuration advice."""

from __future__ import annotations

import json
import shlex
from typing import Any

from vmio.advise import thresholds as t
from vmio.advise.cite import Cite
from vmio.advise.config_guideline import Advice
from vmio.advise.diagnose import Diagnosis, Step


def format_diagnosis(diagnosis: Diagnosis) -> str:
    """The verdict, then the path through Fig. 10 with the numbers each answer used."""
    state = (  # the paper's "I/O 性能限界": no step of the guideline left that would raise I/O
        "at the I/O limit: no step left raises I/O"
        if diagnosis.at_limit
        else "not at the I/O limit: the actions below raise I/O"
    )
    lines = [f"Limit: {diagnosis.limit} ({state})"]
    if diagnosis.lift:
        lines.append(f"Lifted by: {diagnosis.lift}")
    lines.append(f"Actions, most promising first: {', '.join(diagnosis.actions)}")
    if diagnosis.accel == "tcg":
        lines.append(
            "Accelerator: TCG (the guest's CPU is emulated); TCG changes " + ", ".join(diagnosis.tcg_affects)
        )
    lines += [f"Warning: {w}" for w in diagnosis.warnings if not w.startswith("TCG:")]
    lines.append("Path through Fig. 10 (hitachi-nvme-2016's tuning guideline):")
    for step in diagnosis.steps:
        lines += _step_lines(step)
    return "\n".join(lines) + "\n"


def _step_lines(step: Step) -> list[str]:
    numbers = ", ".join(_cite(c) for c in step.evidence)
    lines = [f"  ({step.node}) {step.question}", f"      {step.answer}", f"      [{numbers}]"]
    if step.deviation is not None:
        lines.append(
            f"      departs from hitachi-nvme-2016: {step.deviation.change} (source: {step.deviation.source})"
        )
    return lines


def _cite(c: Cite) -> str:
    if c.op == "is":
        return f"{c.figure}=null"
    if c.op == "==":
        return f"{c.figure}={_value(c.value)}"
    return f"{c.figure}={_value(c.value)} {c.op} {_value(c.threshold)}"


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, separators=(",", ":"))


def explain() -> str:
    """The decision tree of ``diagnose``, every deviation from the seed with its source, every threshold."""
    frac, thread = t.DEVICE_CAPACITY_FRACTION.value, t.THREAD_SATURATED_PCT.value
    split, other = t.WRITE_HEAVY_READ_PCT.value, t.OTHER_WORK_CORES.value
    vq = ".".join(str(n) for n in t.IOTHREAD_VQ_MAPPING_QEMU)
    tree = f"""\
Tuning guideline (hitachi-nvme-2016, Fig. 10) as vmio walks it
at_limit (the paper's "I/O performance limit") is true only when no step below would raise I/O; limit names
what the measured figures show saturated (unknown when none does), and "lifted by" the step outside the
figure that lifts it.
A thread is saturated from {thread:g} % of one core.
(a) VMs only: is a device dedicated to the VM (bus vfio or block)? no, and a free device for each VM
      -> dedicate-disk raises I/O (passed through: 1.0x bare, Fig. 5), whatever comes after
(b) Is a device free (in use: holds data, mounted, swap, backs a loop device, a VM disk, an LVM/dm/md
      holder, or holds a file backing one of those)? yes -> spread-disks raises I/O, whatever comes after
(c) VMs only: does one VM run several jobs (jobs_per_vm > 1; unknown -> as one)?
      yes -> (f) no iothread -> add-iothread raises I/O (limit: the main loop when saturated)
                 an iothread -> at the limit; limit qemu-io-thread only when the iothread is saturated,
                 else the saturated vCPUs (guest-cpu), main loop or device; a saturated iothread on
                 QEMU >= {vq} virtio-blk with queues not yet mapped -> iothread-vq-mapping raises I/O
      no  -> (d)
(d) Is the load write-heavy (read_pct < {split:g}; from measured IOPS when null)?
      yes -> (g) %usr > %sys -> scale-out-vms raises I/O (bare host: more jobs)
                 %sys >= %usr and %sys >= {t.KERNEL_CPU_HIGH.value:g} -> at the limit (limit host-cpu: the
                   kernel's I/O path); %sys >= %usr below that -> (e)
                 %usr/%sys of fio's own jobs where stored, else host-wide
      no  -> (e) device busy -> at the limit (limit device); not busy -> scale-out-vms raises I/O;
                 capacity unknown -> not at the limit (limit unknown), measure it with vmio calibrate
Device busy: read_iops/capacity_read + write_iops/capacity_write >= {frac:.2f}, the capacity from
  `vmio diagnose --capacity-read-iops N --capacity-write-iops N`, else the host target's
  capacity_read_iops/capacity_write_iops, else `vmio calibrate` of the device on this host; never from the
  campaign's own points. diagnose does not calibrate by itself.
Warnings: host-wide %usr+%sys more than {other:g} core beyond the run's own processes, or a load average
  above the host's CPUs when the point started: other work makes host-wide figures unreliable.
Where vmio departs from the figure, and why:
"""
    devs = [f"  ({d.node}) {d.change}\n      source: {d.source}" for d in t.DEVIATIONS]
    sources = [
        ("capacity fraction", t.DEVICE_CAPACITY_FRACTION),
        ("thread saturated", t.THREAD_SATURATED_PCT),
        ("other work", t.OTHER_WORK_CORES),
        ("write-heavy", t.WRITE_HEAVY_READ_PCT),
    ]
    rows = [f"  {name}: {th.value:g} {th.unit} -- {th.source}" for name, th in sources]
    rows.append(f"  iothread-vq-mapping: QEMU >= {vq} -- {t.IOTHREAD_VQ_MAPPING_SOURCE}")
    return tree + "\n".join(devs) + "\nThresholds and their sources:\n" + "\n".join(rows) + "\n"


def format_advice(advice: Advice) -> str:
    """The recommended configuration, the path through Fig. 9, the expected ratio, QEMU and libvirt."""
    c, r = advice.config, advice.ratio
    detail = [c.bus]
    if c.passthrough == "block":
        detail.append(f"/dev/{c.device} raw")
    if c.iothreads:
        detail.append(f"{c.iothreads} iothread{'s' if c.iothreads > 1 else ''}")
    if c.vq_mapping:
        detail.append("iothread-vq-mapping")
    if c.spread_over:
        detail.append(f"disks spread over {', '.join(c.spread_over)}")
    lines = [
        f"Recommended: {c.name} ({'; '.join(detail)})",
        "Path through Fig. 9 (hitachi-nvme-2016's configuration guideline):",
    ]
    lines += [f"  ({s.node}) {s.question} {s.answer}" for s in advice.path]
    if advice.departures:
        lines.append("Where this departs from Fig. 9 as the paper wrote it:")
        lines += [f"  ({d.node}) vmio: {d.vmio}; the paper: {d.paper} ({d.why})" for d in advice.departures]
    lines += [
        f"Expected VM/bare IOPS: read {r.read:.2f}x, write {r.write:.2f}x",
        f"  source: {r.source}; {r.basis}",
        f"  {advice.n}",
        f"VM disk: {advice.disk}",
        "QEMU arguments:",
    ]
    args = advice.qemu_args
    lines += [f"  {shlex.join(args[i : i + 2])}" for i in range(0, len(args), 2)]
    libvirt = next((s.answer for s in advice.path if s.node == "libvirt"), "")
    if libvirt.startswith("no: "):
        lines.append(f"libvirt XML (for this host's libvirt: {libvirt.removeprefix('no: ')}):")
    else:
        lines.append("libvirt XML:")
    lines += [f"  {line}" for line in advice.libvirt_xml.splitlines()]
    return "\n".join(lines) + "\n"
