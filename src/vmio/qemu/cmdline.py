"""What a running QEMU's command line says: its name, QMP socket, iothreads, vCPUs and disks.

Options are QEMU's ``key=value`` lists (a comma inside a value is written twice; the first item may be
a bare value, such as ``unix:PATH`` for ``-qmp``) or JSON objects (``-device {"driver": ...}``, as libvirt
writes them). Disks are followed from the guest device (``-device ...,drive=X``) through its format node
(``-blockdev``/``-drive``) to the file or block device that holds the data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QMP_CONTROL = "control"
DISK_DEVICES = {
    "virtio-blk-pci": "virtio-blk",
    "virtio-blk-device": "virtio-blk",
    "scsi-hd": "virtio-scsi",
    "scsi-block": "virtio-scsi",
    "nvme": "nvme",
}


@dataclass(frozen=True)
class CmdDisk:
    """One guest disk: its device id, the node or drive behind it, the host path, bus and iothread."""

    device_id: str | None
    drive: str
    path: str | None
    bus: str
    iothread: str | None = None
    vq_mapping: bool = False


@dataclass(frozen=True)
class Cmdline:
    argv: tuple[str, ...]
    name: str | None
    accel: str | None
    vcpus: int | None
    qmp: str | None
    iothreads: tuple[str, ...] = ()
    disks: tuple[CmdDisk, ...] = field(default_factory=tuple)


def split_opts(text: str, implied: str = "") -> dict[str, Any]:
    """``'virtio-blk-pci,drive=d0,id=x'`` → ``{implied: 'virtio-blk-pci', 'drive': 'd0', 'id': 'x'}``.

    A JSON object is decoded as is. ``,,`` is a literal comma. A bare word after the first is a flag
    (``server`` → ``{'server': 'on'}``).
    """
    if text.lstrip().startswith("{"):
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    items, cur, i = [], "", 0
    while i < len(text):
        if text[i] == ",":
            if text[i + 1 : i + 2] == ",":
                cur += ","
                i += 2
                continue
            items.append(cur)
            cur = ""
        else:
            cur += text[i]
        i += 1
    items.append(cur)
    out: dict[str, Any] = {}
    for n, item in enumerate(items):
        key, sep, value = item.partition("=")
        if sep:
            out[key] = value
        elif n == 0 and implied:
            out[implied] = item
        elif item:
            out[item.removeprefix("no")] = "off" if item.startswith("no") else "on"
    return out


def options(argv: tuple[str, ...], flag: str) -> list[str]:
    """Every value given to ``flag`` (``-flag VALUE``; ``--flag`` is the same option)."""
    return [argv[i + 1] for i in range(len(argv) - 1) if argv[i] in (flag, "-" + flag)]


def parse(argv: tuple[str, ...]) -> Cmdline:
    name = _first(argv, "-name", "guest")
    accel = _first(argv, "-accel", "accel") or split_opts(_last(argv, "-machine"), "type").get("accel")
    if accel is None and "-enable-kvm" in argv:
        accel = "kvm"
    smp = split_opts(_last(argv, "-smp"), "cpus").get("cpus")
    objects = [split_opts(o, "qom-type") for o in options(argv, "-object")]
    iothreads = tuple(o["id"] for o in objects if o.get("qom-type") == "iothread" and "id" in o)
    return Cmdline(
        argv=argv,
        name=name.split(",")[0] if name else None,
        accel=accel,
        vcpus=int(smp) if smp and str(smp).isdigit() else (1 if "-smp" not in argv else None),
        qmp=qmp_socket(argv),
        iothreads=iothreads,
        disks=tuple(disks(argv)),
    )


def _first(argv: tuple[str, ...], flag: str, implied: str) -> str | None:
    values = options(argv, flag)
    found = split_opts(values[0], implied).get(implied) if values else None
    return str(found) if found else None


def _last(argv: tuple[str, ...], flag: str) -> str:
    values = options(argv, flag)
    return values[-1] if values else ""


def qmp_socket(argv: tuple[str, ...]) -> str | None:
    """The unix socket of a QMP monitor: ``-qmp unix:PATH`` or a socket chardev used by ``-mon mode=control``."""
    for flag in ("-qmp", "-qmp-pretty"):
        for value in options(argv, flag):
            where = split_opts(value, "addr").get("addr", "")
            if where.startswith("unix:"):
                return str(where[len("unix:") :])
    chardevs = {}
    for value in options(argv, "-chardev"):
        opts = split_opts(value, "backend")
        if opts.get("backend") == "socket" and "path" in opts and "id" in opts:
            chardevs[opts["id"]] = opts["path"]
    for value in options(argv, "-mon"):
        opts = split_opts(value, "chardev")
        if opts.get("mode") == QMP_CONTROL and opts.get("chardev") in chardevs:
            return str(chardevs[opts["chardev"]])
    return None


def disks(argv: tuple[str, ...]) -> list[CmdDisk]:
    nodes: dict[str, tuple[str, Any, Any]] = {}  # node-name or drive id → (driver, filename, child node)
    for value in options(argv, "-blockdev"):
        opts = split_opts(value, "driver")
        child: Any = opts.get("file")
        driver, filename = str(opts.get("driver")), opts.get("filename")
        if isinstance(child, dict):  # an inline protocol node
            driver, filename, child = str(child.get("driver")), child.get("filename"), None
        nodes[str(opts.get("node-name"))] = (driver, filename, child)
    out = []
    for value in options(argv, "-drive"):
        opts = split_opts(value, "file")
        drive_id = str(opts.get("id") or f"drive{len(nodes)}")
        nodes[drive_id] = ("drive", opts.get("file"), None)
        if opts.get("if") == "virtio":
            out.append(CmdDisk(None, drive_id, opts.get("file"), "virtio-blk"))
    controllers = {}
    devices = [split_opts(d, "driver") for d in options(argv, "-device")]
    for dev in devices:
        if str(dev.get("driver", "")).startswith("virtio-scsi") and "id" in dev:
            controllers[dev["id"]] = dev.get("iothread")
    for dev in devices:
        driver = str(dev.get("driver"))
        if driver == "vfio-pci":
            out.append(CmdDisk(dev.get("id"), "", dev.get("host"), "vfio"))
            continue
        if driver not in DISK_DEVICES or "drive" not in dev:
            continue
        drive = str(dev["drive"])
        path, protocol = _follow(nodes, drive)
        bus = (
            "block"
            if DISK_DEVICES[driver] == "virtio-blk" and protocol == "host_device"
            else DISK_DEVICES[driver]
        )
        iothread = dev.get("iothread")
        if bus == "virtio-scsi":
            iothread = controllers.get(str(dev.get("bus", "")).split(".")[0])
        mapping = dev.get("iothread-vq-mapping")
        if isinstance(mapping, list) and mapping:
            iothread = str(mapping[0].get("iothread"))
        out.append(CmdDisk(dev.get("id"), drive, path, bus, iothread, bool(mapping)))
    return out


def _follow(nodes: dict[str, tuple[str, Any, Any]], name: str) -> tuple[str | None, str | None]:
    """(host path, protocol driver) under node ``name``, following ``file=`` children."""
    seen = set()
    while name in nodes and name not in seen:
        seen.add(name)
        driver, filename, child = nodes[name]
        if filename:
            return str(filename), driver
        if child is None:
            break
        name = str(child)
    return None, None


def is_qemu(argv: tuple[str, ...]) -> bool:
    return bool(argv) and Path(argv[0]).name.startswith("qemu-system-")
