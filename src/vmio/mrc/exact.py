"""Exact miss-ratio curves from Mattson stack distances, and their sampled (SHARDS-style) estimates.

A *hit curve* here is an integer array ``h`` with ``h[u]`` = hits an LRU cache of ``u * grain`` pages would
have had; the miss-ratio curve is ``1 - h / accesses``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from vmio.mrc import shards, stackdist

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def dense_pages(pages: I64) -> tuple[I64, int]:
    """Renumber non-negative page ids to 0..n-1 keeping their order; returns (pages, n).

    Ids in a range not much larger than the stream go through a lookup table (linear time); others are
    sorted (``np.unique``)."""
    if pages.size == 0:
        return pages.astype(np.int64), 0
    top = int(pages.max())
    if int(pages.min()) >= 0 and top < 4 * pages.size + (1 << 20):
        seen = np.zeros(top + 1, dtype=np.bool_)
        seen[pages] = True
        index = np.cumsum(seen, dtype=np.int64) - 1
        return index[pages], int(index[-1]) + 1
    uniq, inverse = np.unique(pages, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), int(uniq.size)


def stack_distances(pages: I64) -> I64:
    """Stack distance of every access of ``pages`` (-1 = first access); any non-negative page ids."""
    dense, n = dense_pages(pages)
    return stackdist.stack_distances(dense, max(n, 1))


def hit_curve(distances: I64, units: int, grain: int = 1) -> I64:
    """``h[u]`` = accesses with distance < ``u * grain``, for u = 0..units."""
    reused = distances[distances >= 0]
    buckets = np.minimum(reused // grain + 1, units + 1)  # distance d hits from u = d // grain + 1 on
    counts = np.bincount(buckets, minlength=units + 2)[: units + 1]
    return np.cumsum(counts).astype(np.int64)


def epoch_hit_curves(distances: I64, epochs: I64, n_epochs: int, units: int, grain: int) -> I64:
    """Hit curves per epoch: ``out[e, u]`` = accesses in epoch ``e`` with distance < ``u * grain``."""
    keep = distances >= 0
    buckets = np.minimum(distances[keep] // grain + 1, units + 1)
    flat = epochs[keep] * (units + 2) + buckets
    counts = np.bincount(flat, minlength=n_epochs * (units + 2)).reshape(n_epochs, units + 2)
    return np.cumsum(counts[:, : units + 1], axis=1).astype(np.int64)


def sampled_distances(pages: I64, rate: float) -> tuple[npt.NDArray[np.bool_], F64]:
    """(mask of sampled accesses, their estimated stack distances scaled by 1/R; -1 = first access), by the
    SHARDS sampler at a fixed rate (``R`` is ``rate`` rounded to the hash's grid)."""
    got = shards.ShardsSampler(rate).feed(pages)
    mask = np.zeros(pages.size, dtype=np.bool_)
    mask[got.index] = True
    return mask, got.distance
