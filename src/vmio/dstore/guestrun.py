"""bitisle-dstore-2014's profile from inside a guest, as the seed measured it (IOmeter in a VM on the datastore): a
vmio VM whose only disk is the RBD image through QEMU's rbd driver, running fio (libaio, direct) on
``/dev/vda`` with the same mix, depth, block sizes and durations as the host's librbd profile.

The VM is the campaign's QEMU target (``backing = ["rbd:POOL/IMAGE"]`` with ``conf``), booted once for
all block sizes. Without KVM the guest runs under TCG: its figures then include the emulation's cost,
and the run records the accelerator so the reader can tell.
"""

from __future__ import annotations

from vmio.dstore.cluster import ClusterRef
from vmio.spec import QemuTarget


def guest_target(
    ref: ClusterRef, *, name: str = "guest-rbd", memory: int = 512 << 20, accel: str = "auto"
) -> QemuTarget:
    """One VM whose disk is ``ref``'s RBD image (the whole image) through QEMU's rbd driver."""
    return QemuTarget(
        name=name,
        backing=(f"rbd:{ref.pool}/{ref.image}",),
        conf=str(ref.conf),
        clientname=ref.client.name,
        keyring=str(ref.client.keyring) if ref.client.keyring else None,
        memory=memory,
        accel=accel,
    )
