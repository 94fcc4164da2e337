"""Policies by the slope of each VM's miss-ratio curve: ``marginal`` (sampled stack distances) and
``refault`` (the refault activations an unmodified Linux guest reports)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vmio.membal.observation import F64, Budget, VmObservation
from vmio.membal.split import lookahead_split


class Marginal:
    """Allocate by the estimated miss-ratio curves' slopes (decayed sampled stack-distance histograms)."""

    name = "marginal"

    def __init__(
        self,
        budget: Budget,
        step: int | None = None,
        sample_rate: float = 0.1,
        decay: float = 0.5,
        min_gain: float = 0.002,
    ) -> None:
        self.budget = budget
        self.step = step or max(1, budget.memory // 16)
        self.sample_rate = sample_rate
        self.decay = decay
        self.min_gain = min_gain
        self.est: list[F64] | None = None

    def decide(self, obs: Sequence[VmObservation]) -> list[int]:
        alloc = [o.allocation for o in obs]
        hists = [o.reuse for o in obs]
        if any(h is None for h in hists):
            raise ValueError("the marginal policy needs each VM's sampled reuse histogram")
        new = [np.asarray(h, dtype=np.float64) for h in hists]
        self.est = (
            new if self.est is None else [self.decay * e + h for e, h in zip(self.est, new, strict=True)]
        )
        curves = [np.concatenate([[0.0], np.cumsum(e[:-1])]) for e in self.est]
        g = self.budget.grain
        units = self.budget.memory // g
        floors = [-(-f // g) for f in self.budget.floors]
        target = [u * g for u in lookahead_split(curves, units, floors)]
        target = _fit(target, self.budget.memory, self.budget.floors)
        gain = sum(_at(c, t / g) - _at(c, a / g) for c, t, a in zip(curves, target, alloc, strict=True))
        if gain <= self.min_gain * max(sum(o.accesses for o in obs), 1):
            return alloc
        return _toward(alloc, target, self.step)


def _fit(target: list[int], memory: int, floors: Sequence[int]) -> list[int]:
    """``target`` raised to the floors and made to sum to ``memory`` (rounding to grains can miss both)."""
    out = [max(t, f) for t, f in zip(target, floors, strict=True)]
    extra = sum(out) - memory
    for i in sorted(range(len(out)), key=lambda i: floors[i] - out[i]):
        take = min(max(extra, 0), out[i] - floors[i])
        out[i] -= take
        extra -= take
    out[int(np.argmax(out))] -= min(extra, 0)
    return out


def _at(curve: F64, units: float) -> float:
    """The curve at a fractional unit, linearly interpolated."""
    return float(np.interp(units, np.arange(curve.size), curve))


def _toward(alloc: list[int], target: list[int], step: int) -> list[int]:
    """Move from ``alloc`` toward ``target`` by at most ``step`` pages per VM; the sum stays the same."""
    give = [min(max(t - a, 0), step) for a, t in zip(alloc, target, strict=True)]
    need = sum(give)
    out = [a + d for a, d in zip(alloc, give, strict=True)]
    for i in sorted(range(len(alloc)), key=lambda i: target[i] - alloc[i]):
        take = min(max(alloc[i] - target[i], 0), need)
        out[i] -= take
        need -= take
    return out


class Refault:
    """Move ``step`` from the VM with the fewest activations per cached page to the one with the most.

    Uses only what an unmodified guest reports (``/proc/vmstat`` activations, file pages). Activations show
    the gain of growing, not the loss of shrinking, and a cache that fits its working set shows none until
    it no longer fits. So a donor without activations gives up only ``shrink`` of the memory it leaves
    unused per epoch; and when a cut makes its donor the hungriest VM at once (its gain more than doubled),
    the cut is undone and the donor's allocation before it is kept as a floor for ``remember`` epochs.
    """

    name = "refault"
    sample_rate = 0.0

    def __init__(
        self,
        budget: Budget,
        step: int | None = None,
        hysteresis: float = 0.1,
        shrink: float = 0.1,
        remember: int = 50,
    ) -> None:
        self.budget = budget
        self.shrink = shrink
        self.remember = remember
        self.step = step or max(1, budget.memory // 32)
        self.hysteresis = hysteresis
        self.learned: dict[int, tuple[int, int]] = {}  # VM → (floor, epochs left)
        self.cut: tuple[int, int, float] | None = (
            None  # last decision's donor, its allocation and gain before
        )

    def decide(self, obs: Sequence[VmObservation]) -> list[int]:
        alloc = [o.allocation for o in obs]
        gain = [o.activations / o.resident if o.resident else 0.0 for o in obs]
        self.learned = {i: (f, n - 1) for i, (f, n) in self.learned.items() if n > 1}
        high = max(range(len(obs)), key=lambda i: gain[i])
        if self.cut is not None and self.cut[0] == high and gain[high] > 2 * self.cut[2]:
            self.learned[high] = (self.cut[1], self.remember)  # the cut hurt its donor most: undo, remember
        floors = [max(f, self.learned.get(i, (0, 0))[0]) for i, f in enumerate(self.budget.floors)]
        self.cut = None
        donors = [i for i in range(len(obs)) if alloc[i] > floors[i] and i != high]
        if not donors:
            return alloc
        low = min(donors, key=lambda i: gain[i])
        if gain[high] > (1 + self.hysteresis) * gain[low]:
            move = min(self.step, alloc[low] - floors[low])
            if obs[low].activations == 0:  # its cache may fit: give up only a share of what it leaves unused
                move = min(move, int(self.shrink * (alloc[low] - obs[low].resident)))
            if move > 0:
                self.cut = (low, alloc[low], gain[low])
                alloc[low] -= move
                alloc[high] += move
        return alloc
