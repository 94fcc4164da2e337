"""Canary domains: vmio's guest (with fio and the QEMU guest agent) defined in libvirt with a disk shaped
like a production domain's, measured as that domain would be, and removed without a trace.

Files: ``/var/lib/vmio/libvirt/NAME/`` (root, group ``libvirt-qemu``, mode 0750: the ``libvirt-qemu`` user
reads it, no other unprivileged user can read or write it) holds the kernel, the initramfs, the domain's
XML, its console log and ``canary.json``; the backing file, when vmio creates it, is where ``--backing``
says (its folders must let ``libvirt-qemu`` through and no other user write them). The domain carries
vmio's marker in ``<metadata>``; ``canary.json`` says ``defining`` until the canary is up, so a canary left
by a killed vmio (its pid gone) is found and removed by the next ``define`` or ``undefine``.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import re
import shutil
import stat
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

from vmio.errors import GuestBootError, InputError, ToolError, UnsafeTargetError
from vmio.libvirt import domxml, initrd
from vmio.libvirt.domxml import MARKER_NS, DiskShape
from vmio.libvirt.virsh import AGENT_CHANNEL, Virsh, is_local
from vmio.system.process import alive
from vmio.system.safety import is_block_device

ROOT = Path("/var/lib/vmio/libvirt")
VMIO_AGENT_PORT = "vmio.agent"  # the port vmio's guest agent writes its memory figures to (guest/init.sh)
QEMU_USER = "libvirt-qemu"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
BUSES = ("virtio-blk", "virtio-scsi")
CACHES = ("none", "writeback", "writethrough", "directsync", "unsafe")
AIOS = ("native", "io_uring", "threads")
ET.register_namespace("vmio", MARKER_NS)


@dataclass(frozen=True)
class Shape:
    """The canary's disk: what ``--like`` copies from a domain's disk, or the options say."""

    bus: str = "virtio-blk"
    cache: str = "none"  # or "default": libvirt's (QEMU's writeback), as a --like domain without one has
    aio: str = "native"
    iothreads: int = 0
    iothread: int | None = None  # which iothread the disk runs in (None: the first, when there are any)
    queues: int | None = None

    def check(self) -> None:
        if self.bus not in BUSES:
            raise InputError(f"bus {self.bus!r} is not one a canary can take; use {' or '.join(BUSES)}")
        if self.cache not in (*CACHES, "default"):
            raise InputError(
                f"cache {self.cache!r} is not a libvirt cache mode; use one of {', '.join(CACHES)}"
            )
        if self.aio not in AIOS:
            raise InputError(f"aio {self.aio!r} is not a libvirt io mode; use one of {', '.join(AIOS)}")
        if self.aio == "native" and self.cache not in ("none", "directsync"):
            raise InputError(
                f"aio 'native' needs cache 'none' or 'directsync' (QEMU opens the file O_DIRECT), not "
                f"{self.cache!r}; use --aio threads or io_uring"
            )
        if self.iothread is not None and not 1 <= self.iothread <= self.iothreads:
            raise InputError(
                f"iothread {self.iothread} is not one of the domain's {self.iothreads} iothreads"
            )


def shape_like(disk: DiskShape, iothreads: int, domain: str) -> Shape:
    """The shape of ``domain``'s disk ``disk``, as a canary can take it."""
    if disk.bus not in BUSES:
        raise InputError(
            f"domain {domain!r}'s disk {disk.dev} is on bus {disk.bus!r}; a canary takes {' or '.join(BUSES)}"
        )
    return Shape(
        bus=disk.bus,
        cache=disk.cache or "default",
        aio=disk.io or "threads",
        iothreads=iothreads,
        iothread=int(disk.iothread) if disk.iothread and disk.iothread.isdigit() else None,
        queues=disk.queues,
    )


@dataclass(frozen=True)
class Canary:
    """A defined canary: its name, URI, folder, backing and whether vmio made the backing file."""

    name: str
    uri: str
    folder: str
    backing: str
    made_backing: bool
    domain_type: str
    shape: Shape
    like: str | None = None
    memory: int = 384 << 20

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "shape": asdict(self.shape)}


def define(
    virsh: Virsh,
    name: str,
    backing: str,
    shape: Shape,
    *,
    domain_type: str,
    size: int | None = None,
    like: str | None = None,
    memory: int = 384 << 20,
    kernel: Path,
    base_initrd: Path,
    root: Path = ROOT,
    boot_timeout: float = 120.0,
) -> Canary:
    """Define and start canary ``name``; it is removed again if any step fails (or vmio is killed)."""
    if not NAME.match(name):
        raise InputError(f"canary name {name!r} is not accepted; use letters, digits, '.', '_' or '-'")
    if not is_local(virsh.uri):
        raise InputError(
            f"--uri {virsh.uri!r} is another host: a canary's files must be on the host that runs it; "
            f"run 'vmio guest define' there (a libvirt target then reaches the canary by this URI)"
        )
    sweep(virsh, root)
    shape.check()
    if virsh.exists(name):
        raise InputError(f"a domain named {name!r} already exists on {virsh.uri}; pick another name")
    folder = root / name
    if folder.exists():
        raise InputError(f"{str(folder)!r} already exists; run 'vmio guest undefine {name}' first")
    made = not is_block_device(backing)
    if made:
        _check_backing_file(Path(backing))
    if memory < 128 << 20:
        raise InputError(f"--memory {memory >> 20} MiB is too little for the guest; give at least 128M")
    canary = Canary(name, virsh.uri, str(folder), backing, made, domain_type, shape, like, memory)
    _make_folder(root, folder)
    try:
        _record(folder, canary, "defining")
        if made:
            _make_backing(Path(backing), size or (1 << 30))
        shutil.copyfile(kernel, folder / "vmlinuz")
        initrd.write(base_initrd, folder / "initramfs.img", virsh.runner)
        for f in ("vmlinuz", "initramfs.img"):
            _own(folder / f, 0o640)
        text = domain_xml(canary, folder)
        (folder / "domain.xml").write_text(text)
        virsh.run("define", str(folder / "domain.xml"))
        virsh.run("start", name)
        _wait_for_agent(virsh, name, folder, boot_timeout)
        _record(folder, canary, "defined")
    except BaseException:
        with contextlib.suppress(Exception):
            _remove(virsh, name, folder, canary.backing if made else None)
        raise
    return canary


def undefine(virsh: Virsh, name: str, root: Path = ROOT) -> list[str]:
    """Remove canary ``name``: its domain, its backing file when vmio made it, its folder. What was removed.

    What to delete is read from vmio's own record in ``root`` (root's alone), never from the domain's XML,
    which anyone allowed to define domains could have written."""
    removed = sweep(virsh, root)
    folder = root / name
    recorded = _read_record(folder)
    if virsh.exists(name):
        if domxml.parse(virsh.run("dumpxml", name).stdout, f"domain {name!r}").marker is None:
            raise UnsafeTargetError(
                f"domain {name!r} on {virsh.uri} is not a vmio canary (no vmio marker in its <metadata>); "
                f"vmio undefines only the domains it defined"
            )
    elif recorded is None:
        if name in removed:
            return removed
        raise InputError(f"no canary named {name!r} on {virsh.uri} (no such domain, no {str(folder)!r})")
    _remove(virsh, name, folder, _made_backing(recorded))
    return [*removed, name]


def sweep(virsh: Virsh, root: Path = ROOT) -> list[str]:
    """Remove canaries a killed vmio left half-made (``canary.json`` says ``defining``, its pid is gone),
    and canary domains on this URI whose folder is gone (their backing, unrecorded, is left). The names
    removed."""
    removed = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        record = _read_record(folder)
        if record is None or record.get("state") != "defining" or alive(int(str(record.get("pid", 0)))):
            continue
        if record.get("uri") != virsh.uri:
            continue
        _remove(virsh, folder.name, folder, _made_backing(record))
        removed.append(folder.name)
    for name in virsh.domains():
        done = virsh.run("dumpxml", name, check=False)
        if done.returncode != 0 or domxml.parse(done.stdout).marker is None:
            continue
        if NAME.match(name) and not (root / name / "canary.json").exists():
            _remove(virsh, name, root / name, None)
            removed.append(name)
    return removed


def _made_backing(record: dict[str, object] | None) -> str | None:
    """The backing file vmio's record says vmio created (None: none, or a device)."""
    return str(record["backing"]) if record and record.get("made_backing") and record.get("backing") else None


def domain_xml(canary: Canary, folder: Path) -> str:
    """The canary's libvirt XML: vmio's guest booted directly, one disk shaped as asked, the agent's
    channel, a console log in its folder, no network."""
    shape = canary.shape
    dom = ET.Element("domain", type=canary.domain_type)
    ET.SubElement(dom, "name").text = canary.name
    meta = ET.SubElement(dom, "metadata")
    ET.SubElement(
        meta,
        f"{{{MARKER_NS}}}canary",
        {
            "folder": str(folder),
            "backing": canary.backing,
            "made_backing": "yes" if canary.made_backing else "no",
            "like": canary.like or "",
        },
    )
    ET.SubElement(dom, "memory", unit="KiB").text = str(canary.memory >> 10)
    ET.SubElement(dom, "vcpu").text = "1"
    if shape.iothreads:
        ET.SubElement(dom, "iothreads").text = str(shape.iothreads)
    os_ = ET.SubElement(dom, "os")
    ET.SubElement(os_, "type", arch="x86_64", machine="pc").text = "hvm"
    ET.SubElement(os_, "kernel").text = str(folder / "vmlinuz")
    ET.SubElement(os_, "initrd").text = str(folder / "initramfs.img")
    ET.SubElement(os_, "cmdline").text = f"console=ttyS0 panic=-1 quiet rdinit={initrd.RDINIT} vmio.agent=1"
    # ACPI as any installed domain has it: without its HPET and PM timer tables the guest cannot calibrate its
    # TSC under TCG, and its clocks then count jiffies (4 ms steps: every latency 0, 4000, 8000 µs...)
    features = ET.SubElement(dom, "features")
    ET.SubElement(features, "acpi")
    ET.SubElement(features, "apic")
    ET.SubElement(dom, "on_poweroff").text = "destroy"
    ET.SubElement(dom, "on_crash").text = "destroy"
    devices = ET.SubElement(dom, "devices")
    thread = str(shape.iothread or 1) if shape.iothreads else None
    driver = {"name": "qemu", "type": "raw", "io": shape.aio}
    if shape.cache != "default":  # "default": the --like domain names none, so neither does the canary
        driver["cache"] = shape.cache
    if shape.bus == "virtio-scsi":
        ctrl = ET.SubElement(devices, "controller", type="scsi", index="0", model="virtio-scsi")
        cdriver = {k: v for k, v in (("iothread", thread), ("queues", _str(shape.queues))) if v}
        if cdriver:
            ET.SubElement(ctrl, "driver", cdriver)
    else:
        driver.update({k: v for k, v in (("iothread", thread), ("queues", _str(shape.queues))) if v})
    kind = "file" if canary.made_backing else "block"
    disk = ET.SubElement(devices, "disk", type=kind, device="disk")
    ET.SubElement(disk, "driver", driver)
    ET.SubElement(disk, "source", {"file" if kind == "file" else "dev": canary.backing})
    target = ("vda", "virtio") if shape.bus == "virtio-blk" else ("sda", "scsi")
    ET.SubElement(disk, "target", dev=target[0], bus=target[1])
    ET.SubElement(disk, "serial").text = "vmio-canary"
    channel = ET.SubElement(devices, "channel", type="unix")
    ET.SubElement(channel, "target", type="virtio", name=AGENT_CHANNEL)
    serial = ET.SubElement(devices, "serial", type="file")
    ET.SubElement(serial, "source", path=str(folder / "console.log"))
    # vmio's own agent (page-cache figures, for memory balancing of canaries) on its port, and a balloon
    # whose statistics libvirt reads (dommemstat)
    ET.SubElement(
        ET.SubElement(devices, "channel", type="unix"), "target", type="virtio", name=VMIO_AGENT_PORT
    )
    ET.SubElement(ET.SubElement(devices, "memballoon", model="virtio"), "stats", period="1")
    return ET.tostring(dom, encoding="unicode")


def _str(value: int | None) -> str | None:
    return str(value) if value else None


def _wait_for_agent(virsh: Virsh, name: str, folder: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if virsh.state(name) != "running":
            break
        with contextlib.suppress(ToolError):
            virsh.agent(name, "guest-ping", timeout=5)
            return
        time.sleep(1)
    console = folder / "console.log"
    tail = console.read_text(errors="replace")[-3000:] if console.exists() else ""
    raise GuestBootError(f"canary {name!r}: its guest agent did not answer within {timeout:g} s", output=tail)


def _qemu_group() -> tuple[int, int]:
    """(uid, gid) of libvirt's QEMU user: its own group when it has one, else its primary group."""
    try:
        user = pwd.getpwnam(QEMU_USER)
    except KeyError:
        raise InputError(f"there is no {QEMU_USER!r} user; install libvirt-daemon-system") from None
    try:
        return user.pw_uid, grp.getgrnam(QEMU_USER).gr_gid
    except KeyError:
        return user.pw_uid, user.pw_gid


def _make_folder(root: Path, folder: Path) -> None:
    root.mkdir(parents=True, exist_ok=True, mode=0o755)
    _let_through(root.parent)
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise UnsafeTargetError(f"{str(root)!r} is not a folder only root can write; remove or fix it")
    folder.mkdir(mode=0o750)
    _own(folder, 0o750)


def _let_through(parent: Path) -> None:
    """libvirt's QEMU user must pass through ``/var/lib/vmio``, which vmio's scratch folders make 0700
    (``system.files.scratch_home``): a root-owned folder there gets search permission only (0711: no
    listing), so the private folders inside it stay private."""
    info = parent.lstat()
    if stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and not info.st_mode & 0o001:
        os.chmod(parent, stat.S_IMODE(info.st_mode) | 0o011)


def _own(path: Path, mode: int) -> None:
    os.chown(path, 0, _qemu_group()[1], follow_symlinks=False)
    os.chmod(path, mode)


def _check_backing_file(path: Path) -> None:
    """A backing file vmio creates: it must not exist, its folders must let libvirt's QEMU user through,
    and none may be writable by another unprivileged user (unless sticky and root's)."""
    if not path.is_absolute():
        raise InputError(f"--backing {str(path)!r} is not an absolute path")
    if path.exists() or path.is_symlink():
        raise UnsafeTargetError(
            f"--backing {str(path)!r} exists and is not a block device; vmio creates the backing file "
            f"itself and will not take over an existing one: name a new path"
        )
    uid, gid = _qemu_group()
    for folder in reversed(path.parents):
        try:
            info = folder.lstat()
        except FileNotFoundError:
            raise InputError(f"--backing {str(path)!r}: folder {str(folder)!r} does not exist") from None
        if not stat.S_ISDIR(info.st_mode):
            raise UnsafeTargetError(f"--backing {str(path)!r}: {str(folder)!r} is not a plain folder")
        if info.st_uid != 0 or (info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX):
            raise UnsafeTargetError(
                f"--backing {str(path)!r}: folder {str(folder)!r} can be written by a user other than root; "
                f"put the backing file where only root can write"
            )
        through = info.st_mode & 0o001 or (info.st_gid == gid and info.st_mode & 0o010)
        if not through and info.st_uid != uid:
            raise InputError(
                f"--backing {str(path)!r}: {QEMU_USER} cannot enter folder {str(folder)!r} "
                f"(mode {stat.S_IMODE(info.st_mode):o}); use a folder it can pass through"
            )


def _make_backing(path: Path, size: int) -> None:
    """A new backing file of ``size`` bytes, written through (zeros): space only allocated (fallocate's
    unwritten extents) or a hole is read back as zeros by the filesystem without touching the disk, so a
    canary's reads would never reach the device it is meant to measure."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)  # no space: the error comes before anything is written
        chunk = bytes(BACKING_CHUNK)
        with open(fd, "wb", closefd=False) as out:  # a file object writes each chunk whole
            for start in range(0, size, BACKING_CHUNK):
                out.write(chunk[: min(BACKING_CHUNK, size - start)])
        os.fsync(fd)
    finally:
        os.close(fd)


BACKING_CHUNK = 1 << 20


def _record(folder: Path, canary: Canary, state: str) -> None:
    data = {**canary.to_json(), "state": state, "pid": os.getpid()}
    tmp = folder / "canary.json.tmp"
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(folder / "canary.json")


def _read_record(folder: Path) -> dict[str, object] | None:
    try:
        data = json.loads((folder / "canary.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _remove(virsh: Virsh, name: str, folder: Path, backing: str | None) -> None:
    if virsh.exists(name):
        marker = domxml.parse(virsh.run("dumpxml", name).stdout).marker
        if marker is not None:  # never a domain vmio did not define
            if virsh.state(name) != "shut off":
                virsh.run("destroy", name, check=False)
            virsh.run("undefine", name)
    if backing is not None:
        with contextlib.suppress(FileNotFoundError):
            if not is_block_device(backing):
                os.unlink(backing)
    if (folder / "canary.json").exists():
        shutil.rmtree(folder, ignore_errors=True)
