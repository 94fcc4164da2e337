"""TOML files whose values can be traced back to a line, so errors say ``file:line``.

``tomllib`` gives no positions; ``Locator`` recovers them from the text for the usual layout
(one ``key = value`` per line under ``[table]`` or ``[[array-of-tables]]`` headers).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vmio.errors import InputError, SpecError
from vmio.system.input_file import read_text

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")
MAX_BYTES = 4 << 20
_TOML_POS = re.compile(r"\(at line (\d+), column \d+\)")


@dataclass
class Locator:
    """Line numbers of tables and keys in one TOML text."""

    path: str
    tables: dict[tuple[str, int], int] = field(default_factory=dict)
    keys: dict[tuple[str, int, str], int] = field(default_factory=dict)

    @classmethod
    def scan(cls, path: str, text: str) -> Locator:
        loc = cls(path)
        counts: dict[str, int] = {}
        current = ("", 0)
        for lineno, line in enumerate(text.splitlines(), start=1):
            header = _HEADER.match(line)
            if header:
                name = header.group(2)
                index = counts.get(name, -1) + 1 if header.group(1) == "[[" else 0
                counts[name] = index
                current = (name, index)
                loc.tables[current] = lineno
                continue
            key = _KEY.match(line)
            if key:
                loc.keys.setdefault((*current, key.group(1)), lineno)
        return loc

    def line(self, table: str, index: int = 0, key: str | None = None) -> int:
        if key is not None and (table, index, key) in self.keys:
            return self.keys[(table, index, key)]
        return self.tables.get((table, index), 1)

    def error(self, table: str, index: int, key: str | None, message: str) -> SpecError:
        """A ``SpecError`` that starts with ``file:line:``."""
        return SpecError(f"{self.path}:{self.line(table, index, key)}: {message}")


def load_toml(path: str | Path) -> tuple[dict[str, Any], Locator]:
    """Parse a TOML file; syntax errors become ``SpecError`` with file:line."""
    return loads_toml(read_spec_text(path), str(path))


def read_spec_text(path: str | Path, what: str = "spec") -> str:
    """The UTF-8 text of a spec-like file: a regular file (a FIFO, device or folder is refused before it is
    opened) of at most ``MAX_BYTES``; errors are ``SpecError`` naming the path."""
    try:
        return read_text(path, what, MAX_BYTES)
    except InputError as exc:
        raise SpecError(str(exc)) from None


def loads_toml(text: str, path: str = "<spec>") -> tuple[dict[str, Any], Locator]:
    """Parse TOML text named ``path`` in messages."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise SpecError(f"{path}: values nested too deeply to read") from None
    except tomllib.TOMLDecodeError as exc:
        pos = _TOML_POS.search(str(exc))
        line = pos.group(1) if pos else "1"
        reason = _TOML_POS.sub("", str(exc)).strip()
        raise SpecError(f"{path}:{line}: not valid TOML: {reason}") from exc
    except ValueError:  # an integer past Python's digit limit (4300)
        raise SpecError(f"{path}: an integer has more digits than vmio reads (at most 4300)") from None
    return data, Locator.scan(path, text)
