"""The optimal split against brute force, and the lookahead against a cliff."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vmio.membal.marginal import Marginal
from vmio.membal.observation import Budget, VmObservation
from vmio.membal.split import lookahead_split, optimal_split


def brute_force(curves: list[np.ndarray], total: int, floors: list[int]) -> float:
    best = -1.0
    for alloc in itertools.product(*(range(f, total + 1) for f in floors)):
        if sum(alloc) == total:
            best = max(best, sum(float(c[a]) for c, a in zip(curves, alloc, strict=True)))
    return best


def random_curve(rng: np.random.Generator, units: int) -> np.ndarray:
    """Non-decreasing, with random steps, some of them cliffs."""
    steps = rng.exponential(1.0, units) * (rng.random(units) < 0.5)
    steps[rng.integers(0, units)] += rng.uniform(5, 20)  # a cliff
    return np.concatenate([[0.0], np.cumsum(steps)])


@pytest.mark.parametrize("seed", range(12))
def test_optimal_split_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 4))
    total = int(rng.integers(3, 10))
    floors = [int(rng.integers(0, 2)) for _ in range(n)]
    curves = [random_curve(rng, total) for _ in range(n)]
    value, alloc = optimal_split(curves, total, floors)
    assert sum(alloc) == total
    assert all(a >= f for a, f in zip(alloc, floors, strict=True))
    assert value == pytest.approx(sum(c[a] for c, a in zip(curves, alloc, strict=True)))
    assert value == pytest.approx(brute_force(curves, total, floors))


def test_optimal_split_takes_the_cliff_a_greedy_step_misses() -> None:
    loop = np.array([0, 0, 0, 0, 0, 0, 10.0])  # a loop over 6 units: all or nothing
    linear = np.arange(7, dtype=float)  # one hit per unit
    value, alloc = optimal_split([loop, linear], 6, [0, 0])
    assert (value, alloc) == (10.0, [6, 0])
    assert lookahead_split([loop, linear], 6, [0, 0]) == [6, 0]


def test_floors_are_kept_and_too_large_floors_refused() -> None:
    flat = np.zeros(5)
    steep = np.arange(5, dtype=float) * 3
    assert optimal_split([flat, steep], 4, [2, 0])[1] == [2, 2]
    with pytest.raises(ValueError, match="floors"):
        optimal_split([flat, steep], 4, [3, 2])


def test_lookahead_spreads_memory_nobody_gains_from() -> None:
    assert sorted(lookahead_split([np.zeros(5), np.zeros(5)], 4, [0, 0])) == [2, 2]


def test_marginal_keeps_floors_when_grains_do_not_divide_memory() -> None:
    budget = Budget(memory=1000, floors=(400, 400), grain=300)
    policy = Marginal(budget, min_gain=0.0)
    reuse = [np.array([0.0, 0.0, 0.0, 50.0]), np.array([90.0, 0.0, 0.0, 0.0])]
    obs = [VmObservation(500, 500, 100, 10, 5, reuse=r) for r in reuse]
    for _ in range(5):
        alloc = policy.decide(obs)
        assert sum(alloc) == 1000 and all(a >= 400 for a in alloc)
        obs = [VmObservation(a, a, 100, 10, 5, reuse=r) for a, r in zip(alloc, reuse, strict=True)]
