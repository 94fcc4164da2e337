"""What a memory controller sees of each VM per interval, what it may hand out, and the policy protocol.

This is the seam between the simulator and a live balloon controller: both build one
:class:`VmObservation` per VM per interval, call :meth:`Policy.decide` and apply the allocations it
returns (pages), never below a floor and never more than the budget in total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class VmObservation:
    """What a controller knows about one VM after an interval."""

    allocation: int  # pages the VM may use for its page cache
    resident: int  # pages its cache holds
    accesses: int
    hits: int
    hit_pages: int  # distinct pages that hit in the interval (hitachi-membal-2014's "hit pages")
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
