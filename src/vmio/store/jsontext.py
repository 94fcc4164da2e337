"""``json.dumps(obj, indent=1)``, the same text byte for byte, at the speed of the C encoder.

Python's C encoder ignores ``indent``, so ``json.dumps(..., indent=1)`` falls back to the pure-Python encoder:
about 50 µs per ``vmio show --json`` row, 5 s of 100k points. Here each run of scalar items of a dict or list
is encoded in one call of the C encoder whose item separator is the newline and indent of its depth; only
non-empty containers are walked in Python. Anything it does not take (a key that is not a string, a value
JSON cannot hold) goes to ``json.dumps`` itself, which gives the same text or the same error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any

_make = getattr(_encoder, "c_make_encoder", None)
_quote = _encoder.encode_basestring_ascii
_FLAT: dict[int, Callable[[object, int], Any]] = {}
_CONTAINERS = (dict, list, tuple)
_PLACEHOLDER = "\x00vmio: a nested value\x00"
_MARK = ": " + _quote(_PLACEHOLDER)


class _Slow(Exception):
    """This value is for ``json.dumps`` to encode."""


def _refuse(_value: object) -> object:
    raise _Slow


def _flat(depth: int) -> Callable[[object, int], Any]:
    """The C encoder for scalars at ``depth``: items separated by a newline and ``depth`` spaces."""
    enc = _FLAT.get(depth)
    if enc is None:
        enc = _FLAT[depth] = _make(None, _refuse, _quote, None, ": ", ",\n" + " " * depth, False, False, True)  # type: ignore[misc]
    return enc


def dumps(obj: object) -> str:
    """``json.dumps(obj, indent=1)``."""
    if _make is None:
        return json.dumps(obj, indent=1)
    try:
        return _encode(obj, 0)
    except _Slow:
        return json.dumps(obj, indent=1)


def list_pieces(items: list[str], indent: str = "", closing: str = "") -> list[str]:
    """A list of items already encoded, in pieces (``"".join`` of them is its text; a large list is not
    copied into one string first): ``"[\n" + indent + (",\n" + indent).join(items) + "\n" + closing + "]"``,
    ``[]`` for none."""
    if not items:
        return ["[]"]
    out = ["[\n" + indent]
    for item in items:
        out += (item, ",\n" + indent)
    out[-1] = "\n" + closing + "]"
    return out


def _nested(value: object) -> bool:
    return isinstance(value, _CONTAINERS) and len(value) > 0


def _scalars(items: dict[str, object] | list[object], depth: int) -> str:
    """The items of a dict or list of scalars, one a line at ``depth``, without its brackets."""
    return "".join(_flat(depth)(items, 0))[1:-1]


def _encode_dict(obj: dict[Any, Any], depth: int, inner: str) -> str:
    """A dict in one call of the C encoder, its non-empty containers as placeholders filled in after."""
    nested = [k for k, v in obj.items() if isinstance(v, _CONTAINERS) and v]
    if not nested:
        return "{\n" + inner + "".join(_flat(depth + 1)(obj, 0))[1:-1] + "\n" + " " * depth + "}"
    marked = dict(obj)
    for key in nested:
        marked[key] = _PLACEHOLDER
    # ': "<placeholder>"' is a key's value: inside a JSON string a quote is always escaped
    pieces = "".join(_flat(depth + 1)(marked, 0))[1:-1].split(_MARK)
    if len(pieces) != len(nested) + 1:
        raise _Slow  # a value that is the placeholder itself
    out = [pieces[0]]
    for key, piece in zip(nested, pieces[1:], strict=True):
        out += (": ", _encode(obj[key], depth + 1), piece)
    return "{\n" + inner + "".join(out) + "\n" + " " * depth + "}"


def _encode_records(obj: list[Any] | tuple[Any, ...], depth: int) -> str:
    """A list of non-empty dicts (``show --json``'s rows) in one call of the C encoder: each dict's items
    one a line at ``depth + 2``, its non-empty containers as placeholders filled in after. The list's own
    separators come out as ``},<newline and the dicts' indent>{``, which nothing else can print (a JSON
    string holds no newline, a dict's item starts with its key's quote), and get the list's indent."""
    nested: list[Any] = []
    marked_rows = []
    for row in obj:
        keys = [k for k, v in row.items() if isinstance(v, _CONTAINERS) and v]
        if keys:
            marked = dict(row)
            for key in keys:
                marked[key] = _PLACEHOLDER
                nested.append(row[key])
            marked_rows.append(marked)
        else:
            marked_rows.append(row)
    pad, inner = " " * (depth + 1), " " * (depth + 2)
    text = "".join(_flat(depth + 2)(marked_rows, 0))[2:-2]  # without "[{" and "}]"
    text = text.replace("},\n" + inner + "{", "\n" + pad + "},\n" + pad + "{\n" + inner)
    pieces = text.split(_MARK)
    if len(pieces) != len(nested) + 1:
        raise _Slow  # a value that is the placeholder itself
    out = ["[\n", pad, "{\n", inner, pieces[0]]
    for value, piece in zip(nested, pieces[1:], strict=True):
        out += (": ", _encode(value, depth + 2), piece)
    out += ("\n", pad, "}\n", " " * depth, "]")
    return "".join(out)


def _encode(obj: object, depth: int) -> str:
    if not _nested(obj):
        return "".join(_flat(depth + 1)(obj, 0))
    inner = " " * (depth + 1)
    if isinstance(obj, dict):
        return _encode_dict(obj, depth, inner)
    if all(type(v) is dict and v for v in obj):  # type: ignore[attr-defined]
        return _encode_records(obj, depth)  # type: ignore[arg-type]
    parts: list[str] = []
    items: list[Any] = []
    for value in obj:  # type: ignore[attr-defined]
        if _nested(value):
            if items:
                parts.append(_scalars(items, depth + 1))
                items = []
            parts.append(_encode(value, depth + 1))
        else:
            items.append(value)
    if items:
        parts.append(_scalars(items, depth + 1))
    return "[\n" + inner + (",\n" + inner).join(parts) + "\n" + " " * depth + "]"
