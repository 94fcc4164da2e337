"""The CloudPhysics vSCSI trace: CSV ``version,time,op,size,lbn`` (op 28 = read, 2a = write; ``size`` in
bytes, ``lbn`` in 512-byte sectors). One reader, for relocation (a ``Trace``) and memory balancing (the
pages each request covers, in order: all at once, or for traces larger than memory as a stream of chunks).

The time unit is not documented, so a ``Trace`` keeps the raw values and ``time_unit`` is ``None``.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vmio.errors import InputError, TraceError
from vmio.system.input_file import check_regular
from vmio.traces.trace import READ, WRITE, Trace, TraceBuilder, check_page_budget, expand_runs

I64 = npt.NDArray[np.int64]
COLUMNS = ["version", "time", "op", "size", "lbn"]
OPS = {"28": READ, "2a": WRITE}
SECTOR = 512
MAX_SIZE = 1 << 31  # bytes in one request
MAX_LBN = 1 << 50  # sectors: 512 PiB


@dataclass(frozen=True)
class Request:
    line: int
    time: float
    op: int
    offset: int  # bytes
    size: int  # bytes


def requests(path: str | Path, lines: Iterable[str] | None = None) -> Iterator[Request]:
    """Every request of the file in order, read as they are taken; a bad header or row is a ``TraceError``
    naming ``file:line``. ``lines`` (the file's lines, header first) replaces reading ``path``, which then
    only names the trace in errors."""
    path = Path(path)
    try:
        if lines is not None:
            yield from _parse(path, lines)
            return
        check_regular(path, "trace")
        with path.open(newline="", encoding="utf-8") as fh:
            yield from _parse(path, fh)
    except InputError as exc:
        raise TraceError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: is not a text CSV file ({exc.reason})") from exc
    except (OSError, ValueError) as exc:
        raise TraceError(f"{path}: cannot read the trace: {exc}") from exc


def _parse(path: Path, lines: Iterable[str]) -> Iterator[Request]:
    rows = csv.reader(lines)
    header = next(rows, None)
    if header is None or [h.strip() for h in header] != COLUMNS:
        raise TraceError(f"{path}:1: header {header!r} is not {','.join(COLUMNS)!r}")
    for line, row in enumerate(rows, start=2):
        if row:
            yield _request(path, line, row)


def _request(path: Path, line: int, row: list[str]) -> Request:
    if len(row) != len(COLUMNS):
        raise TraceError(f"{path}:{line}: {len(row)} columns in {row!r}; expected {len(COLUMNS)}")
    try:
        size, lbn = int(row[3]), int(row[4])
    except ValueError:
        raise TraceError(
            f"{path}:{line}: size {row[3]!r} and lbn {row[4]!r} must be whole numbers (bytes, sectors)"
        ) from None
    if not (0 <= size <= MAX_SIZE and 0 <= lbn <= MAX_LBN):
        raise TraceError(
            f"{path}:{line}: size {size!r} and lbn {lbn!r} are out of range; "
            f"use 0 to {MAX_SIZE} bytes and 0 to {MAX_LBN} sectors"
        )
    op = OPS.get(row[2].strip().lower())
    if op is None:
        raise TraceError(f"{path}:{line}: op {row[2]!r} is not 28 (read) or 2a (write): {','.join(row)!r}")
    try:
        time = float(row[1])
    except ValueError:
        raise TraceError(f"{path}:{line}: time {row[1]!r} is not a number: {','.join(row)!r}") from None
    if not math.isfinite(time):
        raise TraceError(f"{path}:{line}: time {row[1]!r} is not a finite number: {','.join(row)!r}")
    return Request(line, time, op, lbn * SECTOR, size)


def read_cloudphysics(path: str | Path) -> Trace:
    """The trace as one image named after the file."""
    builder = TraceBuilder(time_unit=None)
    image = Path(path).stem
    for r in requests(path):
        builder.add(r.time, image, r.op, r.offset, r.size)
    return builder.build()


def read_vscsi_pages(path: str | Path, page: int = 4096) -> I64:
    """The page numbers every request of the trace touches, in trace order (zero-size requests skipped)."""
    pages: I64 = np.concatenate(list(iter_vscsi_pages(path, page)))
    return pages


DEFAULT_CHUNK = 1 << 20  # pages per chunk of a streamed trace (8 MiB of int64)
_ROWS = 1 << 12  # CSV rows parsed per batch


def iter_vscsi_pages(
    path: str | Path, page: int = 4096, chunk: int = DEFAULT_CHUNK, lines: Iterable[str] | None = None
) -> Iterator[I64]:
    """The pages of ``read_vscsi_pages``, in the same order, as arrays of at most ``chunk`` pages.

    The file is read as the chunks are taken: at any time the reader holds one batch of CSV rows and one
    chunk of pages, whatever the trace's length. ``lines`` (the file's lines, header first) replaces
    reading ``path``, which then only names the trace in errors."""
    if chunk < 1:
        raise ValueError(f"chunk {chunk!r} must be at least one page")
    p = Path(path)
    buf = np.empty(chunk, dtype=np.int64)
    fill = 0
    seen = False
    for first, counts in _page_runs(p, page, lines):
        seen = seen or first.size > 0
        while first.size:
            fill, first, counts = _fill(buf, fill, first, counts)
            if fill == chunk:
                yield buf
                buf, fill = np.empty(chunk, dtype=np.int64), 0
    if not seen:
        raise TraceError(f"{p}: the trace has no request with a size above 0")
    if fill:
        yield buf[:fill]


def _fill(buf: I64, fill: int, first: I64, counts: I64) -> tuple[int, I64, I64]:
    """Expand the requests (first page, pages) that fit into ``buf[fill:]``, and the start of the next one
    if it does not fit whole; returns the new fill and the requests (or the rest of one) left over."""
    room = buf.size - fill
    cum = np.cumsum(counts[:room])  # every request covers at least one page: no more than ``room`` fit
    whole = int(np.searchsorted(cum, room, side="right"))
    if whole:
        n = int(cum[whole - 1])
        buf[fill : fill + n] = expand_runs(first[:whole], counts[:whole])
        fill += n
    first, counts = first[whole:], counts[whole:]
    if first.size and fill < buf.size:  # the next request only starts in this chunk
        take = buf.size - fill
        buf[fill:] = np.arange(first[0], first[0] + take, dtype=np.int64)
        first, counts = first.copy(), counts.copy()
        first[0] += take
        counts[0] -= take
        fill = buf.size
    return fill, first, counts


def _page_runs(path: Path, page: int, lines: Iterable[str] | None) -> Iterator[tuple[I64, I64]]:
    """(first page, pages) of the requests with a size above 0, one batch of rows at a time."""
    stream = requests(path, lines)
    read = pages = 0
    while batch := list(itertools.islice(stream, _ROWS)):
        size = np.fromiter((r.size for r in batch), dtype=np.int64, count=len(batch))
        start = np.fromiter((r.offset for r in batch), dtype=np.int64, count=len(batch))
        keep = size > 0
        first = start[keep] // page
        counts = (start[keep] + size[keep] - 1) // page - first + 1
        read, pages = read + len(batch), pages + int(counts.sum())
        check_page_budget(pages, read, f"{path}:{batch[-1].line}")
        yield first, counts
