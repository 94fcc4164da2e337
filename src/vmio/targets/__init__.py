"""Where I/O runs: the bare host, QEMU VMs, remote fio servers, RBD images, libvirt domains.

``open_target`` starts a target for its points and gives a ``Rig`` (``targets.base``): its fio endpoints,
the device it reports, what it samples, the facts a run records. ``placement.endpoints`` derives where a
point's I/O goes, for the real run and the dry run alike. What a kind is without its rig (VMs or not, bare
or not, its QEMU configuration) is in ``targets.traits``, which the report reads without the rigs.
"""

import typing as _typing

from vmio.lazy import exports as _exports

if _typing.TYPE_CHECKING:
    from vmio.targets.base import Endpoint, Env, Facts, Notes, Rig
    from vmio.targets.kind import Checks, Kind
    from vmio.targets.registry import KINDS, kind_of, open_target
    from vmio.targets.traits import vm_config

# Each name is imported on first use (PEP 562): ``vmio.targets.traits`` comes without every kind's rig.
_LAZY = {
    "KINDS": "vmio.targets.registry",
    "Checks": "vmio.targets.kind",
    "Endpoint": "vmio.targets.base",
    "Env": "vmio.targets.base",
    "Facts": "vmio.targets.base",
    "Kind": "vmio.targets.kind",
    "Notes": "vmio.targets.base",
    "Rig": "vmio.targets.base",
    "kind_of": "vmio.targets.registry",
    "open_target": "vmio.targets.registry",
    "vm_config": "vmio.targets.traits",
}

__getattr__, __dir__ = _exports(__name__, _LAZY, globals())

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
