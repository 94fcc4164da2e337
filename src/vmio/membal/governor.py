"""The live controller's rules between a policy's proposal and the balloons: floors, ceilings, a maximum
step, hysteresis, deflation under pressure, and the shared budget.

``govern`` is a pure function of the old targets, the policy's proposed targets and which guests report
memory pressure, so it is tested on recorded observations without VMs. Its order:

1. round the change to the grain (toward the old target); clamp to ``[floor, ceiling]``;
2. a guest under pressure gets at least ``deflate`` bytes more (the balloon gives memory back) and
   never shrinks;
3. no VM moves more than ``max_step`` per interval;
4. hysteresis: a VM not under pressure does not move for less than ``min_move``;
5. the targets fit the budget: first the growth of guests without pressure is cut, then guests without
   pressure give memory (down to their floor, within the step) to those under pressure, last the growth
   of guests under pressure is cut. Floors are never crossed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vmio.errors import InputError
from vmio.units import format_size


@dataclass(frozen=True)
class Rules:
    """Bytes throughout; one floor and one ceiling (the VM's boot memory) per VM."""

    budget: int
    floors: tuple[int, ...]
    ceilings: tuple[int, ...]
    max_step: int
    min_move: int
    deflate: int
    grain: int = 1 << 20

    def __post_init__(self) -> None:
        for i, (f, c) in enumerate(zip(self.floors, self.ceilings, strict=True)):
            if not 0 < f <= c:
                raise InputError(
                    f"VM {i}: floor {format_size(f)!r} must be above 0 and at most its memory "
                    f"{format_size(c)!r}"
                )
        if sum(self.floors) > self.budget:
            raise InputError(
                f"the floors add up to {format_size(sum(self.floors))!r}, more than the budget "
                f"{format_size(self.budget)!r}; lower the floors or raise the budget"
            )
        if self.max_step < self.grain or self.deflate < self.grain:
            raise InputError(
                f"max step {format_size(self.max_step)!r} and deflate step {format_size(self.deflate)!r} "
                f"must be at least the grain {format_size(self.grain)!r}"
            )
        if self.min_move < 0:
            raise InputError(f"min move {self.min_move!r} must not be negative")

    def initial(self) -> list[int]:
        """Equal shares of the budget, within floors and ceilings, on the grain."""
        n = len(self.floors)
        share = self.budget // n // self.grain * self.grain
        return [min(max(share, f), c) for f, c in zip(self.floors, self.ceilings, strict=True)]


@dataclass(frozen=True)
class Move:
    """One VM's decision: its old target, what the policy proposed, the new target and why."""

    old: int
    proposed: int
    new: int
    reasons: tuple[str, ...]

    @property
    def reason(self) -> str:
        return ",".join(self.reasons) or ("policy" if self.new != self.old else "hold")


def govern(rules: Rules, old: Sequence[int], proposed: Sequence[int], pressure: Sequence[bool]) -> list[Move]:
    """New balloon targets (bytes) from the old ones, the policy's proposal and each guest's pressure."""
    n = len(old)
    why: list[list[str]] = [[] for _ in range(n)]
    want = [_limit(rules, i, old[i], proposed[i], pressure[i], why[i]) for i in range(n)]
    _fit_budget(rules, old, want, pressure, why)
    return [Move(old[i], proposed[i], want[i], tuple(dict.fromkeys(why[i]))) for i in range(n)]


def _limit(rules: Rules, i: int, old: int, proposed: int, pressed: bool, why: list[str]) -> int:
    """Steps 1-4 for one VM."""
    g = rules.grain
    floor, ceiling = rules.floors[i], rules.ceilings[i]
    change = abs(proposed - old) // g * g  # toward the old target, so a move between two VMs stays balanced
    want = old + change if proposed >= old else old - change
    if want < floor:
        want = floor
        why.append("floor")
    if want > ceiling:
        want = ceiling
        why.append("ceiling")
    if pressed:
        want = max(want, min(old + rules.deflate, ceiling), old)
        why.append("pressure")
    if abs(want - old) > rules.max_step:
        want = old + rules.max_step if want > old else old - rules.max_step
        why.append("max-step")
    want = min(max(want, floor), ceiling)
    if not pressed and want != old and abs(want - old) < rules.min_move:
        want = old
        why.append("hysteresis")
    return max(want, floor)


def _fit_budget(
    rules: Rules, old: Sequence[int], want: list[int], pressure: Sequence[bool], why: list[list[str]]
) -> None:
    """Step 5, in place."""
    over = sum(want) - rules.budget
    calm = [i for i in range(len(want)) if not pressure[i]]
    pressed = [i for i in range(len(want)) if pressure[i]]
    for i in sorted(calm, key=lambda i: old[i] - want[i]):  # biggest growth first
        over = _take(want, i, min(over, want[i] - old[i]), why[i], "budget", over)
    for i in sorted(calm, key=lambda i: rules.floors[i] - want[i]):  # most room above the floor first
        room = want[i] - max(rules.floors[i], old[i] - rules.max_step)
        over = _take(want, i, min(over, room), why[i], "donor", over)
    for i in sorted(pressed, key=lambda i: old[i] - want[i]):
        over = _take(want, i, min(over, want[i] - old[i]), why[i], "budget", over)


def _take(want: list[int], i: int, amount: int, why: list[str], reason: str, over: int) -> int:
    """Lower ``want[i]`` by ``amount`` (rounded up to keep the budget) when positive; the new excess."""
    if amount <= 0:
        return over
    want[i] -= amount
    why.append(reason)
    return over - amount
