"""Refuse writes to what holds data. The user overrides per path with ``--destroy-data PATH``.

:func:`check_target_write` is the one gate every write vmio does through fio passes: a block device that holds
data (a partition table, a filesystem or RAID signature, a mount, a swap area, a holder such as device-mapper
or md), and a regular file vmio did not create (it lacks ``files.MARK``), are refused unless named. Paths are
compared as they resolve (``paths.resolved``); the folders above them must be the user's own
(``files.check_place``). A device is judged by what it is (``data_on_device``: a loop device also by its
backing file, a device-mapper or md device by its members, a partition with its disk), and a started target is
held open (``hold``) so that fio and QEMU open the very object that was judged."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import InputError, UnsafeTargetError
from vmio.system.blockdev import disk_of, uses
from vmio.system.files import check_place, is_marked
from vmio.system.paths import resolved
from vmio.system.process import Runner


def is_block_device(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def kernel_name(device: str | Path, sys_root: str | Path = "/sys") -> str:
    """The kernel's name for the block device ``device`` from its device number (``/sys/dev/block/M:m``), so
    a node or link of any name is judged as the device it opens; else the name it resolves to."""
    try:
        rdev = os.stat(device).st_rdev
        link = Path(sys_root) / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}"
        if is_block_device(str(device)) and link.exists():
            return link.resolve().name
    except OSError:
        pass
    return Path(resolved(device)).name


def data_on_device(
    device: str,
    runner: Runner,
    sys_root: str | Path = "/sys",
    proc_root: str | Path = "/proc",
    destroy: Sequence[str] = (),
) -> list[str]:
    """Reasons to believe ``device`` holds data or is in use, judged by what it is: its own signatures,
    mounts, swap, holders, loop or VM use (``blockdev.uses``) and partitions; a partition by its disk (``uses``
    looks at the whole disk); a loop device also by its backing file, under the same rules as that file
    named directly; a device-mapper or md device also by each of its members (``/sys/block/X/slaves``).
    Empty when it looks blank. ``destroy``: members or backing files the user offered up."""
    real = Path(resolved(device))
    name = kernel_name(device, sys_root)
    block = is_block_device(device)
    dev_root = real.parent if not block else Path("/dev")
    reasons = _device_reasons(name, dev_root, runner, Path(sys_root), Path(proc_root), destroy, held_by=None)
    disk = disk_of(name, sys_root)
    if block and not (dev_root / disk).exists():  # a node made elsewhere (mknod) of a disk /dev lacks
        reasons.append(f"its disk has no node /dev/{disk} for blkid to probe, so it may hold data")
    return reasons


def _device_reasons(
    name: str,
    dev_root: Path,
    runner: Runner,
    sys_root: Path,
    proc_root: Path,
    destroy: Sequence[str],
    held_by: str | None,
) -> list[str]:
    block = sys_root / "class" / "block" / name
    parts = (
        sorted(p.name for p in block.glob(f"{name}*") if (p / "partition").exists()) if block.exists() else []
    )
    reasons = uses(name, sys_root, proc_root, dev_root=dev_root, runner=runner, holder=held_by)
    if parts:
        reasons.append(f"it has partitions ({', '.join(parts)})")
    reasons += backing_reasons(name, sys_root, destroy)
    for member in members(name, sys_root):
        if named(str(dev_root / member), destroy):
            continue
        found = _device_reasons(member, dev_root, runner, sys_root, proc_root, destroy, held_by=name)
        reasons += [f"its member {member}: {why}" for why in found]
    return reasons


def members(name: str, sys_root: str | Path = "/sys") -> list[str]:
    """The devices a device-mapper or md device ``name`` is built on (``/sys/block/NAME/slaves``)."""
    slaves = Path(sys_root) / "block" / name / "slaves"
    return sorted(p.name for p in slaves.iterdir()) if slaves.is_dir() else []


def backing_reasons(name: str, sys_root: str | Path = "/sys", destroy: Sequence[str] = ()) -> list[str]:
    """Why the loop device ``name`` must be taken to hold data because of its backing file: the rules of
    that file named directly (``data_in_file``; a block device behind it is judged by ``uses`` already)."""
    backing = Path(sys_root) / "block" / name / "loop" / "backing_file"
    try:
        path = backing.read_text().strip()
    except OSError:
        return []
    if path.endswith(" (deleted)"):
        return [f"its backing file {path} was deleted, so what it held cannot be judged"]
    if named(path, destroy) or is_block_device(path):
        return []
    return [f"its backing file {path}: {why}" for why in data_in_file(path)]


def check_write(
    device: str,
    destroy: Sequence[str],
    runner: Runner,
    sys_root: str | Path = "/sys",
    proc_root: str | Path = "/proc",
    shown: str | None = None,
) -> None:
    """Raise ``UnsafeTargetError`` unless ``device`` is blank or named in ``destroy``; ``shown``: the name
    the user gave (``device`` may be vmio's descriptor of it)."""
    shown = shown or device
    if named(device, destroy) or named(shown, destroy):
        return
    reasons = data_on_device(device, runner, sys_root, proc_root, destroy)
    if reasons:
        raise UnsafeTargetError(
            f"refusing to write to {shown}: {'; '.join(reasons)}. "
            f"If its data may be destroyed, pass --destroy-data {shown}"
        )


def named(path: str, destroy: Sequence[str]) -> bool:
    """True when ``--destroy-data`` names ``path`` (by any spelling that resolves to the same place)."""
    return resolved(path) in {resolved(d) for d in destroy}


def data_in_file(path: str) -> list[str]:
    """Why a regular file must be taken to hold data: vmio did not create it (it lacks vmio's mark)."""
    if os.path.isfile(path) and not is_marked(path):
        return ["it is a file vmio did not create (it has no user.vmio.scratch mark)"]
    return []


def check_target_write(
    path: str,
    destroy: Sequence[str],
    runner: Runner,
    sys_root: str | Path = "/sys",
    proc_root: str | Path = "/proc",
    opened: str | None = None,
) -> None:
    """Raise ``UnsafeTargetError`` unless vmio may write ``path`` through fio: the folders above it are the
    user's own, and it is missing, a blank block device, a file vmio created, or named in ``destroy``.

    ``opened``: the object vmio already holds open for ``path`` (``Held.here``); it is what is judged, so
    the judgement is of what fio will open (messages still name ``path``)."""
    check_place(path, new=not os.path.lexists(path))
    what = opened or path
    if is_block_device(what):
        check_write(what, destroy, runner, sys_root, proc_root, shown=path)
        return
    reasons = [] if named(what, destroy) or named(path, destroy) else data_in_file(what)
    if reasons:
        raise UnsafeTargetError(
            f"refusing to write to {path}: {'; '.join(reasons)}. "
            f"If its data may be destroyed, pass --destroy-data {path}"
        )


@dataclass(frozen=True)
class Held:
    """A target vmio resolved and opened once (``O_PATH``: no I/O, no side effect of opening a device).
    It is judged through ``here`` and fio (or QEMU) opens it through ``fio_path``, the kernel's link to this
    very open file: whatever happens to its name afterwards, they open the object that was checked."""

    fd: int
    path: str

    @property
    def here(self) -> str:
        """The held object as a path in vmio's own process."""
        return f"/proc/self/fd/{self.fd}"

    @property
    def fio_path(self) -> str:
        """The held object as a path for vmio's child processes (fio, QEMU): vmio's descriptor."""
        return f"/proc/{os.getpid()}/fd/{self.fd}"


@contextlib.contextmanager
def hold(path: str) -> Iterator[Held]:
    """Resolve and open ``path`` once for as long as the block lasts (see ``Held``)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot open the target {path!r}: {exc.strerror}") from None
    try:
        yield Held(fd, path)
    finally:
        os.close(fd)
