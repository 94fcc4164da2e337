"""Spread over repetitions and Welch's interval for a difference of means."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from vmio.stats.student import t_quantile

LEVEL = 0.95


@dataclass(frozen=True)
class Spread:
    """The median of ``n`` repetitions and their range."""

    median: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float | None]) -> Spread | None:
        have = [float(v) for v in values if v is not None]
        if not have:
            return None
        return cls(statistics.median(have), min(have), max(have), len(have))

    def scaled(self, factor: float) -> Spread:
        return Spread(self.median * factor, self.lo * factor, self.hi * factor, self.n)

    def as_dict(self) -> dict[str, float | int]:
        return {"median": self.median, "min": self.lo, "max": self.hi, "n": self.n}


def ratio(num: Spread, den: Spread) -> Spread | None:
    """``num / den``: the ratio of medians, bounded by the extreme ratios of the two ranges."""
    if den.median <= 0 or den.lo <= 0:
        return None
    return Spread(num.median / den.median, num.lo / den.hi, num.hi / den.lo, min(num.n, den.n))


@dataclass(frozen=True)
class Difference:
    """``mean(after) - mean(before)`` with its two-sided ``LEVEL`` interval (Welch)."""

    before: float
    after: float
    diff: float
    lo: float | None
    hi: float | None
    n_before: int
    n_after: int

    @property
    def decided(self) -> bool:
        return self.lo is not None and self.hi is not None

    @property
    def significant(self) -> bool:
        return self.decided and (self.lo > 0 or self.hi < 0)  # type: ignore[operator]

    @property
    def rel(self) -> float | None:
        return self.diff / self.before if self.before else None


def welch(before: Sequence[float], after: Sequence[float], level: float = LEVEL) -> Difference | None:
    """The difference of means and its interval; no interval with fewer than 2 values on a side."""
    if not before or not after:
        return None
    ma, mb = statistics.fmean(before), statistics.fmean(after)
    na, nb = len(before), len(after)
    diff = mb - ma
    if na < 2 or nb < 2:
        return Difference(ma, mb, diff, None, None, na, nb)
    qa, qb = statistics.variance(before) / na, statistics.variance(after) / nb
    se = math.sqrt(qa + qb)
    if se == 0:
        return Difference(ma, mb, diff, diff, diff, na, nb)
    df = (qa + qb) ** 2 / (qa**2 / (na - 1) + qb**2 / (nb - 1))
    half = t_quantile(0.5 + level / 2, df) * se
    return Difference(ma, mb, diff, diff - half, diff + half, na, nb)
