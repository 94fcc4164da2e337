"""Which block device serves a path: the device itself, the one under a file, through loop devices."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import ToolError
from vmio.system.process import Runner


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
    """The /dev name mounted at the longest mount point above ``path`` (for filesystems like btrfs); None
    when the filesystem there has no device (a file on tmpfs is on no disk, not on the root's)."""
    best, source = "", None
    target = str(path.resolve())
    for line in (proc_root / "self" / "mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        point = parts[1]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):  # the last of equal mount points is the one on top
            best = point
            source = Path(parts[0]).resolve().name if parts[0].startswith("/dev/") else None
    return source


def _disk_of(name: str, sys_root: Path) -> str:
    """A partition's parent disk (``vda1`` → ``vda``); a disk gives itself."""
    if (sys_root / "block" / name).exists():
        return name
    link = sys_root / "class" / "block" / name
    return link.resolve().parent.name if link.exists() else name


def disk_of(name: str, sys_root: str | Path = "/sys") -> str:
    """The disk a partition ``name`` is on (``vda1`` → ``vda``); a disk gives itself."""
    return _disk_of(name, Path(sys_root))


def is_rotational(name: str, sys_root: str | Path = "/sys") -> bool | None:
    flag = Path(sys_root) / "block" / _disk_of(name, Path(sys_root)) / "queue" / "rotational"
    return flag.read_text().strip() == "1" if flag.exists() else None


def in_use(
    name: str,
    sys_root: str | Path = "/sys",
    proc_root: str | Path = "/proc",
    dev_root: str | Path = "/dev",
    vm_disks: Sequence[str] = (),
) -> bool:
    """True when the device is in use: see :func:`uses`."""
    return bool(uses(name, sys_root, proc_root, dev_root, vm_disks))


def uses(
    name: str,
    sys_root: str | Path = "/sys",
    proc_root: str | Path = "/proc",
    dev_root: str | Path = "/dev",
    vm_disks: Sequence[str] = (),
    runner: Runner | None = None,
    holder: str | None = None,
) -> list[str]:
    """What uses the device (empty: free). A device is in use when it or a partition of it holds data (a
    partition table, a filesystem or RAID signature), is mounted or swap, has a holder (LVM, dm, md), backs a
    loop device or a VM disk (a ``qemu-system-*`` process holds it open), or holds a file that backs one of
    those (a loop device's backing file, a VM disk image). ``vm_disks`` are VM disk paths known to the
    caller (a campaign's VM targets) whose QEMU is not running now. ``holder``: the device being judged
    through this one (a device-mapper or md device over it), which is not a use of its own."""
    sys_p, proc_p = Path(sys_root), Path(proc_root)
    disk = _disk_of(name, sys_p)
    family = {disk} | {
        p.name for p in (sys_p / "block" / disk).glob(f"{disk}*") if (p / "partition").exists()
    }
    found: list[str] = []
    for table in ("self/mounts", "swaps"):
        for line in _lines(proc_p / table):
            source = line.split(" ", 1)[0]
            if source.startswith("/dev/") and Path(source).resolve().name in family:
                where = "in use as swap" if table == "swaps" else f"mounted on {line.split()[1]}"
                found.append(f"{source} is {where}")
    for member in sorted(family):
        base = sys_p / "block" / disk / (member if member != disk else "")
        holders = base / "holders"
        others = sorted(h.name for h in holders.iterdir() if h.name != holder) if holders.is_dir() else []
        if others:
            found.append(f"{member} is held by {', '.join(others)}")
    found += signatures(Path(dev_root) / disk, runner or Runner())
    for backing in sorted(sys_p.glob("block/loop*/loop/backing_file")):
        loop, path = backing.parent.parent.name, backing.read_text().strip()
        named = {Path(path).name} if path.startswith("/dev/") else set()
        if loop not in family and family & (named | set(device_chain(path, sys_p, proc_p))):
            found.append(f"it {'is' if Path(path).name in family else 'holds'} {path}, the backing of {loop}")
    disks = [(f"QEMU pid {pid} has", path) for pid, path in _qemu_open_files(proc_p)]
    disks += [("a VM target uses", path) for path in vm_disks]
    for who, path in disks:
        if family & set(device_chain(path, sys_p, proc_p)):
            found.append(f"{who} {path} as a VM disk")
    return found


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def signatures(device: Path, runner: Runner) -> list[str]:
    """A partition table or a filesystem/RAID/LVM/swap signature on ``device``, as ``blkid -p`` finds it (it
    knows far more signatures than a hand-written list). A device that is not there has none."""
    if not device.exists():
        return []
    try:
        out = runner.run(["blkid", "-p", "-o", "export", str(device)], timeout=20, check=False)
    except ToolError:
        return ["blkid could not probe it, so it may hold data"]
    if out.returncode == 2:  # nothing found
        return []
    if out.returncode != 0:
        return [f"blkid could not probe it (exit {out.returncode}), so it may hold data"]
    found = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    reasons = []
    if "PTTYPE" in found:
        reasons.append(f"it has a {found['PTTYPE']} partition table")
    if "TYPE" in found:
        kind = "RAID" if "raid" in found["TYPE"] else "filesystem"
        reasons.append(f"it has a {found['TYPE']} {kind} signature")
    return reasons


def _qemu_open_files(proc_root: Path) -> list[tuple[int, str]]:
    """(pid, path) of every file or block device a ``qemu-system-*`` process holds open read-write (its
    disks; logs and sockets are write-only or not files)."""
    out: set[tuple[int, str]] = set()
    for entry in proc_root.iterdir() if proc_root.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text().startswith("qemu-system"):
                continue
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
                flags = int(_field(entry / "fdinfo" / fd.name, "flags"), 8)
            except (OSError, ValueError):
                continue
            mode = _mode(target) if target.startswith("/") else 0
            if (stat.S_ISREG(mode) or stat.S_ISBLK(mode)) and flags & os.O_ACCMODE == os.O_RDWR:
                out.add((int(entry.name), target))
    return sorted(out)


def _field(path: Path, key: str) -> str:
    for line in path.read_text().splitlines():
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    raise ValueError(f"{path} has no {key}")


def stable_id(name: str, sys_root: str | Path = "/sys") -> str:
    """The device's identity across boots: ``loop:FILE`` (a loop device's backing file), ``wwid:…``,
    ``wwn:…`` or ``serial:…`` from /sys; ``name:NAME`` when /sys has none of them (not stable)."""
    disk = _disk_of(name, Path(sys_root))
    base = Path(sys_root) / "block" / disk
    part = "" if disk == name else f"#{name}"
    backing = base / "loop" / "backing_file"
    if backing.exists():
        return f"loop:{backing.read_text().strip()}{part}"
    for kind, rel in (
        ("wwid", "wwid"),
        ("wwid", "device/wwid"),
        ("wwn", "device/wwn"),
        ("serial", "serial"),
        ("serial", "device/serial"),
    ):
        try:
            value = (base / rel).read_text().strip()
        except OSError:
            continue
        if value:
            return f"{kind}:{value}{part}"
    return f"name:{name}"


def size_of(path: str | Path) -> int | None:
    """The bytes of a file or block device; None when there is none at ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


LOSETUP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Loop:
    """A loop device vmio attached over a file: ``/dev/loopN``, the file, and whether it does direct I/O."""

    device: str
    backing: str
    direct_io: bool


@contextlib.contextmanager
def loop_device(path: str | Path, runner: Runner, sys_root: str | Path = "/sys") -> Iterator[Loop]:
    """Attach ``path`` as a direct-I/O loop device (``losetup --direct-io=on --find --show``) for as long
    as the block lasts; detach it after, also when the block fails or is interrupted."""
    backing = str(Path(path).resolve())
    done = runner.run(
        ["losetup", "--direct-io=on", "--find", "--show", backing], timeout=LOSETUP_TIMEOUT_S, check=False
    )
    device = done.stdout.strip()
    if done.returncode != 0 or not device.startswith("/dev/"):
        why = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
        raise ToolError(
            f"cannot attach {backing!r} as a loop device: {why}",
            argv=done.argv,
            returncode=done.returncode,
            output=done.stdout + done.stderr,
        )
    try:
        dio = Path(sys_root) / "block" / Path(device).name / "loop" / "dio"
        yield Loop(device, backing, dio.exists() and dio.read_text().strip() == "1")
    finally:
        detach_loop(device, runner)


def detach_loop(device: str, runner: Runner) -> None:
    """``losetup -d DEVICE``; a failure to detach is an error naming the device (it would be left over)."""
    done = runner.run(["losetup", "-d", device], timeout=LOSETUP_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise ToolError(
            f"cannot detach the loop device {device}: {(done.stderr or done.stdout).strip()}; "
            f"detach it by hand (losetup -d {device})",
            argv=done.argv,
        )


def loops_over(path: str | Path, sys_root: str | Path = "/sys") -> list[str]:
    """The loop devices whose backing file is ``path`` (``/dev/loopN`` each)."""
    want = str(Path(path).resolve())
    return sorted(
        f"/dev/{b.parent.parent.name}"
        for b in Path(sys_root).glob("block/loop*/loop/backing_file")
        if b.read_text().strip() == want
    )
