"""A VM disk configuration (what ``advise`` recommends), written as a QEMU argv fragment and as libvirt
domain XML fragments."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass

NODE = "disk0"
# libvirt's <driver><iothreads><iothread id=.../> (QEMU's iothread-vq-mapping), "Since 10.0.0 (QEMU 9.0, virtio
# disks only)" in libvirt's formatdomain docs; older schemas (Debian 12's libvirt 9.0.0) refuse the element
LIBVIRT_VQ_MAPPING = (10, 0, 0)


@dataclass(frozen=True)
class Config:
    """The recommended VM disk configuration."""

    name: str
    bus: str
    iothreads: int = 0
    vq_mapping: bool = False
    passthrough: str | None = None
    device: str | None = None
    pci_address: str | None = None
    image: str | None = None
    image_is_block: bool = False  # the image is a block device (host_device), not a file
    spread_over: tuple[str, ...] = ()
    cache: str = "none"
    aio: str = "native"


def qemu_args(config: Config) -> list[str]:
    """The QEMU arguments for one VM's disk: iothread objects, the block node, the device."""
    if config.passthrough == "vfio":
        return ["-device", f"vfio-pci,host={config.pci_address}"]
    args: list[str] = []
    for i in range(config.iothreads):
        args += ["-object", f"iothread,id=iothread{i}"]
    args += ["-blockdev", _blockdev(config)]
    if config.bus == "virtio-scsi":
        controller = "virtio-scsi-pci,id=scsi0" + (",iothread=iothread0" if config.iothreads else "")
        return [*args, "-device", controller, "-device", f"scsi-hd,bus=scsi0.0,drive={NODE}"]
    return [*args, "-device", _virtio_blk(config)]


def _blockdev(config: Config) -> str:
    if config.passthrough == "block":
        proto, filename = "host_device", device_path(config)
    elif config.image_is_block:
        proto, filename = "host_device", str(config.image)
    else:
        proto, filename = "file", str(config.image)
    direct = "on" if config.cache in ("none", "directsync") else "off"
    return (
        f"driver=raw,node-name={NODE},file.driver={proto},file.filename={filename},"
        f"file.aio={config.aio},cache.direct={direct}"
    )


def _virtio_blk(config: Config) -> str:
    if config.vq_mapping:
        mapping = [{"iothread": f"iothread{i}"} for i in range(config.iothreads)]
        spec = {"driver": "virtio-blk-pci", "drive": NODE, "iothread-vq-mapping": mapping}
        return json.dumps(spec, separators=(",", ":"))
    return f"virtio-blk-pci,drive={NODE}" + (",iothread=iothread0" if config.iothreads else "")


def device_path(config: Config) -> str:
    """The passed-through device's path: as given (``/dev/sdb``), or ``/dev/NAME`` for an inventory name."""
    device = str(config.device)
    return device if device.startswith("/") else f"/dev/{device}"


def maps_queues(config: Config, libvirt: tuple[int, int, int] | None) -> bool:
    """Whether the libvirt XML spreads the disk's queues over its iothreads: the config asks for it and the
    libvirt version (None: unknown, no libvirt here) is 10.0.0 or later."""
    return config.vq_mapping and (libvirt is None or libvirt >= LIBVIRT_VQ_MAPPING)


def libvirt_xml(config: Config, libvirt: tuple[int, int, int] | None = None) -> str:
    """``<iothreads>`` and ``<disk>`` (or ``<hostdev>`` for vfio, plus ``<controller>`` for virtio-scsi).

    The virtqueue mapping (``<driver><iothreads><iothread id=.../>``) needs libvirt 10.0 or later; for an
    older ``libvirt`` (Debian 12 has 9.0, whose schema refuses the element) the disk gets what that version
    takes: its queues on one iothread (``<driver queues="N" iothread="1">``)."""
    if config.passthrough == "vfio":
        return _text(_hostdev(str(config.pci_address)))
    parts = []
    if config.iothreads:
        count = ET.Element("iothreads")
        mapped = maps_queues(config, libvirt) or not config.vq_mapping
        count.text = str(config.iothreads if mapped else 1)
        parts.append(count)
    if config.bus == "virtio-scsi":
        controller = ET.Element("controller", type="scsi", index="0", model="virtio-scsi")
        if config.iothreads:
            ET.SubElement(controller, "driver", iothread="1")
        parts.append(controller)
    parts.append(_disk(config, maps_queues(config, libvirt)))
    return "\n".join(_text(p) for p in parts)


def _disk(config: Config, mapped: bool) -> ET.Element:
    block = config.passthrough == "block" or config.image_is_block
    disk = ET.Element("disk", type="block" if block else "file", device="disk")
    driver = ET.SubElement(disk, "driver", name="qemu", type="raw", cache=config.cache, io=config.aio)
    if config.vq_mapping:
        driver.set("queues", str(config.iothreads))
        if mapped:
            threads = ET.SubElement(driver, "iothreads")
            for i in range(config.iothreads):
                ET.SubElement(threads, "iothread", id=str(i + 1))
        else:
            driver.set("iothread", "1")
    elif config.iothreads and config.bus == "virtio-blk":
        driver.set("iothread", "1")
    if config.passthrough == "block":
        ET.SubElement(disk, "source", dev=device_path(config))
    elif block:
        ET.SubElement(disk, "source", dev=str(config.image))
    else:
        ET.SubElement(disk, "source", file=str(config.image))
    scsi = config.bus == "virtio-scsi"
    ET.SubElement(disk, "target", dev="sda" if scsi else "vda", bus="scsi" if scsi else "virtio")
    return disk


def _hostdev(pci: str) -> ET.Element:
    domain, bus, rest = pci.split(":")
    slot, function = rest.split(".")
    hostdev = ET.Element("hostdev", mode="subsystem", type="pci", managed="yes")
    source = ET.SubElement(hostdev, "source")
    ET.SubElement(
        source, "address", domain=f"0x{domain}", bus=f"0x{bus}", slot=f"0x{slot}", function=f"0x{function}"
    )
    return hostdev


def _text(element: ET.Element) -> str:
    ET.indent(element, space="  ")
    return ET.tostring(element, encoding="unicode")
