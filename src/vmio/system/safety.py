"""Refuse writes to what holds data. The user overrides per path with ``--destroy-data PATH``.

:func:`check_target_write` is the one gate every write vmio does through fio passes: a block device that holds
data (a partition table, a filesystem or RAID signature, a mount, a swap area, a holder such as device-mapper
or md), and a regular file vmio did not create (it lacks ``files.MARK``), are refused unless named. Paths are
compared as they resolve (``paths.resolved``); the folders above them must be the user's own
(``files.check_place``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from vmio.errors import UnsafeTargetError
from vmio.system.blockdev import uses
from vmio.system.files import check_place, is_marked
from vmio.system.paths import resolved
from vmio.system.process import Runner


def is_block_device(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def data_on_device(
    device: str, runner: Runner, sys_root: str | Path = "/sys", proc_root: str | Path = "/proc"
) -> list[str]:
    """Reasons to believe ``device`` holds data or is in use (``blockdev.uses``: signatures, mounts, swap,
    holders, loop or VM backing), and its partitions; empty when it looks blank."""
    real = Path(os.path.realpath(device))
    name = real.name
    block = Path(sys_root) / "class" / "block" / name
    parts = (
        sorted(p.name for p in block.glob(f"{name}*") if (p / "partition").exists()) if block.exists() else []
    )
    reasons = uses(name, sys_root, proc_root, dev_root=real.parent, runner=runner)
    if parts:
        reasons.append(f"it has partitions ({', '.join(parts)})")
    return reasons


def check_write(
    device: str,
    destroy: Sequence[str],
    runner: Runner,
    sys_root: str | Path = "/sys",
    proc_root: str | Path = "/proc",
) -> None:
    """Raise ``UnsafeTargetError`` unless ``device`` is blank or named in ``destroy``."""
    if named(device, destroy):
        return
    reasons = data_on_device(device, runner, sys_root, proc_root)
    if reasons:
        raise UnsafeTargetError(
            f"refusing to write to {device}: {'; '.join(reasons)}. "
            f"If its data may be destroyed, pass --destroy-data {device}"
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
) -> None:
    """Raise ``UnsafeTargetError`` unless vmio may write ``path`` through fio: the folders above it are the
    user's own, and it is missing, a blank block device, a file vmio created, or named in ``destroy``."""
    check_place(path, new=not os.path.lexists(path))
    if is_block_device(path):
        check_write(path, destroy, runner, sys_root, proc_root)
        return
    reasons = [] if named(path, destroy) else data_in_file(path)
    if reasons:
        raise UnsafeTargetError(
            f"refusing to write to {path}: {'; '.join(reasons)}. "
            f"If its data may be destroyed, pass --destroy-data {path}"
        )
