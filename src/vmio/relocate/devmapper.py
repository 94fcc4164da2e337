"""Real-host paths: device-mapper linear tables and LVM ``pvmove`` commands generated from a plan.

For a raw disk handed to vmio, each image becomes a dm device whose linear table follows the plan's
mapping; it is swapped in with ``dmsetup suspend`` / ``reload`` / ``resume`` after its data has been copied
(``apply.py`` does the journaled, verified copy onto the target). For images that are LVM logical volumes
on one physical volume, the moves become ``pvmove`` ranges (the plan's extent must equal the PE size and
the zone must be free space, as LVM moves only into free extents).
"""

from __future__ import annotations

import os
from pathlib import Path

from vmio.errors import InputError, ToolError
from vmio.relocate.plan_io import mapping_runs
from vmio.relocate.planner import Plan
from vmio.system.process import Runner

SECTOR = 512
DM_CONTROL = Path("/dev/mapper/control")


def dm_tables(plan: Plan, device: str, *, data_offset_sectors: int = 0) -> dict[str, str]:
    """Per image, the dm linear table mapping its sectors onto ``device`` after the plan."""
    per = plan.layout.extent_bytes // SECTOR
    tables: dict[str, list[str]] = {n: [] for n in plan.layout.names}
    for name, logical, count, phys in mapping_runs(plan):
        start, length = logical * per, count * per
        tables[name].append(f"{start} {length} linear {device} {data_offset_sectors + phys * per}")
    return {n: "\n".join(rows) + "\n" for n, rows in tables.items()}


def dm_swap_commands(plan: Plan, table_files: dict[str, Path]) -> list[list[str]]:
    """``dmsetup`` argv lists that swap every image's device to its new table."""
    cmds: list[list[str]] = []
    for name in plan.layout.names:
        cmds += [
            ["dmsetup", "suspend", name],
            ["dmsetup", "reload", name, str(table_files[name])],
            ["dmsetup", "resume", name],
        ]
    return cmds


def device_mapper_problem(control: Path = DM_CONTROL) -> str | None:
    """Why device-mapper cannot be used here, or ``None``."""
    try:
        fd = os.open(control, os.O_RDWR)
    except OSError as exc:
        return f"{control}: {exc.strerror} (the kernel has no device-mapper driver or it is not reachable)"
    os.close(fd)
    return None


def run_dm_swap(commands: list[list[str]], runner: Runner, control: Path = DM_CONTROL) -> None:
    """Run the swap commands; refuse with the reason when device-mapper is missing."""
    problem = device_mapper_problem(control)
    if problem:
        raise ToolError(f"cannot swap device-mapper tables: {problem}")
    for argv in commands:
        runner.run(argv, timeout=60)


def pvmove_commands(plan: Plan, pv: str) -> list[list[str]]:
    """``pvmove`` argv lists moving each run of hot extents into the zone (PE numbers = plan extents)."""
    zlo, zhi = plan.zone_start, plan.zone_start + plan.zone_extents
    end_of_images = max(b + n for b, n in zip(plan.layout.base, plan.layout.nextents, strict=True))
    if zlo < end_of_images:
        raise InputError(
            f"the zone starts at extent {zlo}, inside the volumes (which end at {end_of_images}); pvmove "
            "moves only into free extents, so plan with --zone after"
        )
    moves = sorted(plan.moves(), key=lambda m: m[3])
    runs: list[list[int]] = []
    for _image, _logical, src, dst in moves:
        if not zlo <= dst < zhi:
            raise InputError(
                f"move of extent {src} to {dst} leaves the zone; pvmove plans move only hot extents"
            )
        if runs and runs[-1][1] == src - 1 and runs[-1][3] == dst - 1:
            runs[-1][1], runs[-1][3] = src, dst
        else:
            runs.append([src, src, dst, dst])
    return [["pvmove", "--alloc", "anywhere", f"{pv}:{a}-{b}", f"{pv}:{c}-{d}"] for a, b, c, d in runs]
