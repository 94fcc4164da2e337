"""The storage under a path, as a run records it: the block device it lands on, resolved through loop
devices (to their backing file's filesystem and its device), partitions (to their disk) and device-mapper
or md devices (to their members), down to the disks that store the data, each with what sysfs says of
it (model, firmware, rotational, I/O scheduler, ``nr_requests``, logical block size); and for a file, the
filesystem it is on and its mount options (``/proc/self/mountinfo``).

Every reader takes a ``sys_root`` and ``proc_root``, so device-mapper stacks are tested on a synthetic
``/sys`` (hosts without one have none to test on).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

# what a disk's facts hold, in order; ``show --json`` prints them at the top level of each point
DISK_FIELDS = ("disk", "model", "firmware", "rotational", "scheduler", "nr_requests", "logical_block_size")
DEPTH = 16  # a stack deeper than this is a loop in sysfs (a loop device over a file on itself)


@dataclass(frozen=True)
class Mount:
    """A line of mountinfo: where, which filesystem, its options, its source."""

    point: str
    fstype: str
    options: str
    source: str


def of_path(
    path: str | Path, sys_root: str | Path = "/sys", proc_root: str | Path = "/proc"
) -> dict[str, object]:
    """The storage facts of ``path`` (a file, or a block device): ``path``, ``device`` (the nearest block
    device's kernel name), ``filesystem``, ``mount_options`` and ``mountpoint`` (a file's; None for a block
    device), ``chain`` (kernel names from the nearest device to the disks, loop backings followed) and
    ``disks`` (each disk's facts: ``DISK_FIELDS``)."""
    sys_p, proc_p = Path(sys_root), Path(proc_root)
    out: dict[str, object] = {"path": str(path), "device": None, "filesystem": None, "mount_options": None}
    out["mountpoint"] = None
    try:
        st = os.stat(path)
    except OSError:
        out.update(chain=[], disks=[])
        return out
    block = stat.S_ISBLK(st.st_mode)
    name = _name(st.st_rdev if block else st.st_dev, sys_p)
    backing = loop_backing(name, sys_p) if block and name else None  # a loop device: its file's filesystem
    mount = mount_of(Path(backing), proc_p) if backing else None if block else mount_of(Path(path), proc_p)
    if mount is not None:
        out.update(filesystem=mount.fstype, mount_options=mount.options, mountpoint=mount.point)
    if backing:
        out["backing_file"] = backing
    if name is None and mount is not None and mount.source.startswith("/dev/"):
        name = Path(mount.source).resolve().name  # btrfs and the like: a device number sysfs does not list
    out["device"] = name
    chain: list[str] = []
    disks: list[str] = []
    if name is not None:
        _resolve(name, sys_p, proc_p, chain, disks, 0)
    out["chain"] = chain
    out["disks"] = [disk_facts(d, sys_p) for d in disks]
    return out


def disks_under(name: str, sys_root: str | Path = "/sys", proc_root: str | Path = "/proc") -> list[str]:
    """The whole disks under block device ``name`` (see ``_resolve``)."""
    chain: list[str] = []
    disks: list[str] = []
    _resolve(name, Path(sys_root), Path(proc_root), chain, disks, 0)
    return disks


def loop_backing(name: str, sys_root: Path) -> str | None:
    """The file a loop device serves (None: not a loop device, or none attached)."""
    return _read(block_dir(name, sys_root) / "loop" / "backing_file")


def _name(dev: int, sys_root: Path) -> str | None:
    link = sys_root / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}"
    return link.resolve().name if link.exists() else None


def _resolve(
    name: str, sys_root: Path, proc_root: Path, chain: list[str], disks: list[str], depth: int
) -> None:
    """Walk from ``name`` to the disks under it: a loop device to its backing file's device, a partition to
    its disk, a dm or md device to its members (``slaves``); a disk ends the walk."""
    if name in chain or depth > DEPTH:
        return
    chain.append(name)
    base = block_dir(name, sys_root)
    backing = base / "loop" / "backing_file"
    if backing.exists():
        try:
            st = os.stat(backing.read_text().strip())
        except OSError:
            return  # the backing file is gone (deleted while attached)
        under = _name(st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev, sys_root)
        if under is not None:
            _resolve(under, sys_root, proc_root, chain, disks, depth + 1)
        return
    if (base / "partition").exists():
        _resolve(base.parent.name, sys_root, proc_root, chain, disks, depth + 1)
        return
    members = sorted(p.name for p in (base / "slaves").iterdir()) if (base / "slaves").is_dir() else []
    for member in members:
        _resolve(member, sys_root, proc_root, chain, disks, depth + 1)
    if not members and name not in disks:
        disks.append(name)


def block_dir(name: str, sys_root: Path) -> Path:
    """A block device's folder in sysfs (a partition's lies inside its disk's)."""
    link = sys_root / "class" / "block" / name
    if link.exists():
        return link.resolve()
    return sys_root / "block" / name


def disk_facts(name: str, sys_root: str | Path = "/sys") -> dict[str, object]:
    """What sysfs says of a disk: its model and firmware where the driver gives them (SCSI/SATA ``rev``,
    NVMe ``firmware_rev``; virtio gives none), whether it rotates, its I/O scheduler (the one in use),
    ``nr_requests`` and logical block size."""
    base = block_dir(name, Path(sys_root))
    queue = base / "queue"
    model = _read(base / "device" / "model")  # as lsblk's MODEL (virtio's vendor is a PCI id, not a name)
    firmware = _read(base / "device" / "firmware_rev") or _read(base / "device" / "rev")
    rotational = _read(queue / "rotational")
    return {
        "disk": name,
        "model": model,
        "firmware": firmware,
        "rotational": None if rotational is None else rotational == "1",
        "scheduler": scheduler(_read(queue / "scheduler")),
        "nr_requests": _int(_read(queue / "nr_requests")),
        "logical_block_size": _int(_read(queue / "logical_block_size")),
    }


def scheduler(text: str | None) -> str | None:
    """The scheduler in use from ``queue/scheduler`` (``none [mq-deadline] kyber`` → ``mq-deadline``)."""
    if text is None:
        return None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text.split()[0] if text.split() else None


def mount_of(path: Path, proc_root: Path) -> Mount | None:
    """The mount that holds ``path``: the longest mount point above it in ``/proc/self/mountinfo`` (the
    last one mounted there when several are)."""
    try:
        lines = (proc_root / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    try:
        target = os.path.realpath(path)
    except OSError:  # a name changing under us (another user's swap): no mount rather than a wrong one
        return None
    best: Mount | None = None
    for line in lines:
        mine, _, theirs = line.partition(" - ")
        fields, rest = mine.split(), theirs.split()
        if len(fields) < 6 or len(rest) < 2:
            continue
        point = _unescape(fields[4])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best.point)):
            options = fields[5].split(",")  # the mount's; then the filesystem's own, as findmnt joins them
            options += [o for o in (rest[2].split(",") if len(rest) > 2 else []) if o not in options]
            best = Mount(point, rest[0], ",".join(options), _unescape(rest[1]))
    return best


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (``\\040``)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text


def _read(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def rbd_facts(pool: str, image: str, conf: str | Path) -> dict[str, object]:
    """An rbd target's storage: its pool, image and the cluster's id (``fsid`` in its ceph.conf; None
    where the conf does not name it)."""
    fsid = None
    try:
        for line in Path(conf).read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip().replace("_", " ") == "fsid":
                fsid = value.strip()
    except OSError:
        pass
    return {"path": f"rbd:{pool}/{image}", "pool": pool, "image": image, "cluster_id": fsid}


__all__ = ["DISK_FIELDS", "Mount", "block_dir", "disk_facts", "mount_of", "of_path", "rbd_facts", "scheduler"]
