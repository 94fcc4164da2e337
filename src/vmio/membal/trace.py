"""Block traces as page streams.

The CloudPhysics vSCSI CSV (``version,time,op,size,lbn``; ``size`` in bytes, ``lbn`` in 512-byte sectors)
is expanded request by request into the pages it covers, in order.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vmio.errors import TraceError

I64 = npt.NDArray[np.int64]
COLUMNS = ["version", "time", "op", "size", "lbn"]
SECTOR = 512
MAX_SIZE = 1 << 31  # bytes in one request
MAX_LBN = 1 << 50  # sectors: 512 PiB


def _requests(path: Path) -> tuple[list[int], list[int]]:
    lbns: list[int] = []
    sizes: list[int] = []
    try:
        with path.open(newline="") as fh:
            rows = csv.reader(fh)
            header = next(rows, None)
            if header is None or [h.strip() for h in header] != COLUMNS:
                raise TraceError(f"{path}:1: header {header!r} is not {','.join(COLUMNS)!r}")
            for line, row in enumerate(rows, start=2):
                if not row:
                    continue
                size, lbn = _fields(path, line, row)
                sizes.append(size)
                lbns.append(lbn)
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: is not a text CSV file ({exc.reason})") from exc
    except (OSError, ValueError) as exc:
        raise TraceError(f"{path}: cannot read the trace: {exc}") from exc
    return sizes, lbns


def _fields(path: Path, line: int, row: list[str]) -> tuple[int, int]:
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
    return size, lbn


def read_vscsi_pages(path: str | Path, page: int = 4096) -> I64:
    """The page numbers every request of the trace touches, in trace order (zero-size requests skipped)."""
    sizes, lbns = _requests(Path(path))
    size = np.asarray(sizes, dtype=np.int64)
    start_byte = np.asarray(lbns, dtype=np.int64) * SECTOR
    keep = size > 0
    first = start_byte[keep] // page
    last = (start_byte[keep] + size[keep] - 1) // page
    counts = last - first + 1
    if counts.size == 0:
        raise TraceError(f"{path}: the trace has no request with a size above 0")
    offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    pages: I64 = np.repeat(first, counts) + offsets
    return pages
