"""Where vmio writes: checks and messages for the user's output paths, and the clean-up of commands that write
several files (all of them, or none). The bytes are written elsewhere; this module only says, before the
first byte, whether a path can be written, and, after a failure, which sentence names it.

A missing folder, a folder where a file is wanted and a file where a folder is wanted are bad input
(``InputError``, exit 2); a full disk is a failed run (``VmioError``, exit 1). Messages name the user's path,
never a temporary name beside it.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from vmio.errors import InputError, VmioError


def _nearest(path: Path) -> Path:
    """The nearest ancestor of ``path`` that exists (``.`` for a relative path with none)."""
    folder = path.parent if str(path.parent) else Path(".")
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    return folder


def output_file_problem(text: str | Path, *, make_folder: bool = False) -> str | None:
    """Why ``text`` cannot be a new or replaced file, or ``None``; with ``make_folder`` its missing folders
    are created by the writer, so only a file in their way is a problem."""
    shown = str(text)
    if not shown:
        return "an empty path is not a file"
    if shown.endswith("/"):
        return f"{shown!r} names a folder; give a file path"
    path = Path(shown)
    if path.is_dir():
        return f"{shown!r} is a folder; give a file path inside it"
    parent = path.parent if str(path.parent) else Path(".")
    if make_folder and not parent.exists():
        nearest = _nearest(path)
        return None if nearest.is_dir() else f"{shown!r}: {str(nearest)!r} is a file, not a folder"
    if not parent.exists():
        return f"{shown!r}: the folder {str(parent)!r} does not exist; create it first"
    if not parent.is_dir():
        return f"{shown!r}: {str(parent)!r} is a file, not a folder"
    return None


def output_dir_problem(text: str | Path) -> str | None:
    """Why ``text`` cannot be a folder vmio writes into (created when missing), or ``None``."""
    shown = str(text)
    if not shown:
        return "an empty path is not a folder"
    path = Path(shown)
    if path.exists() and not path.is_dir():
        return f"{shown!r} is a file; give a folder"
    nearest = _nearest(path) if not path.exists() else path
    if not nearest.is_dir():
        return f"{shown!r}: {str(nearest)!r} is a file, not a folder"
    return None


def check_output_file(path: str | Path, what: str = "the output") -> None:
    problem = output_file_problem(path)
    if problem:
        raise InputError(f"{what} {problem}")


def check_output_dir(path: str | Path, what: str = "the output folder") -> None:
    problem = output_dir_problem(path)
    if problem:
        raise InputError(f"{what} {problem}")


def write_failed(path: str | Path, exc: OSError) -> VmioError:
    """The error for a failed write of the user's ``path``: a full disk fails the run (exit 1), anything
    else is a path the user gave that cannot be written (exit 2)."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return VmioError(f"cannot write {str(path)!r}: {reason}; nothing of this command's output was kept")
    return InputError(f"cannot write {str(path)!r}: {reason}")


TEMP_SUFFIXES = (".tmp", ".vmio-partial")


def user_path(name: str | Path) -> Path:
    """The user's path behind one of vmio's temporary names beside it (``.x.csv.tmp``, ``x.json.tmp``,
    ``x.img.vmio-partial`` -> ``x.csv``, ``x.json``, ``x.img``); any other path as it is."""
    path = Path(name)
    for suffix in TEMP_SUFFIXES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            base = path.name[: -len(suffix)]
            return path.with_name(base[1:] if base.startswith(".") and len(base) > 1 else base)
    return path


@contextlib.contextmanager
def all_or_none(paths: list[Path]) -> Iterator[None]:
    """Remove every path in ``paths`` (filled by the block as it writes) when the block fails, so a command
    that writes several files leaves all of them or none; an ``OSError`` becomes ``write_failed`` of the
    path the block was writing (the last one added)."""
    try:
        yield
    except BaseException as exc:
        for p in paths:
            with contextlib.suppress(OSError):
                p.unlink()
        if isinstance(exc, OSError):
            raise write_failed(paths[-1] if paths else Path(exc.filename or "?"), exc) from None
        raise
