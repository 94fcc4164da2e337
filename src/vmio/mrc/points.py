"""A miss-ratio curve read at cache sizes in bytes: ``relocate analyze --cache-curve``'s per-image curves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vmio.mrc.curve import Sampling, stream_curve

FRACTIONS = (64, 16, 4, 2, 1)  # the default sizes: 1/64, 1/16, 1/4, 1/2 and all of the pages touched


@dataclass(frozen=True)
class CacheCurve:
    """An LRU miss ratio at each cache size asked for (bytes, ratio)."""

    method: str
    accesses: int
    points: list[tuple[int, float]]

    def as_dict(self) -> dict[str, object]:
        points = [{"cache_bytes": b, "miss_ratio": r} for b, r in self.points]
        return {"method": self.method, "accesses": self.accesses, "points": points}


def cache_curve(
    pages: npt.NDArray[np.int64], page: int, sizes: Sequence[int] | None, how: Sampling
) -> CacheCurve:
    """The miss ratios of ``pages`` (one access each, ``page`` bytes a page) at ``sizes`` bytes of cache
    (default: the ``FRACTIONS`` of the pages touched), exact or sampled as ``how`` says."""
    curve = stream_curve([pages], how)
    touched = int(np.unique(pages).size)
    at = tuple(sizes) if sizes else tuple(max(page, touched * page // d) for d in FRACTIONS)
    ratios = curve.at(np.asarray(at, dtype=np.int64) // page)
    points = [(int(b), round(float(r), 6)) for b, r in zip(at, ratios, strict=True)]
    return CacheCurve(curve.method, curve.accesses, points)
