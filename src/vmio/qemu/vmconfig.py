"""What a VM is: its disk path (bus, cache, aio, iothreads, queues), CPUs, memory and accelerator.

``VMConfig`` is validated on construction; bad values raise ``InputError`` naming the field and what
would be accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from vmio.errors import InputError

MIN_MEMORY = 256 * 2**20  # the initramfs unpacks to ~8 MiB (~85 with build(lean=False)); fio needs room


class Bus(StrEnum):
    """How the disk reaches the guest."""

    VIRTIO_BLK = "virtio-blk"
    VIRTIO_SCSI = "virtio-scsi"
    NVME = "nvme"
    BLOCK = "block"  # a host block device given raw, presented as virtio-blk
    VFIO = "vfio"  # PCI passthrough of a host NVMe controller


class Machine(StrEnum):
    """QEMU's machine type: PCI chipsets (q35, pc) or microvm (virtio over MMIO, no PCI)."""

    Q35 = "q35"
    PC = "pc"
    MICROVM = "microvm"


class Cache(StrEnum):
    NONE = "none"
    WRITEBACK = "writeback"
    WRITETHROUGH = "writethrough"
    DIRECTSYNC = "directsync"

    @property
    def direct(self) -> bool:
        """Bypass the host page cache (O_DIRECT)."""
        return self in (Cache.NONE, Cache.DIRECTSYNC)

    @property
    def write_cache(self) -> bool:
        """The guest sees a volatile write cache (flushes are passed on)."""
        return self in (Cache.NONE, Cache.WRITEBACK)


class Aio(StrEnum):
    NATIVE = "native"
    IO_URING = "io_uring"
    THREADS = "threads"


class Accel(StrEnum):
    AUTO = "auto"
    KVM = "kvm"
    TCG = "tcg"


_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


@dataclass(frozen=True)
class Disk:
    """One guest disk: a file or block device, optionally a byte range of it (raw ``offset``/``size``).

    For ``Bus.VFIO`` the path is a PCI address such as ``0000:01:00.0``.
    """

    path: Path
    offset: int = 0
    size: int | None = None
    read_only: bool = False
    rbd_conf: Path | None = None  # set: ``path`` is ``POOL/IMAGE`` on the Ceph cluster of this ceph.conf
    rbd_user: str = "admin"  # the Ceph client QEMU's rbd driver connects as (its keyring: in rbd_conf)

    @property
    def is_rbd(self) -> bool:
        return self.rbd_conf is not None

    def __post_init__(self) -> None:
        if self.offset < 0 or self.offset % 512:
            raise InputError(
                f"disk {str(self.path)!r}: offset {self.offset!r} must be a multiple of 512, >= 0"
            )
        if self.size is not None and (self.size <= 0 or self.size % 512):
            raise InputError(
                f"disk {str(self.path)!r}: size {self.size!r} must be a positive multiple of 512"
            )


def _choice(kind: type[StrEnum], value: object, name: str) -> None:
    accepted = [m.value for m in kind]
    if value not in accepted:
        raise InputError(f"{name} = {value!r} is not accepted; use one of {', '.join(accepted)}")


@dataclass(frozen=True)
class VMConfig:
    """A VM's hardware. ``index`` names it ``vmio-<index>`` (QEMU ``-name``, thread names, logs)."""

    index: int = 0
    disks: tuple[Disk, ...] = ()
    bus: Bus | str = Bus.VIRTIO_BLK
    iothreads: int = 0
    queues: int = 1
    cache: Cache | str = Cache.NONE
    aio: Aio | str = Aio.NATIVE
    vcpus: int = 1
    memory: int = 512 * 2**20
    accel: Accel | str = Accel.TCG
    machine: Machine | str = Machine.Q35
    balloon: bool = True
    agent_interval: float | None = None  # seconds; starts the guest agent on a virtio-serial port
    trace_port: bool = False  # the guest_block layer's tracer on a virtio-serial port (docs/layers.md)
    disk_wait: int = 30  # seconds the guest waits for its disks before declaring itself ready
    loglevel: int = 4
    extra_append: tuple[str, ...] = field(default=())
    extra_args: tuple[str, ...] = field(default=())  # appended to QEMU's argv (e.g. -trace options)

    def __post_init__(self) -> None:
        # Plain strings (from a spec) are accepted and stored as the enum members.
        for name, kind in (
            ("bus", Bus),
            ("cache", Cache),
            ("aio", Aio),
            ("accel", Accel),
            ("machine", Machine),
        ):
            _choice(kind, getattr(self, name), name)
            object.__setattr__(self, name, kind(getattr(self, name)))
        for name, low in (("index", 0), ("iothreads", 0), ("queues", 1), ("vcpus", 1), ("disk_wait", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                raise InputError(f"{name} = {value!r} is not accepted; use an integer >= {low}")
        if self.memory < MIN_MEMORY:
            raise InputError(
                f"memory = {self.memory!r} bytes is too small; use at least {MIN_MEMORY >> 20} MiB"
            )
        if self.aio == Aio.NATIVE and not Cache(self.cache).direct:
            raise InputError(
                f"aio = 'native' needs O_DIRECT, which cache = {str(self.cache)!r} does not use; "
                "use cache 'none' or 'directsync', or aio 'threads' or 'io_uring'"
            )
        if self.machine == Machine.MICROVM and self.bus in (Bus.NVME, Bus.VFIO):
            raise InputError(
                f"bus = {str(self.bus)!r} needs PCI, which machine = 'microvm' does not have; "
                "use virtio-blk, virtio-scsi or block"
            )
        if self.bus == Bus.VFIO:
            for disk in self.disks:
                if not _PCI_ADDRESS.match(str(disk.path)):
                    raise InputError(f"vfio disk {str(disk.path)!r} is not a PCI address like '0000:01:00.0'")

    @property
    def mmio(self) -> bool:
        """Virtio devices sit on MMIO transports (``virtio-*-device``) instead of PCI."""
        return self.machine == Machine.MICROVM

    @property
    def name(self) -> str:
        return f"vmio-{self.index}"

    @property
    def iothread_ids(self) -> tuple[str, ...]:
        return tuple(f"iothread{i}" for i in range(self.iothreads))

    def guest_devices(self) -> list[str]:
        """The guest's block device for each disk, in order: ``/dev/vda``, ``/dev/sda``, ``/dev/nvme0n1``."""
        if self.bus in (Bus.VIRTIO_BLK, Bus.BLOCK):
            return [f"/dev/vd{chr(ord('a') + i)}" for i in range(len(self.disks))]
        if self.bus == Bus.VIRTIO_SCSI:
            return [f"/dev/sd{chr(ord('a') + i)}" for i in range(len(self.disks))]
        return [f"/dev/nvme{i}n1" for i in range(len(self.disks))]
