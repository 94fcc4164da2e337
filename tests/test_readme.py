"""The README (with docs/*.md) documents every command, flag, spec key and export format vmio has.

The commands and flags come from walking vmio's own argparse parser; the spec keys from the spec loader
itself (each table given an unknown key answers with the keys it accepts); the export formats from
``vmio.store.export.FORMATS``. A flag added without documentation fails here, which the last test shows
on a copy of the parser.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from vmio.cli.main import build_parser
from vmio.errors import SpecError
from vmio.spec import loads_spec
from vmio.store.export import FORMATS

ROOT = Path(__file__).resolve().parents[1]


def documentation() -> str:
    return "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:  # fmt: skip
    """Every sub-command, depth first, with its parser (``vmio`` itself is the empty path)."""
    out = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            hidden = {c.dest for c in action._choices_actions if c.help == argparse.SUPPRESS}
            for name, sub in action.choices.items():
                if name not in hidden:
                    out += commands(sub, (*path, name))
    return out


def flags(parser: argparse.ArgumentParser) -> list[str]:
    """The parser's documented-to-users options: the long form of every option not suppressed."""
    out = []
    for action in parser._actions:
        if (
            action.help == argparse.SUPPRESS
            or not action.option_strings
            or isinstance(action, argparse._HelpAction)
        ):
            continue
        out.append(max(action.option_strings, key=len))
    return out


def undocumented(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """What the parser offers that ``text`` never names: ``vmio CMD`` for commands, ``vmio CMD --flag``."""
    missing = []
    for path, sub in commands(parser):
        command = " ".join(("vmio", *path))
        if path and not re.search(rf"{re.escape(command)}(?![\w-])", text):
            missing.append(command)
        missing += [
            f"{command} {flag}" for flag in flags(sub) if not re.search(rf"{re.escape(flag)}(?![\w-])", text)
        ]
    return missing


def test_every_command_and_flag_is_documented() -> None:
    assert undocumented(build_parser(), documentation()) == []


def test_a_flag_added_without_documentation_fails_the_check() -> None:
    parser = build_parser()
    (_, run), *_ = [(p, s) for p, s in commands(parser) if p == ("run",)]
    run.add_argument("--frobnicate-the-disks", action="store_true", help="an undocumented new flag")
    hidden = run.add_argument("--internal-knob", help=argparse.SUPPRESS)
    assert hidden.help == argparse.SUPPRESS
    assert undocumented(parser, documentation()) == ["vmio run --frobnicate-the-disks"]


# One spec per table shape, each with a key no table accepts: the loader's error lists the keys it does.
TABLES = {
    "campaign": '[campaign]\nname = "c"\nzzz_unknown = 1\n[[target]]\nname = "t"\npath = "/x"\n'
    '[[workload]]\nname = "w"\nrw = "read"\n',
    "host target": '[campaign]\nname = "c"\n[[target]]\nname = "t"\npath = "/x"\nzzz_unknown = 1\n'
    '[[workload]]\nname = "w"\nrw = "read"\n',
    "qemu target": '[campaign]\nname = "c"\n[[target]]\nname = "t"\nkind = "qemu"\nbacking = "/x"\n'
    'zzz_unknown = 1\n[[workload]]\nname = "w"\nrw = "read"\n',
    "remote target": '[campaign]\nname = "c"\n[[target]]\nname = "t"\nkind = "remote"\nhosts = "h:1"\n'
    'path = "/x"\nzzz_unknown = 1\n[[workload]]\nname = "w"\nrw = "read"\n',
    "rbd target": '[campaign]\nname = "c"\n[[target]]\nname = "t"\nkind = "rbd"\nimage = "i"\nconf = "/c"\n'
    'zzz_unknown = 1\n[[workload]]\nname = "w"\nrw = "read"\n',
    "workload": '[campaign]\nname = "c"\n[[target]]\nname = "t"\npath = "/x"\n[[workload]]\nname = "w"\n'
    'rw = "read"\nzzz_unknown = 1\n',
    "fio workload": '[campaign]\nname = "c"\n[[target]]\nname = "t"\npath = "/x"\n[[workload]]\n'
    'fio = "/nonexistent.fio"\nzzz_unknown = 1\n',
}


def spec_keys() -> dict[str, list[str]]:
    out = {}
    for table, text in TABLES.items():
        with pytest.raises(SpecError, match="unknown key 'zzz_unknown'") as err:
            loads_spec(text)
        found = re.search(r"known keys: (.*)$", str(err.value), flags=re.M)
        assert found, str(err.value)
        out[table] = found.group(1).split(", ")
    return out


def test_every_spec_key_is_documented() -> None:
    text = documentation()
    keys = spec_keys()
    assert {"name", "repetitions", "sla", "seed"} <= set(keys["campaign"])  # the walk found the tables' keys
    assert {"backing", "cache", "aio", "idle_vms"} <= set(keys["qemu target"])
    missing = [f"{table}: {key}" for table, names in keys.items() for key in names
               if not re.search(rf"(^|[\s`(\[]){re.escape(key)} =", text, flags=re.M)]  # fmt: skip
    assert missing == []


def test_every_export_format_is_documented() -> None:
    text = documentation()
    assert [f for f in FORMATS if not re.search(rf"`{f}`|--format {f}\b", text)] == []
