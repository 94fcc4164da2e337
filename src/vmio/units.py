"""Sizes and durations as users write them: ``512``, ``4k``, ``1M``, ``4G``; ``500ms``, ``10s``, ``2m``.

Sizes use base 1024, as fio does by default (``4k`` is 4096 bytes).
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)
_SIZE_FACTOR = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?\s*$", re.IGNORECASE)
_DURATION_FACTOR = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_SIZE = (1 << 63) - 1  # fio's and the kernel's offsets are signed 64-bit
MAX_DURATION_S = 366 * 86400.0


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_size(value: object) -> int:
    """Bytes from ``4096``, ``"4k"``, ``"1M"``, ``"4G"``. Raises ``ValueError`` with the value."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{_short(value)} is not a size; sizes are not negative")
        if value > MAX_SIZE:
            raise ValueError(f"{_short(value)} is too large; sizes go up to 2**63-1 bytes (8 EiB)")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a size; use a number of bytes or a string like '4k'")
    match = _SIZE.match(value)
    if not match or len(value) > 64:
        raise ValueError(f"{_short(value)} is not a size; use a number with k, M, G or T such as '4k'")
    number, unit = match.groups()
    size = float(number) * _SIZE_FACTOR[unit.lower()]
    if not size < MAX_SIZE:
        raise ValueError(f"{_short(value)} is too large; sizes go up to 2**63-1 bytes (8 EiB)")
    if size != int(size):
        raise ValueError(f"{_short(value)} is not a size in whole bytes")
    return int(size)


_FIO_SIZE = re.compile(r"([0-9]+)\s*([kmgtpe]?)(?:i?b)?", re.IGNORECASE)


def fio_size(text: str) -> int | None:
    """Bytes of a size as fio reads it (its suffixes up to P and E, 1024-based: ``bs=1E`` is 2**60 bytes to
    fio), None for a form this does not read (a range, a split, a percentage)."""
    match = _FIO_SIZE.fullmatch(text.strip())
    if match is None or len(text) > 64:
        return None
    return int(match.group(1)) << (10 * " kmgtpe".index(match.group(2).lower() or " "))


def parse_duration(value: object) -> float:
    """Seconds from ``10``, ``"500ms"``, ``"10s"``, ``"2m"``. Raises ``ValueError`` with the value."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        if value != value or value < 0:
            raise ValueError(f"{_short(value)} is not a duration; durations are numbers, not negative")
        if value > MAX_DURATION_S:
            raise ValueError(f"{_short(value)} is too long; durations go up to 366 days")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a duration; use a string like '10s' or '500ms'")
    match = _DURATION.match(value)
    if not match or len(value) > 64:
        raise ValueError(f"{_short(value)} is not a duration; use a number with ms, s, m or h such as '10s'")
    number, unit = match.groups()
    seconds = float(number) * _DURATION_FACTOR[(unit or "s").lower()]
    if not seconds <= MAX_DURATION_S:
        raise ValueError(f"{_short(value)} is too long; durations go up to 366 days")
    return seconds


def format_size(n: int) -> str:
    """The shortest exact form: ``4096`` → ``'4k'``, ``1536`` → ``'1536'``."""
    for unit in ("p", "t", "g", "m", "k"):
        factor = _SIZE_FACTOR[unit]
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_bytes(n: float) -> str:
    """A size for people: ``25276510208`` → ``'23.5 GiB'``, ``512`` → ``'512 B'`` (base 1024, 3 figures)."""
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_BINARY) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{value:.0f} B"
    return f"{value:.{0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2}f} {_BINARY[unit]}"


def human_rate(bytes_per_s: float) -> str:
    """A bandwidth for people: ``1193134929`` → ``'1.11 GiB/s'``."""
    return human_bytes(bytes_per_s) + "/s"
