"""Memory policies: every epoch, per-VM observations in, per-VM allocations (pages) out.

The seam for a live balloon controller is in :mod:`vmio.membal.observation`.

- ``equal``: the same share for every VM.
- ``efficiency``: hitachi-membal-2014's rule. Page utilization efficiency = pages that hit / cache pages; move ``step``
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
from typing import Any

from vmio.membal.marginal import Marginal, Refault
from vmio.membal.observation import Budget, Policy, VmObservation, equal_split

# policy → its parameters and their kind: "size" (bytes → pages) or "fraction" (0 < x <= 1)
POLICY_PARAMS: dict[str, dict[str, str]] = {
    "equal": {},
    "efficiency": {"step": "size"},
    "marginal": {"step": "size", "sample_rate": "fraction", "decay": "fraction", "min_gain": "fraction"},
    "mom": {"free_min": "fraction", "shrink": "fraction", "grow": "fraction"},
    "refault": {"step": "size", "hysteresis": "fraction", "shrink": "fraction"},
}


class Equal:
    name = "equal"
    sample_rate = 0.0

    def __init__(self, budget: Budget) -> None:
        self.alloc = equal_split(budget)

    def decide(self, obs: Sequence[VmObservation]) -> list[int]:
        return list(self.alloc)


class Efficiency:
    """hitachi-membal-2014: take ``step`` pages from the least efficient VM, give them to the most efficient."""

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
