"""The CloudPhysics vSCSI trace: CSV ``version,time,op,size,lbn`` (op 28 = read, 2a = write; ``size`` in
bytes, ``lbn`` in 512-byte sectors). One reader, for relocation (a ``Trace``) and memory balancing (pages).

The time unit is not documented, so a ``Trace`` keeps the raw values and ``time_unit`` is ``None``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vmio.errors import TraceError
from vmio.traces.trace import READ, WRITE, Trace, TraceBuilder

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


def requests(path: str | Path) -> Iterator[Request]:
    """Every request of the file in order; a bad header or row is a ``TraceError`` naming ``file:line``."""
    path = Path(path)
    try:
        with path.open(newline="") as fh:
            rows = csv.reader(fh)
            header = next(rows, None)
            if header is None or [h.strip() for h in header] != COLUMNS:
                raise TraceError(f"{path}:1: header {header!r} is not {','.join(COLUMNS)!r}")
            for line, row in enumerate(rows, start=2):
                if row:
                    yield _request(path, line, row)
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: is not a text CSV file ({exc.reason})") from exc
    except (OSError, ValueError) as exc:
        raise TraceError(f"{path}: cannot read the trace: {exc}") from exc


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
    pairs = [(r.offset, r.size) for r in requests(path) if r.size > 0]
    if not pairs:
        raise TraceError(f"{path}: the trace has no request with a size above 0")
    start_byte, size = (np.asarray(column, dtype=np.int64) for column in zip(*pairs, strict=True))
    first = start_byte // page
    counts = (start_byte + size - 1) // page - first + 1
    offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    pages: I64 = np.repeat(first, counts) + offsets
    return pages
