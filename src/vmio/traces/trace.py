"""The normalized block trace: (time, image, op, offset, length) as numpy columns.

Times are seconds from the trace's first request unless ``time_unit`` is ``None`` (a trace whose clock
unit is not documented, such as the CloudPhysics sample); offsets and lengths are bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from vmio.errors import TraceError

READ = 0
WRITE = 1
OP_NAMES = ("read", "write")


@dataclass(frozen=True)
class Trace:
    """Block requests of one or more images, in issue order."""

    time: NDArray[np.float64]
    image: NDArray[np.int32]
    op: NDArray[np.uint8]
    offset: NDArray[np.int64]
    length: NDArray[np.int64]
    images: tuple[str, ...]
    time_unit: str | None = "s"

    def __len__(self) -> int:
        return int(self.time.shape[0])

    def for_image(self, index: int) -> Trace:
        """Only the requests of image ``index`` (image numbering kept)."""
        keep = self.image == index
        return self.select(keep)

    def select(self, keep: NDArray[np.bool_] | NDArray[np.int64]) -> Trace:
        """The requests picked by a mask or an index array."""
        return Trace(
            self.time[keep],
            self.image[keep],
            self.op[keep],
            self.offset[keep],
            self.length[keep],
            self.images,
            self.time_unit,
        )

    def image_extent_bytes(self) -> NDArray[np.int64]:
        """Per image, the highest byte any request touches (a lower bound of the image size)."""
        ends = np.zeros(len(self.images), dtype=np.int64)
        if len(self):
            np.maximum.at(ends, self.image, self.offset + self.length)
        return ends


MAX_BYTE = (1 << 63) - 1  # offsets and lengths are int64 bytes
# Pages a trace may expand to: a floor, plus so many per request read, so memory follows the requests read and
# not the bytes they claim (300 requests of 2 GiB each claim 157 million 4 KiB pages)
PAGE_FLOOR = 1 << 22
PAGES_PER_REQUEST = 256


def request_problem(time: float, offset: int, length: int) -> str | None:
    """Why a request cannot be one, or ``None``."""
    if not math.isfinite(time):
        return f"time {time!r} is not a finite number"
    if not 0 <= offset <= MAX_BYTE:
        return f"offset {offset!r} is out of range; use 0 to 2**63-1 bytes"
    if not 0 <= length <= MAX_BYTE - offset:
        return (
            f"length {length!r} at offset {offset!r} is out of range; the request must end before 2**63 bytes"
        )
    return None


def check_page_budget(pages: int, requests: int, where: str) -> None:
    """Refuse to expand ``requests`` requests that cover ``pages`` pages when that exceeds the budget."""
    budget = PAGE_FLOOR + PAGES_PER_REQUEST * requests
    if pages > budget:
        raise TraceError(
            f"{where}: {requests} requests cover {pages} pages; vmio expands at most {PAGE_FLOOR} pages plus "
            f"{PAGES_PER_REQUEST} per request ({budget} here, the limit), so memory follows the requests read"
        )


@dataclass
class TraceBuilder:
    """Collects requests one by one; ``build`` turns them into a ``Trace``."""

    time_unit: str | None = "s"
    _names: dict[str, int] = field(default_factory=dict)
    _rows: list[tuple[float, int, int, int, int]] = field(default_factory=list)

    def add(self, time: float, image: str, op: int, offset: int, length: int) -> None:
        """One request; ``ValueError`` (its reason) for a time that is not finite, an offset or length
        outside what a disk can hold (``0 <= offset``, ``0 <= length``, ``offset + length < 2**63``)."""
        problem = request_problem(time, offset, length)
        if problem:
            raise ValueError(problem)
        index = self._names.setdefault(image, len(self._names))
        self._rows.append((time, index, op, offset, length))

    def build(self, *, rebase_time: bool = True) -> Trace:
        rows = self._rows
        time = np.array([r[0] for r in rows], dtype=np.float64)
        if rebase_time and len(time):
            time = time - time.min()
        return Trace(
            time=time,
            image=np.array([r[1] for r in rows], dtype=np.int32),
            op=np.array([r[2] for r in rows], dtype=np.uint8),
            offset=np.array([r[3] for r in rows], dtype=np.int64),
            length=np.array([r[4] for r in rows], dtype=np.int64),
            images=tuple(self._names),
            time_unit=self.time_unit,
        )


def concat(traces: Sequence[Trace]) -> Trace:
    """Merge traces into one multi-image trace ordered by time; images with equal names are merged."""
    if not traces:
        raise ValueError("concat needs at least one trace")
    names: dict[str, int] = {}
    parts_image = []
    for tr in traces:
        remap = np.array([names.setdefault(n, len(names)) for n in tr.images] or [0], dtype=np.int32)
        parts_image.append(remap[tr.image] if len(tr) else tr.image)
    units = {tr.time_unit for tr in traces}
    time = np.concatenate([tr.time for tr in traces])
    order = np.argsort(time, kind="stable")
    return Trace(
        time=time[order],
        image=np.concatenate(parts_image)[order].astype(np.int32),
        op=np.concatenate([tr.op for tr in traces])[order],
        offset=np.concatenate([tr.offset for tr in traces])[order],
        length=np.concatenate([tr.length for tr in traces])[order],
        images=tuple(names),
        time_unit=units.pop() if len(units) == 1 else None,
    )


def expand_runs(first: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """Runs of consecutive numbers laid end to end: ``first[i]``, ``first[i] + 1``, ... ``counts[i]`` of them
    (the pages of requests, each given as its first page and how many it covers; every count at least 1)."""
    starts = np.cumsum(counts) - counts
    return np.asarray(
        np.repeat(first - starts, counts) + np.arange(int(counts.sum()), dtype=np.int64), dtype=np.int64
    )
