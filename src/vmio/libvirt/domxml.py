"""A domain's XML, read for what vmio measures: its disks (bus, cache, io, iothread, queues, what is behind
them), its I/O threads, and vmio's canary marker in ``<metadata>``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field

from vmio.errors import InputError

MARKER_NS = "https://github.com/vmio/vmio/libvirt-canary"  # vmio's element in a canary's <metadata>
BUSES = {"virtio": "virtio-blk", "scsi": "virtio-scsi", "sata": "sata", "ide": "ide", "usb": "usb"}


@dataclass(frozen=True)
class DiskShape:
    """One ``<disk device="disk">`` as libvirt runs it."""

    dev: str  # libvirt's target name (vdb); the guest may name it otherwise
    bus: str  # virtio-blk | virtio-scsi | sata | ...
    cache: str | None
    io: str | None
    iothread: str | None  # the iothread id it runs in (virtio-blk's driver, or its virtio-scsi controller's)
    queues: int | None
    source: str | None  # the host file or device behind it (None: a network disk)
    source_type: str  # file | block | network | volume
    boot: bool = False
    address: dict[str, str] = field(default_factory=dict)  # <address> as libvirt assigned it
    serial: str | None = None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class DomainShape:
    name: str
    type: str  # kvm | qemu
    machine: str | None  # pc-i440fx-7.2, pc-q35-7.2, ...
    iothreads: int
    disks: tuple[DiskShape, ...]
    marker: dict[str, str] | None  # vmio's canary marker, or None for a domain vmio did not make

    def disk(self, dev: str | None, uri: str) -> DiskShape:
        """The measured disk: ``dev``, or the only disk that is not the root disk; else an ``InputError``."""
        if dev is not None:
            for disk in self.disks:
                if disk.dev == dev.removeprefix("/dev/"):
                    return disk
            have = ", ".join(d.dev for d in self.disks) or "none"
            raise InputError(f"domain {self.name!r} on {uri} has no disk {dev!r} (its disks: {have})")
        data = self.data_disks()
        if len(data) == 1:
            return data[0]
        names = ", ".join(d.dev for d in data) or "none"
        raise InputError(
            f"domain {self.name!r} on {uri} has {len(data)} disks besides its root disk ({names}); "
            f'name the one to measure with disk = "..."'
        )

    def data_disks(self) -> list[DiskShape]:
        """The disks other than the root disk (the one booted from, else the first; a domain booting a
        kernel and initramfs directly, as canaries do, has none)."""
        if self.marker is not None:
            return list(self.disks)
        boot = [d for d in self.disks if d.boot]
        root = boot[0] if boot else (self.disks[0] if self.disks else None)
        return [d for d in self.disks if d is not root]


def parse(text: str, where: str = "domain XML") -> DomainShape:
    try:
        dom = ET.fromstring(text)
    except ET.ParseError as exc:
        raise InputError(f"{where} is not XML: {exc}") from None
    controllers = {c.get("index", "0"): c for c in dom.iter("controller") if c.get("type") == "scsi"}
    direct_kernel = dom.find("os/kernel") is not None
    disks = [
        _disk(disk, controllers, direct_kernel)
        for disk in dom.findall("devices/disk")
        if disk.get("device", "disk") == "disk"
    ]
    iothreads = dom.findtext("iothreads")
    marker = dom.find(f"metadata/{{{MARKER_NS}}}canary")
    return DomainShape(
        name=dom.findtext("name", ""),
        type=dom.get("type", ""),
        machine=ostype.get("machine") if (ostype := dom.find("os/type")) is not None else None,
        iothreads=int(iothreads) if iothreads and iothreads.strip().isdigit() else 0,
        disks=tuple(disks),
        marker=dict(marker.attrib) if marker is not None else None,
    )


def _disk(disk: ET.Element, controllers: dict[str, ET.Element], direct_kernel: bool) -> DiskShape:
    target = disk.find("target")
    driver = disk.find("driver")
    source = disk.find("source")
    address = disk.find("address")
    bus_attr = target.get("bus", "") if target is not None else ""
    bus = BUSES.get(bus_attr, bus_attr)
    iothread = driver.get("iothread") if driver is not None else None
    queues = driver.get("queues") if driver is not None else None
    if bus_attr == "scsi":
        ctrl = controllers.get(address.get("controller", "0") if address is not None else "0")
        cdriver = ctrl.find("driver") if ctrl is not None else None
        if ctrl is not None and ctrl.get("model") not in (None, "virtio-scsi"):
            bus = f"scsi ({ctrl.get('model')})"
        if cdriver is not None:
            iothread = iothread or cdriver.get("iothread")
            queues = queues or cdriver.get("queues")
    path = None
    if source is not None:
        path = source.get("file") or source.get("dev") or source.get("name") or source.get("volume")
    return DiskShape(
        dev=target.get("dev", "") if target is not None else "",
        bus=bus,
        cache=driver.get("cache") if driver is not None else None,
        io=driver.get("io") if driver is not None else None,
        iothread=iothread,
        queues=int(queues) if queues and queues.isdigit() else None,
        source=path,
        source_type=disk.get("type", "file"),
        boot=disk.find("boot") is not None and not direct_kernel,
        address=dict(address.attrib) if address is not None else {},
        serial=disk.findtext("serial"),
    )
