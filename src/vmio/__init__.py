"""vmio: measure, diagnose and optimize storage I/O on KVM/QEMU hosts."""

__version__ = "0.1.0"

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

__all__ = [
    "ClusterError",
    "FioError",
    "GuestBootError",
    "InputError",
    "SpecError",
    "StoreError",
    "ToolError",
    "TraceError",
    "UnsafeTargetError",
    "VmioError",
    "__version__",
    "format_size",
    "parse_duration",
    "parse_size",
]
