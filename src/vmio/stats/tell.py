"""The one rule for "can these repetitions tell": a statement about repeated measurements is decided only when
the ``LEVEL`` (95 %) confidence interval of the quantity it is about lies wholly on one side of the boundary the
statement draws.

- ``side(values, threshold)``: is the mean above or below a threshold (a paper's figure, a criterion)? Student's
  t interval of the mean; fewer than 2 values, or an interval that contains the threshold: ``"inconclusive"``.
- ``change(before, after, size)``: did a figure change by more than ``size`` (relative to ``before``'s mean)?
  Welch's interval of the difference of means: wholly beyond ``-size`` or ``+size`` (relative) is a change
  (``"higher"``/``"lower"``); wholly inside ``(-size, +size)`` is ``"unchanged"``; anything else, including an
  interval wider than the size asked about, is ``"inconclusive"``.
- ``settled(values, bound)``: is the spread small enough? The interval's half-width is at most ``bound`` of the
  mean (pbench's "max stddev" in the same terms).

The papers' ``stable``, the gate's "inconclusive", a series' changes and repeat-until-stable all use these.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from vmio.stats.spread import LEVEL, welch
from vmio.stats.student import t_quantile

# the size of change asked about when the user names none (``vmio compare``'s and ``vmio trend``'s --min-change)
DEFAULT_MIN_CHANGE = 0.05

Side = Literal["above", "below", "inconclusive"]
Change = Literal["higher", "lower", "unchanged", "inconclusive"]


@dataclass(frozen=True)
class Interval:
    """The mean of ``n`` values and its two-sided ``level`` interval (Student's t); no interval below 2 values."""

    mean: float
    lo: float | None
    hi: float | None
    n: int
    level: float = LEVEL

    @property
    def half_width(self) -> float | None:
        return None if self.lo is None or self.hi is None else (self.hi - self.lo) / 2

    def as_dict(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "lo": self.lo, "hi": self.hi, "n": self.n, "level": self.level}


def interval(values: Sequence[float], level: float = LEVEL) -> Interval:
    """Student's t interval of the mean of ``values`` (at least one, all finite)."""
    if not values:
        raise ValueError("interval needs at least one value")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"interval needs finite values, got {list(values)!r}")
    mean, n = statistics.fmean(values), len(values)
    if n < 2:
        return Interval(mean, None, None, n, level)
    half = t_quantile(0.5 + level / 2, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, level)


def side(values: Sequence[float], threshold: float, level: float = LEVEL) -> Side:
    """Whether the mean of ``values`` lies above or below ``threshold``, or the repetitions cannot tell."""
    ci = interval(values, level)
    if ci.lo is None or ci.hi is None:
        return "inconclusive"
    if ci.lo > threshold:
        return "above"
    if ci.hi < threshold:
        return "below"
    return "inconclusive"


def change(before: Sequence[float], after: Sequence[float], size: float, level: float = LEVEL) -> Change:
    """Whether ``after``'s mean differs from ``before``'s by more than ``size`` (a fraction of ``before``'s mean)."""
    if size < 0:
        raise ValueError(f"change needs size >= 0, got {size!r}")
    d = welch(before, after, level)
    if d is None or d.lo is None or d.hi is None or d.before == 0:
        return "inconclusive"
    lo, hi, bound = d.lo / abs(d.before), d.hi / abs(d.before), size
    if lo > bound:
        return "higher"
    if hi < -bound:
        return "lower"
    if -bound < lo and hi < bound:
        return "unchanged"
    return "inconclusive"


def settled(values: Sequence[float], bound: float, level: float = LEVEL) -> bool:
    """Whether the interval of the mean is within ``bound`` (a fraction) of the mean on each side."""
    ci = interval(values, level)
    if ci.half_width is None or ci.mean == 0:
        return False
    return ci.half_width <= bound * abs(ci.mean)
