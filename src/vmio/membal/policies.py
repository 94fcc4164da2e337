"""Memory policies: every epoch, per-VM observations in, per-VM allocations (pages) out.

This is the seam between the simulator and a live balloon controller: both build one
:class:`VmObservation` per VM per interval and apply what :meth:`Policy.decide` returns.

- ``equal``: the same share for every VM.
- ``efficiency``: seed 001's rule. Page utilization efficiency = pages that hit / cache pages; move ``step``
  from the least to the most efficient VM. Kept to compare against: it can move memory the wrong way.
- ``marginal`` (default): the slope of each VM's miss-ratio curve, estimated online from sampled stack
  distances (SHARDS), decides; a UCP lookahead sees past cliffs.
- ``refault``: the marginal rule on what an unmodified guest can report: activations (refaults a cache
  twice as large would have hit, ``workingset_activate_file``) per cached page estimate each VM's slope;
  the candidate for the live balloon controller.
- ``mom``: a free-memory rule like oVirt MOM's balloon policy: reclaim guests' unused memory, grow guests
  that have none left. It does not see how useful a cache is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from vmio.membal.split import lookahead_split

F64 = npt.NDArray[np.float64]

# policy → its parameters and their kind: "size" (bytes → pages) or "fraction" (0 < x <= 1)
POLICY_PARAMS: dict[str, dict[str, str]] = {
    "equal": {},
    "efficiency": {"step": "size"},
    "marginal": {"step": "size", "sample_rate": "fraction", "decay": "fraction", "min_gain": "fraction"},
    "mom": {"free_min": "fraction", "shrink": "fraction", "grow": "fraction"},
    "refault": {"step": "size", "hysteresis": "fraction", "shrink": "fraction"},
}


@dataclass(frozen=True)
class VmObservation:
    """What a controller knows about one VM after an interval."""

    allocation: int  # pages the VM may use for its page cache
    resident: int  # pages its cache holds
    accesses: int
    hits: int
    hit_pages: int  # distinct pages that hit in the interval (seed 001's "hit pages")
    refaults: int = 0  # misses on pages evicted before (a guest's /proc/vmstat workingset_refault_file)
    activations: int = 0  # refaults a cache twice as large would have hit (workingset_activate_file)
    reuse: F64 | None = None  # sampled stack distances, histogram over grain units (last bin: beyond)


@dataclass(frozen=True)
class Budget:
    memory: int  # pages shared by all VMs
    floors: tuple[int, ...]
    grain: int  # pages per allocation unit


class Policy(Protocol):
    name: str
    sample_rate: float  # > 0: the policy needs ``VmObservation.reuse`` sampled at this rate

    def decide(self, obs: Sequence[VmObservation]) -> list[int]: ...


def equal_split(budget: Budget) -> list[int]:
    """Equal shares, raised to floors (the rest shared equally among the others); sums to memory."""
    n = len(budget.floors)
    alloc = [0] * n
    fixed: set[int] = set()
    while True:
        free = [i for i in range(n) if i not in fixed]
        left = budget.memory - sum(budget.floors[i] for i in fixed)
        share = left // len(free) if free else 0
        low = [i for i in free if budget.floors[i] > share]
        if not low:
            break
        fixed.update(low)
    for i in range(n):
        alloc[i] = budget.floors[i] if i in fixed else share
    alloc[free[0] if free else 0] += budget.memory - sum(alloc)
    return alloc


class Equal:
    name = "equal"
    sample_rate = 0.0

    def __init__(self, budget: Budget) -> None:
        self.alloc = equal_split(budget)

    def decide(self, obs: Sequence[VmObservation]) -> list[int]:
        return list(self.alloc)


class Efficiency:
    """Seed 001: take ``step`` pages from the least efficient VM, give them to the most efficient."""

    name = "efficiency"
    sample_rate = 0.0

    def __init__(self, budget: Budget, step: int | None = None) -> None:
        self.budget = budget
        self.step = step or max(1, budget.memory // 32)

    def decide(self, obs: Sequence[VmObservation]) -> list[int]:
        alloc = [o.allocation for o in obs]
        eff = [o.hit_pages / o.resident if o.resident else 0.0 for o in obs]
        donors = [i for i in range(len(obs)) if alloc[i] > self.budget.floors[i]]
        if not donors:
            return alloc
        low = min(donors, key=lambda i: eff[i])
        high = max(range(len(obs)), key=lambda i: eff[i])
        if eff[high] > eff[low]:
            move = min(self.step, alloc[low] - self.budget.floors[low])
            alloc[low] -= move
            alloc[high] += move
        return alloc


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


class Mom:
    """Free-memory rule: reclaim a share of a guest's memory that stayed unused over an interval (its cache
    stopped growing), and grow guests that have no free memory left from what was reclaimed."""

    name = "mom"
    sample_rate = 0.0

    def __init__(
        self, budget: Budget, free_min: float = 0.05, shrink: float = 0.1, grow: float = 0.05
    ) -> None:
        self.budget = budget
        self.free_min = free_min
        self.shrink = shrink
        self.grow = grow
        self.resident: list[int] | None = None

    def decide(self, obs: Sequence[VmObservation]) -> list[int]:
        alloc = [o.allocation for o in obs]
        before = self.resident or [0] * len(obs)
        self.resident = [o.resident for o in obs]
        for i, o in enumerate(obs):
            excess = (o.allocation - o.resident) - int(self.free_min * o.allocation)
            if excess > 0 and o.resident <= before[i]:  # free memory that stayed free
                alloc[i] -= min(int(self.shrink * excess), alloc[i] - self.budget.floors[i])
        pool = self.budget.memory - sum(alloc)
        hungry = [i for i, o in enumerate(obs) if o.allocation - o.resident < self.free_min * o.allocation]
        for i in hungry:
            more = min(max(1, int(self.grow * alloc[i])), pool)
            alloc[i] += more
            pool -= more
        return alloc


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


def make_policy(name: str, budget: Budget, params: Mapping[str, Any] | None = None) -> Policy:
    """A fresh policy by name; ``params`` are already validated (sizes in pages)."""
    kw = dict(params or {})
    if name == "equal":
        return Equal(budget)
    if name == "efficiency":
        return Efficiency(budget, **kw)
    if name == "marginal":
        return Marginal(budget, **kw)
    if name == "mom":
        return Mom(budget, **kw)
    if name == "refault":
        return Refault(budget, **kw)
    raise ValueError(f"no policy {name!r}; policies are {', '.join(POLICY_PARAMS)}")
