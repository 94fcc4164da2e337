"""Access heat: per image, accesses per extent and over time; hot-spot detection.

A request counts once, at the extent holding its first byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from vmio.errors import InputError
from vmio.traces.trace import Trace, check_page_budget, expand_runs


class Extents(Protocol):
    """What a hot set needs of a layout (``relocate.layout.Layout``, which imports this module): each image's
    extent count and the extent size."""

    @property
    def names(self) -> tuple[str, ...]: ...
    @property
    def nextents(self) -> tuple[int, ...]: ...
    @property
    def extent_bytes(self) -> int: ...


DEFAULT_EXTENT = 1 << 20


def extents_of(size_bytes: int, extent_bytes: int) -> int:
    """How many extents hold ``size_bytes`` (the last one may be partial)."""
    return -(-size_bytes // extent_bytes)


# extents per image or disk vmio counts, maps and moves: 2**26 (one 8-byte counter each is 512 MiB)
MAX_EXTENTS = 1 << 26


def check_extents(what: str, extents: int, extent_bytes: int) -> None:
    """Refuse work over more than MAX_EXTENTS extents before any array is made."""
    if extents > MAX_EXTENTS:
        raise InputError(
            f"{what} spans {extents} extents of {extent_bytes} bytes; vmio handles at most {MAX_EXTENTS} "
            f"extents (the limit); use a larger --extent"
        )


def touched_counts(
    trace: Trace, image: int, extent_bytes: int, nextents: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The extents of ``image`` its requests touch (ascending) and the accesses of each, so time and memory
    follow the requests, not the image's size. The image has ``nextents`` extents (default: the highest
    touched + 1), checked: within MAX_EXTENTS and every request inside the image."""
    sub = trace.image == image
    idx = trace.offset[sub] // extent_bytes
    size = int(idx.max()) + 1 if nextents is None and len(idx) else (nextents or 0)
    check_extents(f"image {trace.images[image]!r}", size, extent_bytes)
    if len(idx) and int(idx.max()) >= size:
        raise InputError(
            f"image {trace.images[image]!r} is accessed at byte {int(trace.offset[sub].max())}, beyond its "
            f"{size * extent_bytes} bytes; give the image's real size"
        )
    extents, counts = np.unique(idx, return_counts=True)
    return extents.astype(np.int64), counts.astype(np.int64)


ADDRESS_ROWS = 1024  # the heat map's address rows at most: its figure is 300 pixels tall


def heat_over_time(
    trace: Trace, image: int, extent_bytes: int, nextents: int, time_bins: int = 50, rows: int = ADDRESS_ROWS
) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
    """A (time bin × address row) matrix of access counts for ``image``, the time-bin edges, and the
    extents a row sums (``rows`` at most: an image of more extents has each row sum as many consecutive
    extents as it takes, so the matrix stays small for a large image and no access is dropped)."""
    sub = trace.image == image
    t = trace.time[sub]
    lo, hi = (float(t.min()), float(t.max())) if len(t) else (0.0, 1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, time_bins + 1)
    tb = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, time_bins - 1)
    per = max(1, -(-nextents // rows))
    eb = trace.offset[sub] // extent_bytes // per
    grid = np.zeros((time_bins, -(-nextents // per)), dtype=np.int64)
    np.add.at(grid, (tb, eb), 1)
    return grid, edges, per


def hot_by_coverage(counts: NDArray[np.int64], coverage: float) -> NDArray[np.int64]:
    """The smallest set of extents that together receive at least ``coverage`` (0..1] of all accesses
    (indices into ``counts``, ascending; ties go to the lower index, so extents never accessed are never
    picked and ``touched_counts``' extents give the same set as every extent's counts, zeros included)."""
    if not 0.0 < coverage <= 1.0:
        raise InputError(f"coverage {coverage!r} must be in (0, 1]; e.g. 0.9 for 90 % of accesses")
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(-counts, kind="stable")
    cum = np.cumsum(counts[order])
    k = int(np.searchsorted(cum, coverage * total - 1e-9 * total, side="left")) + 1
    return np.sort(order[:k]).astype(np.int64)


def hot_by_budget(counts: NDArray[np.int64], budget_extents: int) -> NDArray[np.int64]:
    """The ``budget_extents`` most accessed extents (only those accessed at all; indices into ``counts``,
    ascending, ties to the lower index as in ``hot_by_coverage``)."""
    order = np.argsort(-counts, kind="stable")[: max(budget_extents, 0)]
    return np.sort(order[counts[order] > 0]).astype(np.int64)


@dataclass(frozen=True)
class HotChoice:
    """Which extents are hot: the ``budget_bytes`` most accessed per image, or those covering ``coverage``
    (here, not beside the replay, so that ``relocate plan`` imports no simulator)."""

    budget_bytes: int | None = None
    coverage: float = 0.9

    def pick(self, trace: Trace, layout: Extents) -> list[NDArray[np.int64]]:
        """Per image, its hot logical extents (ascending), chosen among the extents its requests touch."""
        out = []
        for i in range(len(layout.names)):
            extents, counts = touched_counts(trace, i, layout.extent_bytes, layout.nextents[i])
            if self.budget_bytes is not None:
                out.append(extents[hot_by_budget(counts, self.budget_bytes // layout.extent_bytes)])
            else:
                out.append(extents[hot_by_coverage(counts, self.coverage)])
        return out


@dataclass(frozen=True)
class ImageHeat:
    """One image's heat summary."""

    name: str
    accesses: int
    extents_touched: int
    hot_extents: int
    hot_bytes: int
    hot_share: float

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def summarize(trace: Trace, extent_bytes: int, coverage: float) -> list[ImageHeat]:
    """Per image: accesses, extents touched, and the hot set covering ``coverage`` of accesses."""
    out = []
    for i, name in enumerate(trace.images):
        _extents, counts = touched_counts(trace, i, extent_bytes)
        hot = hot_by_coverage(counts, coverage)
        total = int(counts.sum())
        share = float(counts[hot].sum()) / total if total else 0.0
        out.append(ImageHeat(name, total, len(counts), len(hot), len(hot) * extent_bytes, share))
    return out


def pages_of(trace: Trace, index: int, page: int = 4096) -> NDArray[np.int64]:
    """Every page image ``index``'s requests touch, in issue order (a request of several pages gives each
    of them in turn; a request of no bytes, none): the key stream a cache in front of the image sees."""
    mine = (trace.image == index) & (trace.length > 0)
    first = trace.offset[mine] // page
    counts = (trace.offset[mine] + trace.length[mine] - 1) // page - first + 1
    check_page_budget(int(counts.sum()), int(mine.sum()), f"image {trace.images[index]!r}")
    return expand_runs(first, counts)
