"""Reading typed fields out of a membal scenario's TOML tables, with errors that name file:line (found by
``vmio.spec.tomlfile.Locator``, as for experiment specs), the field, the value and what is accepted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vmio.errors import SpecError
from vmio.spec.tomlfile import Locator
from vmio.units import parse_size


@dataclass(frozen=True)
class Where:
    """A table in the scenario: how to name it and find its lines."""

    src: Locator
    table: str
    index: int | None = None
    label: str = ""
    anchor: str | None = None  # a key to point at when ``key`` is not on a line of its own (inline tables)

    def error(self, key: str | None, value: object, accepted: str) -> SpecError:
        line = self.src.line(self.table, self.index or 0, self.anchor or key)
        field = f"{self.label}.{key}" if key else self.label
        return SpecError(f"{self.src.path}:{line}: {field} = {value!r} is not accepted; {accepted}")


_MISSING = object()


def need_table(where: Where, data: Mapping[str, Any], known: set[str]) -> None:
    for key in data:
        if key not in known:
            raise where.error(key, data[key], f"known fields are {', '.join(sorted(known))}")


def get_int(
    where: Where,
    data: Mapping[str, Any],
    key: str,
    default: Any = _MISSING,
    *,
    low: int = 0,
    high: int = 10**12,
) -> int:
    value = data.get(key, default)
    if value is _MISSING:
        raise where.error(key, None, f"it is required: a whole number from {low} to {high}")
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise where.error(key, value, f"use a whole number from {low} to {high}")
    return value


def get_float(
    where: Where,
    data: Mapping[str, Any],
    key: str,
    default: Any = _MISSING,
    *,
    low: float = 0.0,
    high: float = 1e12,
    low_open: bool = False,
) -> float:
    value = data.get(key, default)
    if value is _MISSING:
        raise where.error(key, None, f"it is required: a number from {low} to {high}")
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not (low < value if low_open else low <= value) or not value <= high:
        bound = f"above {low}" if low_open else f"from {low}"
        raise where.error(key, value, f"use a number {bound} up to {high}")
    return float(value)


def get_str(
    where: Where,
    data: Mapping[str, Any],
    key: str,
    default: Any = _MISSING,
    choices: tuple[str, ...] | None = None,
) -> str:
    value = data.get(key, default)
    if value is _MISSING:
        raise where.error(key, None, "it is required" + (f": one of {', '.join(choices)}" if choices else ""))
    if not isinstance(value, str) or not value.strip():
        raise where.error(key, value, "use a non-empty string")
    if choices is not None and value not in choices:
        raise where.error(key, value, f"use one of {', '.join(choices)}")
    return value


def get_size(
    where: Where,
    data: Mapping[str, Any],
    key: str,
    default: Any = _MISSING,
    *,
    low: int = 0,
    high: int = 1 << 50,
) -> int:
    """Bytes from a size (``4096``, ``"4k"``, ``"1G"``)."""
    value = data.get(key, default)
    if value is _MISSING:
        raise where.error(key, None, "it is required: a size such as '4k' or '1G'")
    try:
        size = parse_size(value)
    except ValueError:
        raise where.error(key, value, "use a size such as 4096, '4k', '64M' or '1G'") from None
    if not low <= size <= high:
        raise where.error(key, value, f"use a size from {low} to {high} bytes")
    return size


def get_pages(
    where: Where,
    data: Mapping[str, Any],
    key: str,
    page: int,
    default: Any = _MISSING,
    *,
    low: int = 1,
    high: int = 1 << 26,
) -> int:
    """Pages from a count (``1000``) or a size (``"4M"``, rounded up to whole pages)."""
    value = data.get(key, default)
    if isinstance(value, int) and not isinstance(value, bool):
        pages = value
    else:
        pages = -(-get_size(where, data, key, default) // page)
    if not low <= pages <= high:
        raise where.error(key, value, f"use from {low} to {high} pages (a count, or a size such as '64M')")
    return pages
