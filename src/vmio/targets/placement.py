"""Where a point's I/O goes: one function for the real run and for ``vmio run --dry-run``.

A dry run knows only the spec; a started target also knows its fio servers (VMs' forwarded ports) and the
size it prepared. Both derive the same ``Placement`` from the same rules here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from vmio.errors import InputError
from vmio.fio.jobfile import Placement
from vmio.qemu import Disk, VMConfig
from vmio.spec import HostTarget, QemuTarget, RbdTarget, RemoteTarget, Target, Workload
from vmio.system.paths import remote_normal
from vmio.targets.base import Endpoint


def endpoints(
    target: Target,
    workload: Workload,
    *,
    servers: Sequence[str | None] | None = None,
    size: int | None = None,
) -> list[Endpoint]:
    """Every fio process of ``target``'s points with ``workload``.

    ``servers``: the fio servers of a started VM target (default: one placeholder per VM); ``size``: the
    size a started host target prepared (default: the spec's).
    """
    if isinstance(target, QemuTarget):
        total = target.vms * target.jobs_per_vm
        device = guest_device(target)
        place = Placement(device, numjobs=target.jobs_per_vm, total_jobs=total)
        return [Endpoint(s, place) for s in (servers if servers is not None else [None] * target.vms)]
    if isinstance(target, RemoteTarget):
        total = workload.numjobs * len(target.hosts)
        return [
            Endpoint(
                host, Placement(remote_normal(path), target.size, numjobs=workload.numjobs, total_jobs=total)
            )
            for host, path in zip(target.hosts, target.paths, strict=True)
        ]
    if isinstance(target, RbdTarget):
        place = Placement(
            None, numjobs=workload.numjobs, total_jobs=workload.numjobs, engine_options=rbd_engine(target)
        )
        return [Endpoint(None, place)]
    assert isinstance(target, HostTarget)
    chosen = size if size is not None else target.size
    cpus = cpu_list(target.cpus) if target.cpus is not None else None
    return [
        Endpoint(
            None,
            Placement(
                target.path, chosen, numjobs=workload.numjobs, total_jobs=workload.numjobs, cpus_allowed=cpus
            ),
        )
    ]


def cpu_list(count: int) -> str:
    """fio's ``cpus_allowed`` for the first ``count`` CPUs vmio may run on (its own affinity)."""
    mine = sorted(os.sched_getaffinity(0))
    if count > len(mine):
        raise InputError(
            f"target cpus = {count!r}: this host lets vmio run on {len(mine)} CPU(s); use at most {len(mine)}"
        )
    return ",".join(str(c) for c in mine[:count])


def guest_device(target: QemuTarget) -> str:
    """The block device the guest sees for its disk on ``target``'s bus (``/dev/vda``, ``/dev/sda``, ...)."""
    return VMConfig(disks=(Disk(Path("-")),), bus=target.bus).guest_devices()[0]


def rbd_engine(target: RbdTarget) -> dict[str, str]:
    """fio's rbd engine options for ``target``'s image (the cluster comes from ``CEPH_CONF``)."""
    return {"ioengine": "rbd", "clientname": target.clientname, "pool": target.pool, "rbdname": target.image}


def where(target: Target) -> str:
    """Where ``target``'s fio runs, in words, for the dry run."""
    if isinstance(target, QemuTarget):
        return f"in each of {target.vms} VM(s), fio --server"
    if isinstance(target, RemoteTarget):
        more = len(target.hosts) - 1
        return f"on {target.hosts[0]}" + (f" (and {more} more)" if more else "")
    if isinstance(target, RbdTarget):
        return "here, fio's rbd engine"
    return "here"
