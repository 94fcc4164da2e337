"""vmio: measure, diagnose and optimize storage I/O on KVM/QEMU hosts.

The names below numpy (the campaign, the spec model, the store) are imported when first used, so that
``import vmio`` and ``vmio --version`` stay light.
"""

import importlib as _importlib
import typing as _typing

from vmio.errors import (
    ClusterError,
    FioError,
    GuestBootError,
    InputError,
    SpecError,
    StoreError,
    ToolError,
    TraceError,
    UnsafeTargetError,
    VmioError,
)
from vmio.units import format_size, parse_duration, parse_size
from vmio.version import vmio_version as _vmio_version

if _typing.TYPE_CHECKING:
    from vmio.campaign import Options
    from vmio.campaign import run as run_campaign
    from vmio.spec import Campaign, Point, load_spec, loads_spec
    from vmio.store import Store

__version__ = _vmio_version()

# public name -> (module, attribute), imported on first use (PEP 562)
_LAZY = {
    "Campaign": ("vmio.spec", "Campaign"),
    "Options": ("vmio.campaign", "Options"),
    "Point": ("vmio.spec", "Point"),
    "Store": ("vmio.store", "Store"),
    "load_spec": ("vmio.spec", "load_spec"),
    "loads_spec": ("vmio.spec", "loads_spec"),
    "run_campaign": ("vmio.campaign", "run"),
}


def __getattr__(name: str) -> _typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'vmio' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(_importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Campaign",
    "ClusterError",
    "FioError",
    "GuestBootError",
    "InputError",
    "Options",
    "Point",
    "SpecError",
    "Store",
    "StoreError",
    "ToolError",
    "TraceError",
    "UnsafeTargetError",
    "VmioError",
    "__version__",
    "format_size",
    "load_spec",
    "loads_spec",
    "parse_duration",
    "parse_size",
    "run_campaign",
]
