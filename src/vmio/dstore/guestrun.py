"""Seed 002's profile from inside a guest, as the seed measured it (IOmeter in a VM on the datastore): a
vmio VM whose only disk is the RBD image through QEMU's rbd driver, running fio (libaio, direct) on
``/dev/vda`` with the same mix, depth, block sizes and durations as the host's librbd profile.

The VM is the campaign's QEMU target (``backing = ["rbd:POOL/IMAGE"]`` with ``conf``), booted once for
all block sizes. Without KVM the guest runs under TCG: its figures then include the emulation's cost,
and the run records the accelerator so the reader can tell.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypedDict

from vmio.dstore.cluster import ClusterRef
from vmio.dstore.rbdfio import RbdJob
from vmio.fio import jobfile
from vmio.fio import run as fiorun
from vmio.fio.totals import Totals, totals
from vmio.spec import QemuTarget, Workload
from vmio.system.process import Runner
from vmio.targets import Env, open_target

FIO_GRACE_S = 90.0


def guest_target(ref: ClusterRef, *, memory: int = 512 << 20, accel: str = "auto") -> QemuTarget:
    """One VM whose disk is ``ref``'s RBD image (the whole image) through QEMU's rbd driver."""
    return QemuTarget(
        name="dstore-guest",
        backing=(f"rbd:{ref.pool}/{ref.image}",),
        conf=str(ref.conf),
        clientname=ref.client.name,
        keyring=str(ref.client.keyring) if ref.client.keyring else None,
        memory=memory,
        accel=accel,
    )


class GuestFacts(TypedDict):
    """What a guest profile ran on, merged into its profile's setup."""

    where: str
    disk: str
    accel: str | None
    accel_reason: object
    qemu_version: str | None


@contextlib.contextmanager
def guest_measure(
    ref: ClusterRef, runner: Runner, *, boot_timeout: float = 180.0, accel: str = "auto"
) -> Iterator[tuple[Callable[[RbdJob], Totals], GuestFacts]]:
    """Boot the VM for as long as the block lasts; give the function measuring one job inside it and
    the facts of the VM (accelerator, QEMU version, its disk's driver)."""
    target = guest_target(ref, accel=accel)
    with open_target(target, Env(runner=runner, boot_timeout=boot_timeout)) as rig:
        found = rig.facts()
        facts: GuestFacts = {
            "where": "guest",
            "disk": f"QEMU rbd driver, {ref.pool}/{ref.image}",
            "accel": found.accel,
            "accel_reason": found.host.get("accel_reason"),
            "qemu_version": found.qemu_version,
        }

        def measure(job: RbdJob) -> Totals:
            workload = Workload(
                name=f"seed002-{job.bs}",
                rw=job.rw,
                bs=(job.bs,),
                rwmixread=job.rwmixread,
                iodepth=job.iodepth,
                numjobs=job.numjobs,
                runtime=job.runtime_s,
                ramp=job.ramp_s,
            )
            (ep,) = rig.endpoints(workload)
            text = jobfile.render(workload, bs=job.bs, offered_iops=None, load_processes=0, place=ep.place)
            timeout = job.runtime_s + job.ramp_s + FIO_GRACE_S
            return totals(fiorun.run_job(text, timeout=timeout, runner=runner, server=ep.server))

        yield measure, facts
