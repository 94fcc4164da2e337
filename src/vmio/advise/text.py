"""Human text for the guidelines: a diagnosis, the decision tree behind it, and a configuration advice."""

from __future__ import annotations

import json
import shlex
from typing import Any

from vmio.advise import thresholds as t
from vmio.advise.config_guideline import Advice
from vmio.advise.diagnose import Diagnosis, Step


def format_diagnosis(diagnosis: Diagnosis) -> str:
    """The verdict, then the path through Fig. 10 with the numbers each answer used."""
    state = (  # the paper's "I/O 性能限界": no step of the guideline left that would raise I/O
        "at the I/O limit: no step left raises I/O"
        if diagnosis.at_limit
        else "not at the I/O limit: the actions below raise I/O"
    )
    lines = [
        f"Limit: {diagnosis.limit} ({state})",
        f"Actions, most promising first: {', '.join(diagnosis.actions)}",
        "Path through Fig. 10 (seed 000's tuning guideline):",
    ]
    for step in diagnosis.steps:
        lines += _step_lines(step)
    return "\n".join(lines) + "\n"


def _step_lines(step: Step) -> list[str]:
    numbers = ", ".join(f"{key}={_value(value)}" for key, value in step.evidence.items())
    lines = [f"  ({step.node}) {step.question}", f"      {step.answer}", f"      [{numbers}]"]
    if step.deviation is not None:
        lines.append(
            f"      departs from seed 000: {step.deviation.change} (source: {step.deviation.source})"
        )
    return lines


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, separators=(",", ":"))


def explain() -> str:
    """The decision tree of ``diagnose``, every deviation from the seed with its source, every threshold."""
    busy, frac = t.DEVICE_BUSY_HIGH.value, t.DEVICE_CAPACITY_FRACTION.value
    queue, split = t.PARALLEL_QUEUE_SATURATED.value, t.WRITE_HEAVY_READ_PCT.value
    vq = ".".join(str(n) for n in t.IOTHREAD_VQ_MAPPING_QEMU)
    tree = f"""\
Tuning guideline (seed 000, Fig. 10) as vmio walks it
at_limit ("I/O 性能限界") is true only when no step below would raise I/O; limit names the bottleneck.
(a) VMs only: is a device dedicated to the VM (bus vfio or block)? no, and a free device for each VM
      -> dedicate-disk raises I/O (passed through: 1.0x bare, Fig. 5), whatever comes after
(b) Is a device free (in use: holds data, mounted, swap, backs a loop device, a VM disk, an LVM/dm/md
      holder, or holds a file backing one of those)? yes -> spread-disks raises I/O, whatever comes after
(c) VMs only: does one VM run several jobs (jobs_per_vm > 1; unknown -> as one)?
      yes -> (f) no iothread -> add-iothread raises I/O (limit qemu-io-thread)
                 an iothread -> at the limit (limit qemu-io-thread), unless QEMU >= {vq} on virtio-blk
                 and queues not yet mapped -> iothread-vq-mapping raises I/O
      no  -> (d)
(d) Is the load write-heavy (read_pct < {split:g}; from measured IOPS when null)?
      yes -> (g) %usr > %sys -> scale-out-vms raises I/O (bare host: more jobs)
                 %sys >= %usr -> at the limit (limit host-cpu: the kernel's I/O path)
      no  -> (e) device busy -> at the limit (limit device); not busy -> scale-out-vms raises I/O
Device busy:
  capacity known (vmio calibrate, else the campaign's best bare point)
                  -> read_iops/capacity_read + write_iops/capacity_write >= {frac:.2f}
  else rotational -> dev_busy_pct >= {busy:g}
  else            -> dev_busy_pct >= {busy:g} and dev_queue >= {queue:g} (busy alone when queue is null)
Where vmio departs from the figure, and why:
"""
    devs = [f"  ({d.node}) {d.change}\n      source: {d.source}" for d in t.DEVIATIONS]
    sources = [
        ("device busy", t.DEVICE_BUSY_HIGH),
        ("capacity fraction", t.DEVICE_CAPACITY_FRACTION),
        ("parallel queue", t.PARALLEL_QUEUE_SATURATED),
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
        "Path through Fig. 9 (seed 000's configuration guideline):",
    ]
    lines += [f"  ({s.node}) {s.question} {s.answer}" for s in advice.path]
    lines += [
        f"Expected VM/bare IOPS: read {r.read:.2f}x, write {r.write:.2f}x",
        f"  source: {r.source}; {r.basis}",
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
