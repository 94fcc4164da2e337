"""argparse ``type=`` converters for the units users write (``4k``, ``1G``; ``500ms``, ``10s``)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path

from vmio.errors import InputError
from vmio.system.output_paths import output_dir_problem, output_file_problem
from vmio.units import parse_duration, parse_size


def size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def extent(text: str) -> int:
    """A size that is a positive multiple of 512 bytes (an extent, a page)."""
    value = size(text)
    if value <= 0 or value % 512:
        raise argparse.ArgumentTypeError(
            f"{_short(text)!r} is not a positive multiple of 512 bytes such as '1M'"
        )
    return value


extent.__name__ = "extent"


def duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_duration(flag: str, text: str) -> float:
    """A duration option in seconds; InputError names the flag and the value."""
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise InputError(f"{flag} {text!r}: {exc}") from None
    if value <= 0:
        raise InputError(f"{flag} {text!r} must be longer than zero, such as '5s'")
    return value


def count(low: int, high: int) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high`` (``--iodepth 0`` is an error, never a silent default)."""

    def convert(text: str) -> int:
        if not re.fullmatch(r"[+-]?[0-9]{1,19}", text.strip()):
            raise argparse.ArgumentTypeError(f"{_short(text)!r} is not a whole number")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range; use {low} to {high}")
        return value

    convert.__name__ = "count"  # argparse names the converter in its messages
    return convert


def real(low: float, high: float) -> Callable[[str], float]:
    """A finite number from ``low`` to ``high`` (no nan, no inf)."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_short(text)!r} is not a number") from None
        if not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{_short(text)!r} is out of range; use {low:g} to {high:g}")
        return value

    convert.__name__ = "number"
    return convert


def out_file(text: str) -> Path:
    """A file vmio writes: not a folder, in a folder that exists (checked before the command runs)."""
    problem = output_file_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


def out_file_anywhere(text: str) -> Path:
    """A file vmio writes, creating its missing folders: not a folder, no file in the way."""
    problem = output_file_problem(text, make_folder=True)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


def out_dir(text: str) -> Path:
    """A folder vmio writes into: a folder, or a path it can create (no file in the way)."""
    problem = output_dir_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


out_file.__name__ = "file"
out_file_anywhere.__name__ = "file"
out_dir.__name__ = "folder"


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
