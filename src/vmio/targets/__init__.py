"""Where I/O runs: the bare host, QEMU VMs, remote fio servers, RBD images, libvirt domains.

``open_target`` starts a target for its points and gives a ``Rig`` (``targets.base``): its fio endpoints,
the device it reports, what it samples, the facts a run records. ``placement.endpoints`` derives where a
point's I/O goes, for the real run and the dry run alike.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from vmio.errors import InputError
from vmio.spec import QemuTarget, Target
from vmio.targets import host, libvirt, qemu, rbd, remote
from vmio.targets.base import Endpoint, Env, Facts, Notes, Rig
from vmio.targets.kind import Checks, Kind

__all__ = [
    "KINDS",
    "Checks",
    "Endpoint",
    "Env",
    "Facts",
    "Kind",
    "Notes",
    "Rig",
    "kind_of",
    "open_target",
    "vm_config",
]

# every target kind, by the spec's ``kind`` (a new kind: its module and its line here)
KINDS: dict[str, Kind] = {k.name: k for k in (host.KIND, qemu.KIND, remote.KIND, rbd.KIND, libvirt.KIND)}


def kind_of(target: Target) -> Kind:
    """The kind that answers for ``target``."""
    found = KINDS.get(target.kind)
    if found is None:
        raise InputError(f"target {target.name!r}: kind {target.kind!r} is not supported")
    return found


def open_target(target: Target, env: Env) -> AbstractContextManager[Rig]:
    """Start ``target`` (VMs: boot them) for as long as the block lasts; tear it down after."""
    return kind_of(target).open(target, env)


def vm_config(target: Target | None) -> QemuTarget | None:
    """The QEMU configuration of a target whose VMs vmio starts (None for other kinds, or no target)."""
    return None if target is None else kind_of(target).qemu(target)
