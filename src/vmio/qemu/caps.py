"""What a QEMU can do, learned by asking it: version, devices, device properties, accelerators.

The one place vmio asks a QEMU binary about itself (campaigns, ``advise``, ``guest info``)."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field

from vmio.errors import ToolError
from vmio.system.process import Runner

QEMU_BINARY = "qemu-system-x86_64"


@dataclass(frozen=True)
class QemuCaps:
    """A QEMU binary's version and the properties of the devices vmio uses."""

    binary: str
    version: tuple[int, int, int]
    version_text: str
    device_props: dict[str, frozenset[str]] = field(default_factory=dict)
    kvm_device: bool = False
    devices: frozenset[str] = frozenset()  # every device name and alias of ``-device help``

    @property
    def version_string(self) -> str:
        return ".".join(map(str, self.version))

    def has_prop(self, driver: str, prop: str) -> bool:
        return prop in self.device_props.get(driver, frozenset())

    @property
    def iothread_vq_mapping(self) -> bool:
        """QEMU >= 9.0 can spread one virtio-blk disk's queues over several I/O threads."""
        return self.has_prop("virtio-blk-pci", "iothread-vq-mapping")


_DEVICE_LINE = re.compile(r'^name "([^"]+)"(?:.*?alias "([^"]+)")?')
PROBED_DEVICES = ("virtio-blk-pci", "virtio-scsi-pci", "nvme", "scsi-hd", "virtio-net-pci")


def parse_version(text: str) -> tuple[int, int, int]:
    """``QEMU emulator version 7.2.22 (Debian ...)`` -> ``(7, 2, 22)``."""
    match = re.search(r"version (\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        raise ToolError(f"cannot read a QEMU version from {text.splitlines()[0] if text else text!r}")
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def version_text(text: str) -> str:
    """``'QEMU emulator version 7.2.22 (Debian ...)'`` → ``'7.2.22'``, as QEMU wrote it."""
    match = re.search(r"version (\d+\.\d+(?:\.\d+)?)", text)
    if match is None:
        raise ToolError(f"cannot find a version in QEMU's --version output {text[:80]!r}", output=text)
    return match[1]


def parse_device_help(text: str) -> frozenset[str]:
    """Property names from ``-device DRIVER,help`` output (lines like ``  num-queues=<uint16> ...``)."""
    return frozenset(m.group(1) for m in re.finditer(r"^\s+([\w.-]+)=<", text, re.MULTILINE))


def parse_device_list(text: str) -> frozenset[str]:
    """Device names and their aliases from ``-device help``."""
    names: set[str] = set()
    for line in text.splitlines():
        match = _DEVICE_LINE.match(line.strip())
        if match:
            names.update(n for n in match.groups() if n)
    return frozenset(names)


def probe_caps(binary: str = QEMU_BINARY, runner: Runner | None = None) -> QemuCaps:
    """Ask ``binary`` for its version, its devices and their properties (a few fast calls, no guest)."""
    runner = runner or Runner()
    path = shutil.which(binary)
    if path is None and binary == QEMU_BINARY:
        raise ToolError(f"{binary!r} is not installed; install the Debian package 'qemu-system-x86'")
    path = path or binary
    text = runner.run([path, "--version"], timeout=30).stdout
    devices = parse_device_list(runner.run([path, "-machine", "none", "-device", "help"], timeout=30).stdout)
    props = {}
    for driver in PROBED_DEVICES:
        done = runner.run([path, "-machine", "none", "-device", f"{driver},help"], timeout=30, check=False)
        props[driver] = parse_device_help(done.stdout + done.stderr)
    kvm = os.access("/dev/kvm", os.R_OK | os.W_OK)
    return QemuCaps(path, parse_version(text), text.splitlines()[0], props, kvm, devices)
