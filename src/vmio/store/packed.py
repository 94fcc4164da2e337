"""A run's samples as the store keeps them: one row of table ``sample`` per run, not one per sample.

The row holds the run's ``n`` samples in the order export writes them (by time, source and metric, ties in the
order written) as four JSON lists: ``t`` and ``value`` of numbers, each written as Python's ``repr`` of the float
SQLite's REAL column would have read back (``-0.0`` as ``0.0``, NaN as null, an integer as a float), ``source``
and ``metric`` of texts. A run's samples are read and written together, so one row a run costs one fetch, and
the numbers' texts are the export's cells as they are (no float formatted again: at 100k points the per-sample
rows were 2M rows to step, sort and convert, and 4M floats to ``repr``).

The store checks each row's four lists when a command first reads the table (``integrity``: JSON lists of
``n``); the numbers' texts are checked as numbers where they are read (``numbers``: finite, or null in
``value``), so a damaged row is the same one error a REAL column holding text was.
"""

from __future__ import annotations

import itertools
import json
import math
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from vmio.errors import InputError

Packed = tuple[int, str, str, str, str]  # n, t, source, metric, value as table sample holds them
SampleRow = dict[str, Any]  # one sample as the readers take it: run_id, t, source, metric, value

_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # a list, in one C call


def pack(samples: Sequence[tuple[Any, ...]]) -> Packed:
    """``(n, t, source, metric, value)`` of a run's samples ``(t, source, metric, value)``: sorted as export
    orders them (stable: ties as written), the numbers as SQLite's REAL columns kept them (a float, -0.0 as
    0.0, NaN as null); an ``InputError`` for a time or value that is not a number or a source or metric that
    is not text."""
    try:
        rows = [(float(t) + 0.0, s, m, None if v is None else float(v) + 0.0) for t, s, m, v in samples]
    except (TypeError, ValueError):
        bad = next((s for s in samples if not (_number(s[0]) and (s[3] is None or _number(s[3])))), samples)
        raise InputError(f"a sample's time or value is not a number: {_shown(bad)}") from None
    for row in rows:
        if row[0] != row[0] or type(row[1]) is not str or type(row[2]) is not str:
            raise InputError(f"a sample needs a time, and a source and metric of text: {_shown(row)}")
    rows.sort(key=_ORDER)
    ts, sources, metrics, values = zip(*rows, strict=True) if rows else ((), (), (), ())
    return _lists(ts, sources, metrics, [v if v == v else None for v in values])  # NaN: SQLite's NULL


def _lists(
    ts: Sequence[Any], sources: Sequence[Any], metrics: Sequence[Any], values: Sequence[Any]
) -> Packed:
    """The packed row of samples already in export order, their numbers as SQLite's REAL columns keep them."""
    return len(ts), _ENCODE(ts), _ENCODE(sources), _ENCODE(metrics), _ENCODE(values)


_ORDER = itemgetter(0, 1, 2)


def _number(value: object) -> bool:
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


def numbers(text: str, n: int, column: str) -> list[str]:
    """The texts of the ``n`` numbers of a packed ``t`` or ``value`` list (``null`` for none, in ``value``),
    each as JSON and ``repr`` write it; a ``ValueError`` naming the item that is not a finite number. The
    list is valid JSON of ``n`` items (``integrity`` checked it when the table was first read), so an item
    that is not a number holds a quote, a bracket or a letter of true, false or null; one with an exponent is
    read to see that it is finite."""
    inner = text[1:-1]
    other = '"' in inner or "[" in inner or "{" in inner or "t" in inner or "f" in inner
    if other or ("n" in inner and column != "value"):  # a text, list, object, true, false; null but in value
        raise ValueError(_not_numbers(text, column))
    parts = inner.split(",") if n else []
    exponent = "e" in inner or "E" in inner
    if len(parts) != n or (exponent and not all(p == "null" or math.isfinite(float(p)) for p in parts)):
        raise ValueError(_not_numbers(text, column))
    return parts


def _not_numbers(text: str, column: str) -> str:
    """Why ``text`` is not a packed list of finite numbers: its first item that is not one."""
    try:
        items = json.loads(text, parse_int=float)
    except ValueError:
        return f"{column} = {_shown(text)} is not a JSON list"
    for item in items if isinstance(items, list) else [items]:
        if item is None and column == "value":
            continue
        if type(item) not in (int, float) or not math.isfinite(item):
            return f"{column} holds {_shown(item)}, which is not a finite number"
    return f"{column} = {_shown(text)} is not a list of numbers as vmio writes it"


def texts(text: str, n: int, column: str) -> list[str]:
    """The ``n`` texts of a packed ``source`` or ``metric`` list; a ``ValueError`` if it holds other items."""
    items = json.loads(text)
    if type(items) is not list or len(items) != n or not all(type(i) is str for i in items):
        bad = next((i for i in items if type(i) is not str), text) if type(items) is list else text
        raise ValueError(f"{column} holds {_shown(bad)}, where vmio writes a list of {n} texts")
    return items


def unpack(run_id: int, row: Packed) -> list[SampleRow]:
    """A run's packed row as its samples, each ``{"run_id", "t", "source", "metric", "value"}`` (floats)."""
    n, t, source, metric, value = row
    numbers(t, n, "t")
    numbers(value, n, "value")
    ts, vs = json.loads(t, parse_int=float), json.loads(value, parse_int=float)
    for column, items in (("t", ts), ("value", vs)):  # a number of 309 digits and more, without an exponent
        if math.inf in items or -math.inf in items:
            raise ValueError(_not_numbers(t if column == "t" else value, column))
    return [
        {"run_id": run_id, "t": a, "source": s, "metric": m, "value": v}
        for a, s, m, v in zip(ts, texts(source, n, "source"), texts(metric, n, "metric"), vs, strict=True)
    ]


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def migrate(db: sqlite3.Connection, table: str) -> None:
    """Fill ``table`` (the packed form) from the per-sample rows of ``sample``, read in export order (``t,
    source, metric``, then as written) and packed a run at a time (``_lists``: the numbers as the REAL columns
    hold them), never more than one run's rows held; a run whose rows hold a blob is an ``InputError``."""
    cur = db.execute(
        "SELECT run_id, t, source, metric, value FROM sample ORDER BY run_id, t, source, metric, rowid"
    )
    rows = itertools.chain.from_iterable(iter(lambda: cur.fetchmany(5000), []))
    db.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?, ?)", _runs(rows))


def _runs(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[object, ...]]:
    for run_id, mine in itertools.groupby(rows, itemgetter(0)):
        _, ts, sources, metrics, values = zip(*mine, strict=True)
        try:
            yield (run_id, *_lists(ts, sources, metrics, values))
        except TypeError as exc:  # a blob (bytes): only a store written by hand holds one
            raise InputError(f"cannot move the samples of run {run_id} into their new form: {exc}") from None
