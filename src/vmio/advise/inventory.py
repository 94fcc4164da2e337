"""This host's inventory for the configuration guideline: what its QEMU can do and which block devices it has.

QEMU is asked through ``vmio.qemu.caps`` (``--version``, ``-device help`` and ``-device DEVICE,help``: the
property list shows whether ``iothread`` and ``iothread-vq-mapping`` exist in this build). Block devices come from
``SYSFS/block`` with their ``queue/rotational`` flag and, for passthrough, the PCI address they sit on.
The runner and the sysfs root are seams: tests hand in a tree under ``tmp_path``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vmio.advise.evidence import parse_version
from vmio.errors import InputError
from vmio.qemu.caps import QEMU_BINARY, probe_caps, version_text
from vmio.system.process import Runner

PROBED_DEVICES = ("virtio-blk-pci", "virtio-scsi-pci")
VIRTUAL_BLOCK_PREFIXES = ("loop", "ram", "zram", "sr", "fd", "nbd", "mtdblock")
_LIBVIRT_VERSION = re.compile(r"\d+\.\d+(\.\d+)?")
_PCI = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


@dataclass(frozen=True)
class BlockDevice:
    """A block device of the host: its name, whether it spins, its size, its PCI address if it has one,
    and what of the host's holds it (a mount, swap or a device-mapper holder), which rules out passthrough."""

    name: str
    rotational: bool | None
    size_bytes: int
    pci_address: str | None = None
    host_uses: str | None = None


@dataclass(frozen=True)
class HostFacts:
    """What this host's QEMU can do and which block devices it has."""

    qemu_version: str
    qemu_devices: frozenset[str]
    device_properties: Mapping[str, frozenset[str]] = field(default_factory=dict)
    cpus: int | None = None
    block_devices: tuple[BlockDevice, ...] = ()
    libvirt_version: str | None = None  # ``virsh --version``; None when libvirt's client is not installed

    def libvirt(self) -> tuple[int, int, int] | None:
        return None if self.libvirt_version is None else parse_version(self.libvirt_version)

    def qemu(self) -> tuple[int, int, int]:
        return parse_version(self.qemu_version)

    def has_device(self, device: str) -> bool:
        return device in self.qemu_devices

    def has_property(self, device: str, prop: str) -> bool:
        return prop in self.device_properties.get(device, frozenset())


def read_host_facts(
    runner: Runner,
    *,
    sysfs: Path = Path("/sys"),
    proc: Path = Path("/proc"),
    qemu: str = QEMU_BINARY,
    virsh: str = "virsh",
) -> HostFacts:
    """Ask ``qemu`` for its version, devices and the storage devices' properties, ``virsh`` for libvirt's
    version; read block devices."""
    caps = probe_caps(qemu, runner)
    props = {
        name: caps.device_props.get(name, frozenset()) for name in PROBED_DEVICES if name in caps.devices
    }
    return HostFacts(
        version_text(caps.version_text),
        caps.devices,
        props,
        read_cpus(sysfs),
        read_block_devices(sysfs, read_mounted(proc)),
        read_libvirt_version(runner, virsh),
    )


def read_libvirt_version(runner: Runner, virsh: str = "virsh") -> str | None:
    """libvirt's version from ``virsh --version`` (``9.0.0``); None when virsh is absent or says no version."""
    if shutil.which(virsh) is None:
        return None
    done = runner.run([virsh, "--version"], timeout=30.0, check=False)
    text = done.stdout.strip()
    return text if done.returncode == 0 and _LIBVIRT_VERSION.fullmatch(text) else None


def read_cpus(sysfs: Path) -> int | None:
    """Online CPUs from ``SYSFS/devices/system/cpu/online`` (``0-15``, ``0,2-3``); None if absent."""
    try:
        text = (sysfs / "devices/system/cpu/online").read_text().strip()
    except OSError:
        return None
    count = 0
    for part in text.split(","):
        low, _, high = part.partition("-")
        try:
            count += int(high or low) - int(low) + 1
        except ValueError as exc:
            raise InputError(f"{sysfs}/devices/system/cpu/online = {text!r} is not a CPU list") from exc
    return count


def read_mounted(proc: Path) -> dict[str, str]:
    """Device name → mount point (or 'swap') from ``PROC/mounts`` and ``PROC/swaps``."""
    used: dict[str, str] = {}
    for name, column in (("mounts", 1), ("swaps", None)):
        try:
            lines = (proc / name).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields and fields[0].startswith("/dev/"):
                used.setdefault(fields[0].rsplit("/", 1)[-1], "swap" if column is None else fields[column])
    return used


def read_block_devices(sysfs: Path, mounted: Mapping[str, str] | None = None) -> tuple[BlockDevice, ...]:
    """Non-virtual block devices with a size, sorted by name; ``mounted`` is :func:`read_mounted`'s."""
    root = sysfs / "block"
    if not root.is_dir():
        return ()
    found = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(VIRTUAL_BLOCK_PREFIXES):
            continue
        size = _read_int(entry / "size")
        if not size:
            continue
        flag = _read_int(entry / "queue/rotational")
        rotational = None if flag is None else flag == 1
        uses = _host_uses(entry, mounted or {})
        found.append(BlockDevice(entry.name, rotational, size * 512, _pci_address(entry), uses))
    return tuple(found)


def _host_uses(entry: Path, mounted: Mapping[str, str]) -> str | None:
    names = [entry.name, *(p.name for p in entry.iterdir() if (p / "partition").exists())]
    for name in names:
        if name in mounted:
            return f"/dev/{name} on {mounted[name]}"
        holders = entry / name / "holders" if name != entry.name else entry / "holders"
        if holders.is_dir() and any(holders.iterdir()):
            return f"/dev/{name} held by {', '.join(sorted(h.name for h in holders.iterdir()))}"
    return None


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _pci_address(entry: Path) -> str | None:
    device = entry / "device"
    if not device.exists():
        return None
    parts = [p for p in device.resolve().parts if _PCI.match(p)]
    return parts[-1] if parts else None
