"""The ``vmio`` command: parse, call the library, print, return an exit code.

Exit codes: 0 success, 1 a run or check failed, 2 bad input, 3 refused as unsafe.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable

from vmio import __version__
from vmio.errors import VmioError

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vmio", description="Storage I/O laboratory for KVM/QEMU hosts.")
    parser.add_argument("--version", action="version", version=f"vmio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for register in _feature_registrars():
        register(sub)
    return parser


# Each feature owns its sub-commands in ``<module>.register(sub)``; listed here so `vmio --help` shows all.
FEATURES = (
    "vmio.cli_campaign",
    "vmio.advise.cli",
    "vmio.relocate.cli",
    "vmio.report.cli",
    "vmio.dstore.cli",
    "vmio.guest.cli",
    "vmio.membal.cli",
)


def _feature_registrars() -> list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]:
    return [importlib.import_module(name).register for name in FEATURES]


def main(argv: list[str] | None = None) -> int:
    """Run vmio with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and on bad arguments
        return 0 if exc.code in (0, None) else 2
    handler: Handler = args.handler
    try:
        return handler(args)
    except VmioError as exc:
        print(f"vmio: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("vmio: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `vmio show | head`: the reader left; not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
