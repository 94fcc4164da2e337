"""Applying a plan to a copy of the disk: ``OUT`` gets the relocated layout, ``OUT.map`` the mapping table.

The source (a file holding the shared disk in the layout before the plan) is only read. Extents are copied
one by one; each copy is read back and its SHA-256 compared with the source's, then recorded in the journal
``OUT.journal`` (fsynced after the data). A killed apply resumes after the last journaled extent, after
checking that extent again; ``rollback`` removes what an apply wrote. Free space stays sparse.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from vmio.errors import InputError, UnsafeTargetError, VmioError
from vmio.relocate.plan_io import mapping_runs, plan_digest
from vmio.relocate.planner import Plan
from vmio.system import files

JOURNAL_MAGIC = "vmio-relocate-journal v1"
SECTOR = 512
BLKSSZGET = 0x1268  # linux/fs.h: the logical block size of a block device, an int


class ApplyError(VmioError):
    """A copied extent did not read back as it was written."""


@dataclass(frozen=True)
class ApplyResult:
    copied: int
    skipped: int
    total: int
    resumed: bool


def side_paths(out: Path) -> tuple[Path, Path]:
    """The journal and the mapping table written next to ``out``."""
    return out.with_name(out.name + ".journal"), out.with_name(out.name + ".map")


def _extents(plan: Plan) -> Iterator[tuple[int, int, int, int]]:
    for i, new in enumerate(plan.mapping):
        base = plan.layout.base[i]
        for k, dst in enumerate(new.tolist()):
            yield i, k, base + k, dst


def _read_journal(journal: Path, header: str) -> int:
    lines = journal.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != header:
        raise InputError(
            f"{journal}:1: journal belongs to another plan or source ({lines[0] if lines else ''!r}); "
            "use --rollback first"
        )
    done = 0
    for line in lines[1:]:
        parts = line.split()
        if len(parts) != 5 or not parts[0].isdigit() or int(parts[0]) != done:
            break  # a torn last line: that extent is copied again
        done += 1
    return done


def write_map(plan: Plan, path: Path) -> None:
    """The mapping table: ``image logical_extent count physical_extent`` per run, extent size in a header."""
    rows = [f"# extent_bytes {plan.layout.extent_bytes}", "# image logical_extent count physical_extent"]
    rows += [f"{n} {lo} {cnt} {ph}" for n, lo, cnt, ph in mapping_runs(plan)]
    files.write_atomic(path, ("\n".join(rows) + "\n").encode())


def apply_to_image(
    plan: Plan,
    source: Path,
    out: Path,
    *,
    rate_bytes: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ApplyResult:
    """Copy ``source`` into ``out`` in the plan's layout, resuming from the journal when one exists."""
    journal, table = side_paths(out)
    e = plan.layout.extent_bytes
    check_against_source(plan, source)
    check_output(out)
    header = f"{JOURNAL_MAGIC} plan={plan_digest(plan)} source={source.resolve()}"
    resumed = journal.exists()
    if out.exists() and not resumed:
        raise UnsafeTargetError(f"{str(out)!r} exists and has no apply journal; refusing to overwrite it")
    if not resumed:
        files.write_atomic(journal, (header + "\n").encode())
        _fsync_path(journal)
    done = _read_journal(journal, header)
    write_map(plan, table)
    extents = list(_extents(plan))
    files.check_place(out, new=not resumed)
    fd_out = os.open(out, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | (0 if resumed else os.O_EXCL), 0o644)
    try:
        os.ftruncate(fd_out, max(os.fstat(fd_out).st_size, plan.layout.disk_extents * e))
        with source.open("rb") as src, journal.open("a", encoding="utf-8") as jn:
            if done:
                _verify(src, fd_out, extents[done - 1], e)
            for seq in range(done, len(extents)):
                _copy_one(src, fd_out, jn, seq, extents[seq], e)
                if rate_bytes:
                    sleep(e / rate_bytes)
    finally:
        os.close(fd_out)
    return ApplyResult(len(extents) - done, done, len(extents), resumed)


def check_against_source(plan: Plan, source: Path) -> None:
    """Refuse, before anything is written, a plan that does not fit ``source`` (a regular file or a block
    device, only read): its extent must be a multiple of the source's logical block size, and every image
    extent a move reads must lie inside the source. Moves are whole extents, so each move's length is a
    multiple of the extent by construction; destinations lie inside the plan's disk (``Plan.validate``)."""
    try:
        st = os.stat(source)
    except OSError as exc:
        raise InputError(f"cannot read source {str(source)!r}: {exc.strerror}") from None
    if stat.S_ISBLK(st.st_mode):
        size, block = _block_device_geometry(source)
    elif stat.S_ISREG(st.st_mode):
        size, block = st.st_size, SECTOR
    else:
        raise InputError(f"source {str(source)!r} is neither a regular file nor a block device")
    lay = plan.layout
    if lay.extent_bytes <= 0 or lay.extent_bytes % block:
        raise InputError(
            f"extent_bytes = {lay.extent_bytes} is not a multiple of the logical block size of "
            f"{str(source)!r} ({block} bytes)"
        )
    need = max((b + n for b, n in zip(lay.base, lay.nextents, strict=True)), default=0) * lay.extent_bytes
    if not lay.names or size < need:
        raise InputError(
            f"source {str(source)!r} has {size} bytes; the plan's images need at least {need} bytes"
        )
    plan.validate()


def check_output(out: Path) -> None:
    """The output's folder exists and is a folder; the output is not a folder."""
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise InputError(f"--to-image {str(out)!r} is a folder; give the path of a new file")
    if not parent.exists():
        raise InputError(f"--to-image {str(out)!r}: the folder {str(parent)!r} does not exist")
    if not parent.is_dir():
        raise InputError(f"--to-image {str(out)!r}: {str(parent)!r} is not a folder")


def _block_device_geometry(device: Path) -> tuple[int, int]:
    """Bytes and logical block size (``BLKSSZGET``) of a block device."""
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        raw = fcntl.ioctl(fd, BLKSSZGET, b"\0" * 4)
    finally:
        os.close(fd)
    return size, int.from_bytes(raw, sys.byteorder)


def _copy_one(
    src: BinaryIO, fd_out: int, jn: TextIO, seq: int, ext: tuple[int, int, int, int], e: int
) -> None:
    image, logical, old, new = ext
    data = _pread_src(src, old * e, e)
    os.pwrite(fd_out, data, new * e)
    os.fsync(fd_out)
    digest = hashlib.sha256(data).hexdigest()
    if hashlib.sha256(os.pread(fd_out, len(data), new * e)).hexdigest() != digest:
        raise ApplyError(f"extent {logical} of image {image} did not read back from physical extent {new}")
    jn.write(f"{seq} {image} {logical} {new} {digest}\n")
    jn.flush()
    os.fsync(jn.fileno())


def _verify(src: BinaryIO, fd_out: int, ext: tuple[int, int, int, int], e: int) -> None:
    image, logical, old, new = ext
    data = _pread_src(src, old * e, e)
    if os.pread(fd_out, len(data), new * e) != data:
        raise ApplyError(f"journaled extent {logical} of image {image} differs in the output; use --rollback")


def _pread_src(src: BinaryIO, offset: int, size: int) -> bytes:
    return os.pread(src.fileno(), size, offset)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rollback(out: Path) -> list[Path]:
    """Remove the output, journal and mapping table of an apply; refuse when there is no journal."""
    journal, table = side_paths(out)
    if not journal.exists():
        raise UnsafeTargetError(f"no apply journal {str(journal)!r}; refusing to delete {str(out)!r}")
    removed = []
    for p in (out, table, journal):
        if p.exists():
            p.unlink()
            removed.append(p)
    return removed
