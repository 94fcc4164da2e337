"""Every argument of every command says what it is: ``--help`` never lists a bare flag (issue 38 counted 34)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from vmio.cli.main import build_parser

# test seams hidden from --help on purpose (argparse.SUPPRESS): a fake /proc, /sys, QEMU binary
HIDDEN = {("vmio advise", "--qemu"), ("vmio advise", "--sysfs"), ("vmio advise", "--proc"),
          ("vmio diagnose", "--proc")}  # fmt: skip


def arguments(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str, str | None]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from arguments(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield path, (action.option_strings or [action.dest])[-1], action.help


def test_every_argument_has_help() -> None:
    found = list(arguments(build_parser(), "vmio"))
    assert len(found) > 250  # every command's arguments were walked (277 now)
    bare = [(cmd, arg) for cmd, arg, text in found if not (text or "").strip() and (cmd, arg) not in HIDDEN]
    assert bare == []
    suppressed = {(cmd, arg) for cmd, arg, text in found if text == argparse.SUPPRESS}
    assert suppressed == HIDDEN


def test_an_argument_without_help_fails_the_check() -> None:
    parser = build_parser()
    parser.add_argument("--bare")
    assert ("vmio", "--bare", None) in list(arguments(parser, "vmio"))
