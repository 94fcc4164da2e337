"""Which block device serves a path: the device itself, the one under a file, through loop devices."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def device_chain(
    path: str | Path, sys_root: str | Path = "/sys", proc_root: str | Path = "/proc"
) -> list[str]:
    """Kernel names from the nearest block device to the one that finally stores the data.

    A block device gives itself; a file gives the device of its filesystem. A loop device is followed
    to its backing file's device (a file on an ext4 on ``loop0`` whose image lives on ``vda`` gives
    ``['loop0', 'vda']``). Unknown devices give an empty list.
    """
    chain: list[str] = []
    name = _device_of(Path(path), Path(sys_root), Path(proc_root))
    while name and name not in chain:
        chain.append(name)
        backing = Path(sys_root) / "block" / _disk_of(name, Path(sys_root)) / "loop" / "backing_file"
        if not name.startswith("loop") or not backing.exists():
            break
        name = _device_of(Path(backing.read_text().strip()), Path(sys_root), Path(proc_root))
    return chain


def reported_device(path: str | Path, chain: list[str]) -> str | None:
    """The device whose figures a run reports for ``path``, given ``device_chain(path)``: a block device
    itself (a loop device target is measured as that loop device), a file's storing device at the end of
    the chain (a file on an ext4 on ``loop0`` over ``vda`` reports ``vda``)."""
    nearest = chain[:1] if stat.S_ISBLK(_mode(path)) else chain[-1:]
    return nearest[0] if nearest else None


def _mode(path: str | Path) -> int:
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


def _device_of(path: Path, sys_root: Path, proc_root: Path) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
    link = sys_root / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}"
    if link.exists():
        return link.resolve().name
    return _mount_source(path, proc_root)


def _mount_source(path: Path, proc_root: Path) -> str | None:
    """The /dev name mounted at the longest mount point above ``path`` (for filesystems like btrfs)."""
    best, source = "", None
    target = str(path.resolve())
    for line in (proc_root / "self" / "mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        point = parts[1]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best) and parts[0].startswith("/dev/"):
            best, source = point, Path(parts[0]).resolve().name
    return source


def _disk_of(name: str, sys_root: Path) -> str:
    """A partition's parent disk (``vda1`` → ``vda``); a disk gives itself."""
    if (sys_root / "block" / name).exists():
        return name
    link = sys_root / "class" / "block" / name
    return link.resolve().parent.name if link.exists() else name


def is_rotational(name: str, sys_root: str | Path = "/sys") -> bool | None:
    flag = Path(sys_root) / "block" / _disk_of(name, Path(sys_root)) / "queue" / "rotational"
    return flag.read_text().strip() == "1" if flag.exists() else None


def in_use(name: str, sys_root: str | Path = "/sys", proc_root: str | Path = "/proc") -> bool:
    """True when the device or one of its partitions is mounted or used as swap by this host."""
    disk = _disk_of(name, Path(sys_root))
    family = {disk} | {p.name for p in (Path(sys_root) / "block" / disk).glob(f"{disk}*")}
    for table in ("self/mounts", "swaps"):
        path = Path(proc_root) / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            source = line.split(" ", 1)[0]
            if source.startswith("/dev/") and Path(source).resolve().name in family:
                return True
    return False
