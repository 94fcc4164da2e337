"""Every target kind with its rig (``KINDS``), found by the spec's ``kind``; ``open_target`` starts one."""

from __future__ import annotations

from contextlib import AbstractContextManager

from vmio.errors import InputError
from vmio.spec import Target
from vmio.targets import host, libvirt, qemu, rbd, remote
from vmio.targets.base import Env, Rig
from vmio.targets.kind import Kind

# every target kind, by the spec's ``kind`` (a new kind: its module, its line here and its ``traits.TRAITS``)
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
