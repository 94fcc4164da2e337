"""argparse ``type=`` converters for the units users write (``4k``, ``1G``; ``500ms``, ``10s``)."""

from __future__ import annotations

import argparse

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
