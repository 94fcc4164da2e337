"""The ``vmio`` command: parse, call the library, print, return an exit code.

Exit codes: 0 success, 1 a run or check failed, 2 bad input, 3 refused as unsafe, 130 SIGINT, 143 SIGTERM
(both unwind every command as an error would: see ``signals_unwind``).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn

from vmio.errors import VmioError
from vmio.system.output_paths import user_path, write_failed
from vmio.version import vmio_version

Handler = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported in one line (``--help`` still shows the usage)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("vmio").strip()
        where = f"{command}: " if command else ""
        self.exit(2, f"vmio: error: {where}{message}; see `{self.prog} --help`\n")


# The module under vmio.cli of each command family and the commands its ``register(sub)`` adds, in the order
# `vmio --help` lists them. A command imports only its own family's module (tests/test_cli_startup.py holds
# this table to what each module registers).
FEATURES: dict[str, tuple[str, ...]] = {
    "campaign": ("run", "show", "ls", "rm", "rename", "import", "export"),
    "advise": ("advise", "diagnose", "calibrate", "tune"),
    "relocate": ("relocate",),
    "report": ("report", "compare"),
    "trend": ("trend",),
    "dstore": ("dstore",),
    "guest": ("guest",),
    "qemu": ("qemu",),
    "membal": ("membal",),
    "reproduce": ("reproduce",),
}
FAMILY = {command: family for family, commands in FEATURES.items() for command in commands}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given ``argv``, only of the family its command belongs to (none for a
    bare ``--version``), so that a command imports no other command's libraries."""
    parser: argparse.ArgumentParser = Parser(
        prog="vmio", description="Storage I/O laboratory for KVM/QEMU hosts."
    )
    parser.add_argument("--version", action="version", version=f"vmio {vmio_version()}")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=Parser
    )
    sub.required = True
    for family in _families(argv):
        importlib.import_module(f"vmio.cli.{family}").register(sub)
    return parser


def _families(argv: Sequence[str] | None) -> list[str]:
    if argv is None:
        return list(FEATURES)
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    if command in FAMILY:
        return [FAMILY[command]]
    if command is None and "--version" in argv:
        return []
    return list(FEATURES)  # `vmio --help`, or a command argparse will say is not one


def main(argv: list[str] | None = None) -> int:
    """Run vmio with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and on bad arguments
        return 0 if exc.code in (0, None) else 2
    handler: Handler = args.handler
    try:
        with signals_unwind():
            return handler(args)
    except VmioError as exc:
        text = str(exc) if exc.exit_code != 2 else _one_line(str(exc))
        print(f"vmio: error: {text}", file=sys.stderr)
        return exc.exit_code
    except Terminated:
        print("vmio: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("vmio: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:  # `vmio show | head`: the reader left; not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise  # anything else is a bug to see with its traceback
        print(f"vmio: error: {write_failed(user_path(exc.filename or '?'), exc)}", file=sys.stderr)
        return 1


def _one_line(text: str) -> str:
    """A bad-input message as one line: control characters a value carried in are shown escaped."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is: a ``KeyboardInterrupt`` so it unwinds exactly like Ctrl-C (VMs
    shut down, loop devices detached, temporaries removed), then exits 143."""


@contextlib.contextmanager
def signals_unwind() -> Iterator[None]:
    """For every command: SIGTERM raises :class:`Terminated`, SIGINT ``KeyboardInterrupt`` (even where the
    parent started vmio with SIGINT ignored); the previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise Terminated

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, terminate),
        signal.SIGINT: signal.signal(signal.SIGINT, interrupt),
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
