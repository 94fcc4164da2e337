"""Refuse writes to block devices that hold data: a partition table, a filesystem or RAID signature,
a mount, a swap area or a holder (device-mapper, md). The user overrides per device with
``--destroy-data DEVICE``."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from vmio.errors import UnsafeTargetError
from vmio.system.blockdev import uses
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
    if os.path.realpath(device) in {os.path.realpath(d) for d in destroy}:
        return
    reasons = data_on_device(device, runner, sys_root, proc_root)
    if reasons:
        raise UnsafeTargetError(
            f"refusing to write to {device}: {'; '.join(reasons)}. "
            f"If its data may be destroyed, pass --destroy-data {device}"
        )
