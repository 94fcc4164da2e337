"""Where I/O runs: the bare host, QEMU VMs, remote fio servers, RBD images, libvirt domains.

``open_target`` starts a target for its points and gives a ``Rig`` (``targets.base``): its fio endpoints,
the device it reports, what it samples, the facts a run records. ``placement.endpoints`` derives where a
point's I/O goes, for the real run and the dry run alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from vmio.errors import InputError
from vmio.spec import HostTarget, LibvirtTarget, QemuTarget, RbdTarget, RemoteTarget, Target
from vmio.system.cephclient import client_conf
from vmio.targets.base import Endpoint, Env, Facts, Notes, Rig
from vmio.targets.host import HostRig
from vmio.targets.libvirt import LibvirtRig
from vmio.targets.qemu import QemuRig, ceph_client
from vmio.targets.rbd import RbdRig
from vmio.targets.remote import RemoteRig

__all__ = ["Endpoint", "Env", "Facts", "Notes", "Rig", "open_target"]


@contextlib.contextmanager
def open_target(target: Target, env: Env) -> Iterator[Rig]:
    """Start ``target`` (VMs: boot them) for as long as the block lasts; tear it down after."""
    if isinstance(target, RbdTarget):
        with client_conf(Path(target.conf).resolve(), ceph_client(target)) as conf:
            yield RbdRig(target, env, conf)
    elif isinstance(target, QemuTarget):
        with contextlib.ExitStack() as stack:
            yield QemuRig(target, env, stack)
    elif isinstance(target, HostTarget):
        with contextlib.ExitStack() as stack:
            yield HostRig(target, env, stack)
    elif isinstance(target, RemoteTarget):
        yield RemoteRig(target, env)
    elif isinstance(target, LibvirtTarget):
        yield LibvirtRig(target, env)
    else:
        raise InputError(f"target {target.name!r}: kind {target.kind!r} is not supported")
