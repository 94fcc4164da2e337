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
    state = "at the limit" if diagnosis.at_limit else "not at a limit"
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
    return [f"  ({step.node}) {step.question}", f"      {step.answer}", f"      [{numbers}]"]


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, separators=(",", ":"))


def explain() -> str:
    """The decision tree of ``diagnose``, with every threshold and its source."""
    busy, frac = t.DEVICE_BUSY_HIGH.value, t.DEVICE_CAPACITY_FRACTION.value
    queue, split = t.PARALLEL_QUEUE_SATURATED.value, t.WRITE_HEAVY_READ_PCT.value
    thread, host = t.QEMU_THREAD_BUSY.value, t.HOST_CPU_BUSY.value
    vq = ".".join(str(n) for n in t.IOTHREAD_VQ_MAPPING_QEMU)
    tree = f"""\
Tuning guideline (seed 000, Fig. 10) as vmio walks it
(a) VMs only: is a device dedicated to the VM (bus vfio or block, or dedicated_to_vm)?
      no, and one VM uses the device or a device is free -> dedicate-disk is possible
(b) Is a device free (in_use false)? yes -> spread-disks is possible
(c) VMs only: does one VM run several jobs (jobs_per_vm > 1)?
      yes -> (f) no iothread: QEMU's main loop >= {thread:g} % of a core, or not measured (seed 000's
                 conclusion) -> limit qemu-io-thread; actions add-iothread, iothread-vq-mapping on
                 QEMU >= {vq}, dedicate-disk when possible
              iothread(s): the busiest iothread >= {thread:g} %, or not measured -> limit qemu-io-thread;
                 action iothread-vq-mapping on QEMU >= {vq} when not yet used (never on QEMU 7.2)
              iothread-vq-mapping only for virtio-blk; with vfio (f) is not asked (QEMU is not in the path)
              below {thread:g} % -> the QEMU thread is not the limit; go on to (d)
      no  -> (d)
(d) Is the load write-heavy (read_pct < {split:g}; from measured IOPS when null)?
      yes -> (g) %sys > %usr?  then: device saturated -> limit device
                 else a CPU check: kernel side (%sys leads) -> host-cpu or none;
                 application side (%usr leads) -> guest-cpu when the vCPU is not measured (seed 000)
      no  -> (e) device saturated -> limit device; else a CPU check
CPU check: host usr+sys >= {host:g} % -> limit host-cpu (dedicate-disk when possible);
           a vCPU >= {thread:g} % of a core -> limit guest-cpu (scale-out-vms);
           else limit none (scale-out-vms for VMs: more load would raise IOPS)
Device saturated:
  capacity known -> read_iops/capacity_read + write_iops/capacity_write >= {frac:.2f}
                    (%util is ignored: near 100 % it does not mean saturated on NVMe or RAID)
  else rotational -> dev_busy_pct >= {busy:g}
  else            -> dev_busy_pct >= {busy:g} and dev_queue >= {queue:g} (busy alone when queue is null)
Limit device: spread-disks first when (b) found a free device.
at_limit is true whenever limit is not none.
Thresholds and their sources:
"""
    sources = [
        ("device busy", t.DEVICE_BUSY_HIGH),
        ("capacity fraction", t.DEVICE_CAPACITY_FRACTION),
        ("parallel queue", t.PARALLEL_QUEUE_SATURATED),
        ("write-heavy", t.WRITE_HEAVY_READ_PCT),
        ("QEMU thread busy", t.QEMU_THREAD_BUSY),
        ("host CPU busy", t.HOST_CPU_BUSY),
    ]
    rows = [f"  {name}: {th.value:g} {th.unit} -- {th.source}" for name, th in sources]
    rows.append(f"  iothread-vq-mapping: QEMU >= {vq} -- {t.IOTHREAD_VQ_MAPPING_SOURCE}")
    return tree + "\n".join(rows) + "\n"


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
    lines.append("libvirt XML:")
    lines += [f"  {line}" for line in advice.libvirt_xml.splitlines()]
    return "\n".join(lines) + "\n"
