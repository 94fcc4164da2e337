"""What each target kind is, known without starting anything: whether its points run in VMs, whether its I/O
runs on the bare host, and the QEMU configuration vmio gives its VMs.

The report and the advice read these of stored campaigns. The kinds' rigs (``targets.host``, ``targets.qemu``
...) bring in fio's launcher, QEMU's control (asyncio), libvirt, Ceph clients and trace readers, which a
report never uses: importing them was a third of ``vmio report``'s start-up. Each kind's ``KIND`` is its
traits' class extended with what runs (``Kind``: preflight, open, size, label), so both answer alike.
"""

from __future__ import annotations

from typing import ClassVar

from vmio.errors import InputError
from vmio.spec import QemuTarget, Target


class Traits:
    """A kind's answers that need no rig (``targets.kind.Kind`` has the same ones)."""

    name: ClassVar[str]  # the spec's ``kind``
    vm: ClassVar[bool]  # its points run inside VMs (QEMU or libvirt guests)
    bare: ClassVar[bool]  # its I/O runs on this host's own kernel: the bare baseline VMs compare to

    def qemu(self, target: Target) -> QemuTarget | None:
        """The QEMU configuration its VMs run (the report's VM figures, the advice's VM rules); None when
        vmio does not start its VMs' QEMU."""
        return None


class HostTraits(Traits):
    name = "host"
    vm = False
    bare = True


class QemuTraits(Traits):
    name = "qemu"
    vm = True
    bare = False

    def qemu(self, target: Target) -> QemuTarget | None:
        assert isinstance(target, QemuTarget), target  # found by its kind: the spec built it as this class
        return target


class RemoteTraits(Traits):
    name = "remote"
    vm = False
    bare = False


class RbdTraits(Traits):
    name = "rbd"
    vm = False
    bare = False


class LibvirtTraits(Traits):
    name = "libvirt"
    vm = True
    bare = False  # and no QemuTarget: libvirt starts its domains' QEMU, vmio reads their shape


# every target kind's traits, by the spec's ``kind`` (``targets.KINDS`` has a rig for each)
TRAITS: dict[str, Traits] = {
    t.name: t for t in (HostTraits(), QemuTraits(), RemoteTraits(), RbdTraits(), LibvirtTraits())
}


def traits_of(target: Target) -> Traits:
    """The traits of ``target``'s kind."""
    found = TRAITS.get(target.kind)
    if found is None:
        raise InputError(f"target {target.name!r}: kind {target.kind!r} is not supported")
    return found


def vm_config(target: Target | None) -> QemuTarget | None:
    """The QEMU configuration of a target whose VMs vmio starts (None for other kinds, or no target)."""
    return None if target is None else traits_of(target).qemu(target)
