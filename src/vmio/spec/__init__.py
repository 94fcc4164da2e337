"""Validated inputs: experiment specs (TOML with file:line errors), their model, and writing them back."""

from vmio.spec.load import campaign_name, load_spec, loads_spec
from vmio.spec.model import (
    ACCELS,
    AIOS,
    BUSES,
    CACHES,
    RW_MODES,
    Campaign,
    HostTarget,
    Point,
    QemuTarget,
    RbdTarget,
    RemoteTarget,
    Target,
    Workload,
)

__all__ = [
    "ACCELS",
    "AIOS",
    "BUSES",
    "CACHES",
    "RW_MODES",
    "Campaign",
    "HostTarget",
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
