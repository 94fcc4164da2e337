"""Refuse writes to block devices that hold data: a partition table, a filesystem or RAID signature,
a mount, a swap area or a holder (device-mapper, md). The user overrides per device with
``--destroy-data DEVICE``."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from vmio.errors import ToolError, UnsafeTargetError
from vmio.system.process import Runner


def is_block_device(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def data_on_device(
    device: str, runner: Runner, sys_root: str | Path = "/sys", proc_root: str | Path = "/proc"
) -> list[str]:
    """Reasons to believe ``device`` holds data; empty when it looks blank."""
    real = os.path.realpath(device)
    name = Path(real).name
    reasons = _signatures(real, runner)
    block = Path(sys_root) / "class" / "block" / name
    parts = (
        sorted(p.name for p in block.glob(f"{name}*") if (p / "partition").exists()) if block.exists() else []
    )
    if parts:
        reasons.append(f"it has partitions ({', '.join(parts)})")
    family = {real} | {f"/dev/{p}" for p in parts}
    for line in _lines(Path(proc_root) / "self" / "mounts"):
        source, _, point = line.partition(" ")
        if os.path.realpath(source) in family:
            reasons.append(f"{source} is mounted on {point.split(' ')[0]}")
    for line in _lines(Path(proc_root) / "swaps")[1:]:
        if os.path.realpath(line.split()[0]) in family:
            reasons.append(f"{line.split()[0]} is in use as swap")
    holders = block / "holders"
    if holders.exists() and any(holders.iterdir()):
        reasons.append(f"it is held by {', '.join(sorted(p.name for p in holders.iterdir()))}")
    return reasons


def _signatures(device: str, runner: Runner) -> list[str]:
    try:
        out = runner.run(["blkid", "-p", "-o", "export", device], timeout=20, check=False)
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


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


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
