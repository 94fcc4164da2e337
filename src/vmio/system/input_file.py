"""Reading a file the user handed vmio: a regular file (or stdin when asked), UTF-8 text, JSON of bounded
depth; every refusal is an ``InputError`` that names the path.

A FIFO, a device or a folder is refused from ``os.stat`` before any ``open`` (opening a FIFO blocks until a
writer comes); the open itself uses ``O_NONBLOCK`` and the opened file is checked again, so a file swapped
for a FIFO in between does not hang either.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from vmio.errors import InputError

MAX_TEXT_BYTES = 1 << 30  # a text input larger than this is not one vmio reads into memory
MAX_JSON_DEPTH = 200  # plans, evidence and store columns nest a few levels; 200 is far beyond any of them


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: str | Path, what: str) -> os.stat_result:
    """``os.stat`` of ``path``; ``InputError`` when it is missing or not a regular file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror}") from None
    except ValueError:  # an embedded NUL byte
        raise InputError(f"cannot read {what} {str(path)!r}: the name holds a NUL byte") from None
    kind = _kind(st.st_mode)
    if kind:
        raise InputError(f"{what} {str(path)!r} is {kind}; give a regular file")
    return st


def read_bytes(path: str | Path, what: str, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; never blocks on a FIFO."""
    st = check_regular(path, what)
    if st.st_size > max_bytes:
        raise InputError(f"{what} {str(path)!r} has {st.st_size} bytes; vmio reads at most {max_bytes}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror}") from None
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind:
            raise InputError(f"{what} {str(path)!r} is {kind}; give a regular file")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > max_bytes:
                raise InputError(
                    f"{what} {str(path)!r} has more than {max_bytes} bytes; vmio reads at most that"
                )
            chunks.append(chunk)
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 text, or an ``InputError`` naming ``where`` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_text(path: str | Path, what: str, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of the regular file ``path``."""
    return decode_text(read_bytes(path, what, max_bytes), str(path))


def json_depth_problem(text: str, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The position where ``text`` opens its ``limit``-th nested array or object, or ``None``.

    Counts brackets outside strings, so it runs before ``json.loads`` and its recursion."""
    depth, in_string, escaped = 0, False, False
    for pos, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return pos
        elif ch in "]}":
            depth -= 1
    return None


def loads_json(text: str, where: str) -> Any:
    """Decoded JSON; nesting deeper than ``MAX_JSON_DEPTH``, huge integers, NaN and Infinity refused."""
    pos = json_depth_problem(text)
    if pos is not None:
        raise InputError(f"{where}: JSON nested more than {MAX_JSON_DEPTH} levels deep (at character {pos})")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to read") from None
    except ValueError as exc:  # an integer past Python's digit limit, or a constant refused below
        raise InputError(f"{where}: {_short(exc)}") from None


def load_json(path: str | Path, what: str) -> Any:
    """Read and decode the JSON file ``path``."""
    return loads_json(read_text(path, what), str(path))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number vmio accepts; use a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        shown = text if len(text) <= 40 else text[:20] + "..."
        raise ValueError(f"the number {shown} is too large; use a finite number")
    return value


def _short(exc: ValueError) -> str:
    message = str(exc)
    if "digits" in message and "limit" in message:
        return "an integer has more digits than vmio reads (at most 4300)"
    return message


def capacity(path: str | Path) -> tuple[int, str] | None:
    """How many bytes fit at ``path`` and what holds them: a block device's size, or the size of the
    filesystem under the nearest existing folder; ``None`` for names that are not local paths (``rbd:``)."""
    text = str(path)
    if not text.startswith("/") and ":" in text.split("/")[0]:
        return None
    p = Path(path)
    try:
        st = os.stat(p)
        if stat.S_ISBLK(st.st_mode):
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                return os.lseek(fd, 0, os.SEEK_END), f"the block device {text!r}"
            finally:
                os.close(fd)
    except OSError:
        pass
    folder = p.parent if not p.is_dir() else p
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        vfs = os.statvfs(folder)
    except OSError:
        return None
    return vfs.f_blocks * vfs.f_frsize, f"the filesystem holding {str(folder)!r}"
