"""argparse ``type=`` converters for the units users write (``4k``, ``1G``; ``500ms``, ``10s``)."""

from __future__ import annotations

import argparse

from vmio.errors import InputError
from vmio.units import parse_duration, parse_size


def size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
