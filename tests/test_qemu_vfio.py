"""vfio-pci binding: driver_override writes on a sysfs-shaped tree; the real test needs an IOMMU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vmio.errors import InputError
from vmio.qemu import VfioBinding, iommu_present
from vmio.qemu.vfio import current_driver

ADDR = "0000:01:00.0"


def sysfs(root: Path, *, iommu: bool) -> Path:
    device = root / "bus/pci/devices" / ADDR
    device.mkdir(parents=True)
    nvme = root / "bus/pci/drivers/nvme"
    nvme.mkdir(parents=True)
    (nvme / "unbind").write_text("")
    (device / "driver").symlink_to(nvme)
    (device / "driver_override").write_text("(null)\n")
    (root / "bus/pci/drivers_probe").write_text("")
    (root / "kernel/iommu_groups").mkdir(parents=True)
    if iommu:
        (root / "kernel/iommu_groups/1").mkdir()
    return device


def test_binding_writes_override_unbind_and_probe(tmp_path: Path) -> None:
    device = sysfs(tmp_path, iommu=True)
    with VfioBinding(ADDR, sys_root=tmp_path) as binding:
        assert binding.previous == "nvme" == current_driver(ADDR, tmp_path)
        assert (device / "driver_override").read_text() == "vfio-pci\n"
        assert (tmp_path / "bus/pci/drivers/nvme/unbind").read_text() == ADDR
        assert (tmp_path / "bus/pci/drivers_probe").read_text() == ADDR
    assert (device / "driver_override").read_text() == "\n"  # cleared: the native driver binds again


def test_binding_refuses_without_iommu_or_with_bad_address(tmp_path: Path) -> None:
    sysfs(tmp_path, iommu=False)
    assert not iommu_present(tmp_path)
    with pytest.raises(InputError, match="needs an IOMMU"):
        VfioBinding(ADDR, sys_root=tmp_path).__enter__()
    with pytest.raises(InputError, match="'01:00.0' is not of the form"):
        current_driver("01:00.0", tmp_path)


@pytest.mark.root
@pytest.mark.skipif(
    "VMIO_VFIO_DEVICE" not in os.environ,
    reason="set VMIO_VFIO_DEVICE to a spare NVMe controller's PCI address to test vfio",
)
@pytest.mark.skipif(not iommu_present(), reason="no IOMMU on this host (/sys/kernel/iommu_groups is empty)")
def test_real_vfio_round_trip() -> None:
    address = os.environ["VMIO_VFIO_DEVICE"]
    before = current_driver(address)
    with VfioBinding(address):
        assert current_driver(address) == "vfio-pci"
    assert current_driver(address) == before
