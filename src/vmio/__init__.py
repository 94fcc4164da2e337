"""vmio: measure, diagnose and optimize storage I/O on KVM/QEMU hosts."""

from vmio.campaign import Options
from vmio.campaign import run as run_campaign
from vmio.campaign.facts import vmio_version as _vmio_version
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
from vmio.spec import Campaign, Point, load_spec, loads_spec
from vmio.store import Store
from vmio.units import format_size, parse_duration, parse_size

__version__ = _vmio_version()

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
