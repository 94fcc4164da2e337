"""How a miss-ratio curve is built, on the command line (``vmio membal`` and ``vmio relocate analyze``):
``--sample-rate`` | ``--sample-size`` and ``--seeds``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from vmio.cli import argtypes
from vmio.errors import InputError

if TYPE_CHECKING:
    from vmio.mrc.curve import Sampling


def sampling_options(p: argparse.ArgumentParser, what: str) -> None:
    """--sample-rate | --sample-size and --seeds: how a miss-ratio curve is built (membal and relocate)."""
    p.add_argument(
        "--seeds",
        type=argtypes.count(1, 1024),
        default=1,
        metavar="K",
        help="with --sample-rate/--sample-size: the mean of K samples with independent hash seeds "
        "(K times the work and memory of one; default 1)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--sample-rate", type=_rate, metavar="R", help=f"SHARDS at a fixed rate R in (0, 1] for {what}"
    )
    group.add_argument(
        "--sample-size", type=_keys, metavar="S", help=f"fixed-size SHARDS keeping at most S keys for {what}"
    )


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a sampling rate; use a number in (0, 1] such as 0.01"
        ) from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not in (0, 1]; use a rate such as 0.01")
    return value


def _keys(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of keys; use a whole number such as 8000")
    return value


def sampling(args: argparse.Namespace) -> Sampling:
    """The curve's sampling from ``sampling_options``' arguments."""
    from vmio.mrc.curve import Sampling  # numpy and numba: when a curve is built, not for --help

    if args.seeds > 1 and args.sample_size is None and args.sample_rate is None:
        raise InputError(
            f"--seeds {args.seeds!r} needs --sample-rate or --sample-size (an exact curve has no seed)"
        )
    if args.sample_size is not None:
        return Sampling(1.0, args.sample_size, args.seeds)
    return Sampling(args.sample_rate or 1.0, seeds=args.seeds)
