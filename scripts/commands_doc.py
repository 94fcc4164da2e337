"""Write docs/commands.md from vmio's own argparse parser: every command, its usage and every flag.

Run after adding or changing a command or flag (tests/test_readme.py fails on a flag no doc names):
    .venv/bin/python scripts/commands_doc.py > docs/commands.md
"""

from __future__ import annotations

import argparse
import sys

from vmio.cli.main import build_parser

HEAD = """# Command reference

Every `vmio` command and flag (`vmio COMMAND --help` prints the same; this page is written from the parser
by `scripts/commands_doc.py`). Exit codes: 0 ok, 1 a run or check failed, 2 bad input, 3 refused as
unsafe, 130 interrupted, 143 terminated. Commands that read the store open it read-only; `--db` defaults to
`./vmio.db` or `$VMIO_DB`.
"""


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                if helps.get(name) != argparse.SUPPRESS:
                    out.append((name, helps.get(name) or "", sub))
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _section(path: tuple[str, ...], about: str, parser: argparse.ArgumentParser) -> list[str]:
    command = " ".join(("vmio", *path))
    usage = " ".join(parser.format_usage().split())
    usage = usage.removeprefix("usage: ")
    lines = [f"## `{command}`", ""]
    if about:
        lines += [about[0].upper() + about[1:] + ("" if about.endswith(".") else "."), ""]
    lines += ["```", usage, "```", ""]
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(
            action, argparse._HelpAction | argparse._SubParsersAction
        ):
            continue
        if action.option_strings:
            name = f"`{max(action.option_strings, key=len)}`"
            if action.nargs != 0:
                name += f" {action.metavar or action.dest.upper()}"
        else:
            name = f"`{(action.metavar or action.dest).upper()}`"
        help_text = (action.help or "") % {"default": action.default} if action.help else ""
        rows.append(f"| {_cell(name)} | {_cell(help_text)} |")
    if rows:
        lines += ["| argument | meaning |", "|---|---|", *rows, ""]
    return lines


def render() -> str:
    lines = [HEAD]

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for name, about, sub in _subcommands(parser):
            lines.extend(_section((*path, name), about, sub))
            walk(sub, (*path, name))

    walk(build_parser(), ())
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
