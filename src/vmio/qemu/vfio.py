"""Binding a host PCI device (an NVMe controller) to ``vfio-pci`` for passthrough, and back.

Only meaningful with an IOMMU (``/sys/kernel/iommu_groups`` not empty); ``sys_root`` is the seam.
Uses ``driver_override`` so only this device changes driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from vmio.errors import InputError, VmioError

_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def iommu_present(sys_root: Path = Path("/sys")) -> bool:
    groups = sys_root / "kernel" / "iommu_groups"
    return groups.is_dir() and any(groups.iterdir())


def current_driver(address: str, sys_root: Path = Path("/sys")) -> str | None:
    link = _device(address, sys_root) / "driver"
    return link.resolve().name if link.exists() else None


def _device(address: str, sys_root: Path) -> Path:
    if not _ADDRESS.match(address):
        raise InputError(f"PCI address {address!r} is not of the form '0000:01:00.0'")
    path = sys_root / "bus" / "pci" / "devices" / address
    if not path.exists():
        raise InputError(f"PCI device {address!r} does not exist under {str(path.parent)!r}")
    return path


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        raise VmioError(f"cannot write {text.strip()!r} to {str(path)!r}: {exc.strerror}") from exc


def rebind(address: str, driver: str | None, sys_root: Path = Path("/sys")) -> None:
    """Unbind ``address`` from its driver and probe it again with ``driver`` forced (None: any)."""
    device = _device(address, sys_root)
    if (device / "driver").exists():
        _write(device / "driver" / "unbind", address)
    _write(device / "driver_override", (driver or "") + "\n")
    _write(sys_root / "bus" / "pci" / "drivers_probe", address)


@dataclass
class VfioBinding:
    """``with VfioBinding("0000:01:00.0"):`` the device is on vfio-pci inside, on its old driver after."""

    address: str
    sys_root: Path = Path("/sys")
    previous: str | None = None

    def __enter__(self) -> VfioBinding:
        if not iommu_present(self.sys_root):
            groups = self.sys_root / "kernel" / "iommu_groups"
            raise InputError(
                f"bus = 'vfio' needs an IOMMU; {str(groups)!r} is empty or missing "
                "(enable VT-d/AMD-Vi and boot with intel_iommu=on or amd_iommu=on)"
            )
        self.previous = current_driver(self.address, self.sys_root)
        if self.previous != "vfio-pci":
            rebind(self.address, "vfio-pci", self.sys_root)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.previous != "vfio-pci":
            rebind(self.address, None, self.sys_root)
