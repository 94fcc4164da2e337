"""The tuning guideline's actions applied to a VM target's spec: what changes, or why it cannot.

``apply(target, action, ...)`` returns the changed ``QemuTarget`` and a line saying what changed, or
raises ``CannotApply`` with the reason and what the operator could do. Nothing here runs anything; the
QEMU's capabilities are asked through the ``caps`` callable only when an action depends on them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from vmio.advise.thresholds import VQ_MAPPING_MAX_IOTHREADS
from vmio.qemu import QemuCaps
from vmio.spec import QemuTarget
from vmio.system.safety import is_block_device

MAX_VMS = 256  # the spec's limit on vms


class CannotApply(Exception):
    """An action vmio cannot apply to the spec by itself; the message says why and what would do it."""


@dataclass(frozen=True)
class Applied:
    target: QemuTarget
    change: str


def apply(
    target: QemuTarget,
    action: str,
    *,
    caps: Callable[[], QemuCaps],
    backing: str | None = None,
    cpus: int | None = None,
) -> Applied:
    """``target`` with ``action`` applied. ``backing`` is the path spread-disks or dedicate-disk needs."""
    if action == "add-iothread":
        return _add_iothread(target, caps)
    if action == "iothread-vq-mapping":
        return _vq_mapping(target, caps(), cpus or os.cpu_count() or 1)
    if action == "scale-out-vms":
        return _scale_out(target)
    if action == "spread-disks":
        return _spread(target, backing)
    if action == "dedicate-disk":
        return _dedicate(target, backing)
    raise CannotApply(f"{action!r} is not an action vmio tune knows how to apply")


def _add_iothread(target: QemuTarget, caps: Callable[[], QemuCaps]) -> Applied:
    if target.iothreads:
        raise CannotApply(f"target {target.name!r} already has {target.iothreads} iothread(s)")
    if target.bus == "vfio":
        raise CannotApply(f"target {target.name!r} passes its device through (vfio): QEMU does no I/O")
    if target.bus == "nvme":
        found = caps()
        if not found.has_prop("nvme", "iothread"):
            raise CannotApply(
                f"QEMU {found.version_string}'s emulated nvme has no iothread property; "
                "change bus to 'virtio-blk' in the spec to use an iothread"
            )
    return Applied(replace(target, iothreads=1), "iothreads 0 -> 1")


def _vq_mapping(target: QemuTarget, caps: QemuCaps, cpus: int) -> Applied:
    if target.bus not in ("virtio-blk", "block"):
        raise CannotApply(
            f"iothread-vq-mapping is a virtio-blk property; target {target.name!r} uses {target.bus}"
        )
    if not caps.iothread_vq_mapping:
        raise CannotApply(
            f"QEMU {caps.version_string} has no iothread-vq-mapping (it needs QEMU 9.0 or later); "
            "one iothread per disk is what this QEMU can do"
        )
    threads = max(2, min(VQ_MAPPING_MAX_IOTHREADS, cpus // 2))
    if target.iothreads >= threads:
        raise CannotApply(
            f"target {target.name!r} already has {target.iothreads} iothreads (vmio uses {threads})"
        )
    queues = max(target.queues, threads)
    change = (
        f"iothreads {target.iothreads} -> {threads}, queues {target.queues} -> {queues} (iothread-vq-mapping)"
    )
    return Applied(replace(target, iothreads=threads, queues=queues), change)


def _scale_out(target: QemuTarget) -> Applied:
    vms, jobs = target.vms * 2, max(1, target.jobs_per_vm // 2)
    if vms > MAX_VMS:
        raise CannotApply(f"target {target.name!r} has {target.vms} VMs; doubling them exceeds {MAX_VMS}")
    change = f"vms {target.vms} -> {vms}, jobs_per_vm {target.jobs_per_vm} -> {jobs}"
    if jobs * 2 != target.jobs_per_vm:
        change += " (the total number of jobs grows: one job per VM is the least)"
    return Applied(replace(target, vms=vms, jobs_per_vm=jobs), change)


def _spread(target: QemuTarget, backing: str | None) -> Applied:
    if backing is None:
        raise CannotApply(
            "spread-disks needs a second backing path on another device; vmio cannot pick one by itself: "
            "give it with --backing PATH"
        )
    if backing in target.backing:
        raise CannotApply(f"--backing {backing!r} is already a backing path of target {target.name!r}")
    if target.vms < 2:
        raise CannotApply(
            f"target {target.name!r} has one VM with one disk; spreading needs VMs to spread "
            "(a VM target gives each VM one disk): raise vms first"
        )
    paths = (*target.backing, backing)
    return Applied(replace(target, backing=paths), f"backing {list(target.backing)} -> {list(paths)}")


def _dedicate(target: QemuTarget, backing: str | None) -> Applied:
    if backing is None:
        raise CannotApply(
            "dedicate-disk needs a free block device for the VM; vmio does not pick one by itself "
            "(it would overwrite it): give it with --backing /dev/NAME"
        )
    if not is_block_device(backing):
        raise CannotApply(
            f"dedicate-disk gives the VM a whole device; --backing {backing!r} is not a block device"
        )
    if target.vms != 1:
        raise CannotApply(
            f"target {target.name!r} has {target.vms} VMs; one device can be dedicated to one VM"
        )
    name = Path(backing).name
    change = (
        f"bus {target.bus} -> block, backing {list(target.backing)} -> [{backing!r}] (/dev/{name} given raw)"
    )
    return Applied(replace(target, bus="block", backing=(backing,)), change)
