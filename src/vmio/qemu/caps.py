"""What a QEMU can do, learned by asking it: version, devices, device properties, machines, accelerators.

The one place vmio asks a QEMU binary about itself (campaigns, ``advise``, ``guest info``, ``qemu list``).
A build vmio installed is asked with its own environment (libraries, modules); its firmware folders are
carried along for the argv."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from vmio.errors import ToolError
from vmio.system.files import check_trusted
from vmio.system.process import Completed, Runner

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
    machines: frozenset[str] = frozenset()  # machine types and aliases of ``-machine help``
    data_dirs: tuple[str, ...] = ()  # ``-L`` folders (firmware, option ROMs) of a build vmio installed
    env: Mapping[str, str] = field(default_factory=dict)  # its LD_LIBRARY_PATH / QEMU_MODULE_DIR
    source: str = "system"  # "system" | "vmio" | "path"

    @property
    def version_string(self) -> str:
        return ".".join(map(str, self.version))

    def has_prop(self, driver: str, prop: str) -> bool:
        return prop in self.device_props.get(driver, frozenset())

    @property
    def iothread_vq_mapping(self) -> bool:
        """QEMU >= 9.0 can spread one virtio-blk disk's queues over several I/O threads."""
        return self.has_prop("virtio-blk-pci", "iothread-vq-mapping")

    @property
    def scsi_vq_mapping(self) -> bool:
        """QEMU >= 10.0 can do the same for a virtio-scsi controller."""
        return self.has_prop("virtio-scsi-pci", "iothread-vq-mapping")

    @property
    def nvme_stalls(self) -> bool:
        """QEMU 7.2's emulated NVMe now and then leaves a queue's commands unprocessed (fixed by 8.0's
        shadow-doorbell rework): its guests need the short NVMe I/O timeout."""
        return self.version < (8, 0, 0)

    def as_dict(self) -> dict[str, object]:
        """What a run records about the QEMU it used."""
        return {
            "path": self.binary,
            "version": self.version_string,
            "source": self.source,
            "iothread_vq_mapping": {
                "virtio-blk": self.iothread_vq_mapping,
                "virtio-scsi": self.scsi_vq_mapping,
            },
            "nvme_iothread": self.has_prop("nvme", "iothread"),
            "nvme_io_timeout_workaround": self.nvme_stalls,
            "machines": sorted(m for m in self.machines if m in ("q35", "pc", "microvm")),
            "microvm_devices": sorted(d for d in self.devices if d.endswith("-device") and "virtio" in d),
            "kvm_device": self.kvm_device,
        }


_DEVICE_LINE = re.compile(r'^name "([^"]+)"(?:.*?alias "([^"]+)")?')
PROBED_DEVICES = (
    "virtio-blk-pci",
    "virtio-scsi-pci",
    "nvme",
    "scsi-hd",
    "virtio-net-pci",
    "virtio-blk-device",
)
_MACHINE_LINE = re.compile(r"^(\S+)\s+.*?(?:\(alias of (\S+)\))?$")


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


def parse_machine_list(text: str) -> frozenset[str]:
    """Machine type names from ``-machine help`` (``q35  Standard PC (Q35 + ICH9, 2009) (alias of ...)``)."""
    names: set[str] = set()
    for line in text.splitlines()[1:]:
        match = _MACHINE_LINE.match(line.strip())
        if match:
            names.update(n for n in match.groups() if n)
    return frozenset(names)


def probe_caps(
    binary: str = QEMU_BINARY,
    runner: Runner | None = None,
    *,
    env: Mapping[str, str] | None = None,
    data_dirs: tuple[str, ...] = (),
    source: str = "system",
) -> QemuCaps:
    """Ask ``binary`` (run with ``env``) for its version, devices, their properties and machine types (a
    few fast calls, no guest); a binary another user could have changed is refused first
    (``files.check_trusted``, exit 3)."""
    runner = runner or Runner()
    path = shutil.which(binary)
    if path is None and binary == QEMU_BINARY:
        raise ToolError(f"{binary!r} is not installed; install the Debian package 'qemu-system-x86'")
    path = path or binary
    check_trusted(path, "QEMU")  # run as root: no other user may have been able to change it
    env = dict(env or {})
    run_env = env or None
    asks = [
        (["--version"], True),
        (["-machine", "none", "-device", "help"], True),
        (["-machine", "help"], True),
    ]
    asks += [(["-machine", "none", "-device", f"{driver},help"], False) for driver in PROBED_DEVICES]

    def ask(args_check: tuple[list[str], bool]) -> Completed:
        args, check = args_check
        return runner.run([path, *args], timeout=30, check=check, env=run_env)

    with ThreadPoolExecutor(len(asks)) as pool:  # together: each run is mostly QEMU's own start-up
        answers = list(pool.map(ask, asks))
    text, listing = answers[0].stdout, answers[1].stdout
    machines = parse_machine_list(answers[2].stdout)
    props = {
        driver: parse_device_help(done.stdout + done.stderr)
        for driver, done in zip(PROBED_DEVICES, answers[3:], strict=True)
    }
    kvm = os.access("/dev/kvm", os.R_OK | os.W_OK)
    return QemuCaps(
        path,
        parse_version(text),
        text.splitlines()[0],
        props,
        kvm,
        parse_device_list(listing),
        machines,
        data_dirs,
        env,
        source,
    )
