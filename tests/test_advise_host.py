"""Host facts: block devices from a sysfs tree, mounts from a proc tree, and what the real QEMU says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vmio.advise.inventory import BlockDevice, read_block_devices, read_cpus, read_host_facts, read_mounted
from vmio.errors import InputError, ToolError
from vmio.qemu.caps import parse_device_help as parse_properties
from vmio.qemu.caps import parse_device_list
from vmio.qemu.caps import version_text as qemu_version
from vmio.system.process import Runner

needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="needs qemu-system-x86_64")


def add_disk(
    sysfs: Path, name: str, *, rotational: bool, pci: str | None = None, size: int = 2048, parts: int = 0
) -> None:
    """A /sys/block entry; with ``pci`` its device link resolves under that PCI function, as on Linux."""
    entry = sysfs / "block" / name
    (entry / "queue").mkdir(parents=True)
    (entry / "size").write_text(f"{size}\n")
    (entry / "queue/rotational").write_text("1\n" if rotational else "0\n")
    (entry / "holders").mkdir()
    for i in range(1, parts + 1):
        part = entry / f"{name}p{i}"
        (part / "holders").mkdir(parents=True)
        (part / "partition").write_text(f"{i}\n")
    if pci:
        target = sysfs / "devices/pci0000:00" / pci / "nvme" / name.removesuffix("n1")
        target.mkdir(parents=True)
        (entry / "device").symlink_to(target)


def make_host(root: Path) -> tuple[Path, Path]:
    """Two NVMe SSDs (the first holds / on a partition), one HDD, and virtual devices to be skipped."""
    sysfs, proc = root / "sys", root / "proc"
    (sysfs / "devices/system/cpu").mkdir(parents=True)
    (sysfs / "devices/system/cpu/online").write_text("0-7\n")
    add_disk(sysfs, "nvme0n1", rotational=False, pci="0000:01:00.0", parts=2)
    add_disk(sysfs, "nvme1n1", rotational=False, pci="0000:02:00.0")
    add_disk(sysfs, "sda", rotational=True)
    add_disk(sysfs, "loop0", rotational=False)
    add_disk(sysfs, "zram0", rotational=False)
    add_disk(sysfs, "vdb", rotational=False, size=0)
    proc.mkdir()
    (proc / "mounts").write_text("proc /proc proc rw 0 0\n/dev/nvme0n1p2 / ext4 rw 0 0\n")
    (proc / "swaps").write_text("Filename Type Size Used Priority\n/dev/sda partition 1024 0 -2\n")
    return sysfs, proc


def test_block_devices_with_rotation_pci_address_and_host_use(tmp_path: Path) -> None:
    sysfs, proc = make_host(tmp_path)
    found = read_block_devices(sysfs, read_mounted(proc))
    assert found == (
        BlockDevice("nvme0n1", False, 2048 * 512, "0000:01:00.0", "/dev/nvme0n1p2 on /"),
        BlockDevice("nvme1n1", False, 2048 * 512, "0000:02:00.0", None),
        BlockDevice("sda", True, 2048 * 512, None, "/dev/sda on swap"),
    )


def test_a_device_mapper_holder_counts_as_host_use(tmp_path: Path) -> None:
    add_disk(tmp_path, "nvme1n1", rotational=False)
    (tmp_path / "block/nvme1n1/holders/dm-0").mkdir()
    assert read_block_devices(tmp_path)[0].host_uses == "/dev/nvme1n1 held by dm-0"


def test_no_block_dir_means_no_devices(tmp_path: Path) -> None:
    assert read_block_devices(tmp_path) == ()


def test_cpu_lists(tmp_path: Path) -> None:
    online = tmp_path / "devices/system/cpu/online"
    online.parent.mkdir(parents=True)
    assert read_cpus(tmp_path / "absent") is None
    online.write_text("0,2-3,8-15\n")
    assert read_cpus(tmp_path) == 11
    online.write_text("zero\n")
    with pytest.raises(InputError, match="'zero' is not a CPU list"):
        read_cpus(tmp_path)


def test_qemu_output_parsers() -> None:
    assert qemu_version("QEMU emulator version 9.1.0 (v9.1.0)\nCopyright") == "9.1.0"
    with pytest.raises(ToolError, match="cannot find a version"):
        qemu_version("qemu: command not understood")
    listing = (
        'Storage devices:\nname "virtio-blk-pci", bus PCI, alias "virtio-blk"\n'
        'name "nvme", bus PCI, desc "x"\n'
    )
    assert parse_device_list(listing) == {"virtio-blk-pci", "virtio-blk", "nvme"}
    props = (
        "virtio-blk-pci options:\n  iothread=<link<iothread>>\n"
        "  iothread-vq-mapping=<IOThreadVirtQueueMappingList>\n"
    )
    assert parse_properties(props) == {"iothread", "iothread-vq-mapping"}


@pytest.mark.qemu
@needs_qemu
def test_real_qemu_facts(tmp_path: Path) -> None:
    sysfs, proc = make_host(tmp_path)
    facts = read_host_facts(Runner(), sysfs=sysfs, proc=proc)
    assert facts.qemu()[0] >= 2
    assert facts.has_device("virtio-blk-pci") and facts.has_device("virtio-blk")
    assert facts.has_property("virtio-blk-pci", "iothread")
    assert facts.has_property("virtio-blk-pci", "iothread-vq-mapping") == (facts.qemu()[:2] >= (9, 0))
    assert facts.cpus == 8
    assert [d.name for d in facts.block_devices] == ["nvme0n1", "nvme1n1", "sda"]


def test_a_missing_qemu_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="cannot start 'no-such-qemu'"):
        read_host_facts(Runner(), sysfs=tmp_path, proc=tmp_path, qemu="no-such-qemu")
