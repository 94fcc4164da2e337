"""Reading one TOML table field by field, each bad value a ``SpecError`` with file:line."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from vmio.errors import SpecError
from vmio.spec.tomlfile import Locator
from vmio.units import parse_duration, parse_size

T = TypeVar("T")
_REQUIRED: Any = object()


class Fields:
    """The keys of one table; ``take`` each, then ``done`` rejects the ones nobody took."""

    def __init__(self, data: object, loc: Locator, table: str, index: int = 0) -> None:
        self.loc, self.table, self.index = loc, table, index
        self.label = table if table in ("campaign", "scenario") else f"{table}[{index}]"
        if not isinstance(data, dict):
            raise loc.error(table, index, None, f"{table} must be a table, not {data!r}")
        self.data: dict[str, object] = dict(data)
        self.taken: set[str] = set()

    def error(self, key: str | None, message: str) -> SpecError:
        return self.loc.error(self.table, self.index, key, message)

    def take(self, key: str, convert: Callable[[Any], T], default: T = _REQUIRED) -> T:
        self.taken.add(key)
        if key not in self.data:
            if default is _REQUIRED:
                raise self.error(None, f"{self.label}.{key} is required")
            return default
        value = self.data[key]
        try:
            return convert(value)
        except (ValueError, TypeError) as exc:
            raise self.error(key, f"{self.label}.{key} = {value!r}: {exc}") from None

    def done(self, allowed_extra: Iterable[str] = ()) -> None:
        unknown = sorted(set(self.data) - self.taken - set(allowed_extra))
        if unknown:
            known = ", ".join(sorted(self.taken))
            raise self.error(unknown[0], f"{self.label}: unknown key {unknown[0]!r}; known keys: {known}")


MAX_STRING = 4096


def string(value: object) -> str:
    """A non-empty string without control characters: every string here may reach a fio job file (one
    ``key=value`` per line, so a newline would add options such as ``exec_prerun``), a command line or a
    file name."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    bad = next((c for c in value if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0), None)
    if bad is not None:
        raise ValueError(f"has the control character {bad!r}; strings here reach job files and command lines")
    if len(value) > MAX_STRING:
        raise ValueError(f"is {len(value)} characters long; at most {MAX_STRING}")
    return value


MAX_NAME = 100  # a campaign's, target's or workload's name: part of every point's key and of file names


def name(value: object) -> str:
    """A name (campaign, target, workload): a string of at most ``MAX_NAME`` characters, since it becomes part
    of each point's key and of the names of the files a point writes (a file name holds 255 bytes)."""
    text = string(value)
    if len(text) > MAX_NAME:
        raise ValueError(f"is {len(text)} characters long; a name holds at most {MAX_NAME}")
    return text


NAME_MAX = 255  # bytes in one file name (Linux's NAME_MAX)
PATH_MAX = 4095  # bytes in a path the kernel opens (PATH_MAX less its terminating zero)


def path(value: object) -> str:
    """A path the kernel can open: each name in it at most 255 bytes, the whole at most 4095 (a longer one
    fails every open with 'File name too long', after vmio had begun)."""
    text = string(value)
    encoded = os.fsencode(text)
    if len(encoded) > PATH_MAX:
        raise ValueError(f"is a path of {len(encoded)} bytes; the kernel opens paths of at most {PATH_MAX}")
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        raise ValueError(
            f"holds a file name of {len(longest)} bytes ({longest[:20].decode(errors='replace')!r}...); "
            f"a file name holds at most {NAME_MAX}"
        )
    return text


def token(value: object) -> str:
    """A fio option value that is one word (an ioengine, a pool): letters, digits and ``_.:/-+``."""
    text = string(value)
    if not all(c.isascii() and (c.isalnum() or c in "_.:/-+") for c in text):
        raise ValueError("use one word of letters, digits and _ . : / - +")
    return text


# fio's engines vmio measures with. Anything else is refused: ``external:/path/lib.so`` would make root's fio
# load a library any user could have written, and engines such as ``exec`` run programs.
ENGINES = ("libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "vsync", "posixaio", "mmap", "null",
           "rbd")  # fmt: skip


def ioengine(value: object) -> str:
    """A fio ``ioengine`` from :data:`ENGINES`."""
    text = string(value)
    if text not in ENGINES:
        raise ValueError(f"ioengine {text!r} is not one vmio runs; use one of {', '.join(ENGINES)}")
    return text


def boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def integer(low: int | None = None, high: int | None = None) -> Callable[[object], int]:
    def convert(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("expected a whole number")
        if low is not None and value < low:
            raise ValueError(f"must be at least {low}")
        if high is not None and value > high:
            raise ValueError(f"must be at most {high}")
        return value

    return convert


CORES = "cores"


def host_cores() -> int:
    """This host's cores (the CPUs the kernel offers): what ``"cores"`` stands for in a spec."""
    return os.cpu_count() or 1


def count(low: int, high: int) -> Callable[[object], int]:
    """A whole number, or ``"cores"``: N = this host's cores (as hitachi-nvme-2016 set N), so one spec
    means the same experiment on a 2-core laptop and a 16-core server."""
    whole = integer(low, high)

    def convert(value: object) -> int:
        if value == CORES:
            return whole(host_cores())
        if isinstance(value, str):
            raise ValueError(f"expected a whole number or {CORES!r} (this host's cores)")
        return whole(value)

    return convert


def choice(*options: str) -> Callable[[object], str]:
    def convert(value: object) -> str:
        if value not in options:
            raise ValueError(f"use one of {', '.join(options)}")
        return str(value)

    return convert


def size(value: object) -> int:
    return parse_size(value)


# the largest block one fio read or write may move: Linux moves at most 2 GiB - 4 KiB in one call
MAX_BLOCK = 1 << 30


def block_size(value: object) -> int:
    n = parse_size(value)
    if n == 0 or n % 512:
        raise ValueError("is not a block size; use a multiple of 512 such as '4k'")
    if n > MAX_BLOCK:
        raise ValueError(f"is {n} bytes, too large a block; use a multiple of 512 up to 1G such as '4k'")
    return n


def duration(value: object) -> float:
    return parse_duration(value)


def one_or_many(convert: Callable[[object], T]) -> Callable[[object], tuple[T, ...]]:
    """A single value or a non-empty list of them."""

    def many(value: object) -> tuple[T, ...]:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise ValueError("expected at least one value")
        out = []
        for item in items:
            try:
                out.append(convert(item))
            except ValueError as exc:
                raise ValueError(f"item {item!r}: {exc}") from None
        return tuple(out)

    return many
