"""Validated inputs: experiment specs (TOML with file:line errors), their model, and writing them back."""

import typing as _typing

from vmio.lazy import exports as _exports

if _typing.TYPE_CHECKING:
    from vmio.spec.load import campaign_name, load_spec, loads_spec
    from vmio.spec.model import (
        ACCELS,
        AIOS,
        BUSES,
        CACHES,
        RW_MODES,
        Campaign,
        HostTarget,
        LibvirtDomain,
        LibvirtTarget,
        Point,
        QemuTarget,
        RbdTarget,
        RemoteTarget,
        Target,
        Workload,
    )

# Each name is imported on first use (PEP 562), so that one module of the package (``vmio.spec.fields`` for
# fio's engines, ``vmio.spec.sla``) comes without the whole spec model.
_LAZY = {
    "ACCELS": "vmio.spec.model",
    "AIOS": "vmio.spec.model",
    "BUSES": "vmio.spec.model",
    "CACHES": "vmio.spec.model",
    "Campaign": "vmio.spec.model",
    "HostTarget": "vmio.spec.model",
    "LibvirtDomain": "vmio.spec.model",
    "LibvirtTarget": "vmio.spec.model",
    "Point": "vmio.spec.model",
    "QemuTarget": "vmio.spec.model",
    "RW_MODES": "vmio.spec.model",
    "RbdTarget": "vmio.spec.model",
    "RemoteTarget": "vmio.spec.model",
    "Target": "vmio.spec.model",
    "Workload": "vmio.spec.model",
    "campaign_name": "vmio.spec.load",
    "load_spec": "vmio.spec.load",
    "loads_spec": "vmio.spec.load",
}


__getattr__, __dir__ = _exports(__name__, _LAZY, globals())


__all__ = [
    "ACCELS",
    "AIOS",
    "BUSES",
    "CACHES",
    "RW_MODES",
    "Campaign",
    "HostTarget",
    "LibvirtDomain",
    "LibvirtTarget",
    "Point",
    "QemuTarget",
    "RbdTarget",
    "RemoteTarget",
    "Target",
    "Workload",
    "campaign_name",
    "load_spec",
    "loads_spec",
]
