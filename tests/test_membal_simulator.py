"""The simulator: fast engine equals the plain-Python engine under moving allocations; bounds; determinism."""

from __future__ import annotations

import numpy as np
import pytest

from vmio.membal.bounds import exact_curves, per_epoch_optimal, static_oracle
from vmio.membal.observation import Budget
from vmio.membal.outcome import run_scenario
from vmio.membal.policies import make_policy
from vmio.membal.reference import ReferenceEngine
from vmio.membal.scenario import parse_scenario
from vmio.membal.simulator import build_streams, simulate

SMALL = """
[scenario]
name = "small"
memory = 600
epoch = 1000
accesses = 30000
seed = {seed}
grain = 10

[policy.efficiency]
step = 40

[[vm]]
name = "a"
workload = "uniform"
pages = 700
floor = 50

[[vm]]
name = "b"
workload = "zipf"
pages = 3000
alpha = 1.1
rate = 2.0

[[vm]]
name = "c"
workload = "phases"
phases = [{{workload = "loop", pages = 150, length = 3000}},
          {{workload = "scan", pages = 900, length = 1000}}]
"""


@pytest.mark.parametrize("policy", ["equal", "efficiency", "marginal", "mom", "refault"])
def test_fast_engine_equals_reference_engine(policy: str) -> None:
    s = parse_scenario(SMALL.format(seed=11))
    streams = build_streams(s, np.random.default_rng(s.seed))
    budget = Budget(s.memory, tuple(s.floors), s.grain)
    fast = simulate(s, streams, make_policy(policy, budget, s.policy_params.get(policy)))
    slow = simulate(s, streams, make_policy(policy, budget, s.policy_params.get(policy)), ReferenceEngine)
    for field in ("accesses", "hits", "hit_pages", "refaults", "activations", "resident", "allocation"):
        assert np.array_equal(getattr(fast, field), getattr(slow, field)), field
    if policy != "equal":
        assert len({tuple(row) for row in fast.allocation}) > 1  # the policy did move memory


def test_same_seed_same_result_and_another_seed_differs() -> None:
    one = run_scenario(parse_scenario(SMALL.format(seed=5)))
    two = run_scenario(parse_scenario(SMALL.format(seed=5)))
    other = run_scenario(parse_scenario(SMALL.format(seed=6)))
    for name in one.runs:
        assert np.array_equal(one.runs[name].hits, two.runs[name].hits)
    assert not np.array_equal(one.runs["equal"].hits, other.runs["equal"].hits)


def test_bounds_hold_over_every_policy() -> None:
    s = parse_scenario(SMALL.format(seed=7))
    out = run_scenario(s)
    assert out.oracle.hit_ratio <= out.optimal.hit_ratio
    for run in out.runs.values():
        assert run.hit_ratio <= out.optimal.hit_ratio + 1e-12
        assert (run.hits.sum(axis=1) <= out.optimal.hits.sum(axis=1)).all()
    assert (out.optimal.allocation.sum(axis=1) == s.memory // s.grain * s.grain).all()


def test_equal_split_with_the_oracle_curves_matches_the_simulator() -> None:
    s = parse_scenario(SMALL.format(seed=8))
    streams = build_streams(s, np.random.default_rng(s.seed))
    curves = exact_curves(s, streams)
    run = simulate(s, streams, make_policy("equal", Budget(s.memory, tuple(s.floors), s.grain)))
    units = run.allocation[0] // s.grain
    assert (run.allocation[0] % s.grain == 0).all()
    predicted = np.stack([c[:, u] for c, u in zip(curves, units, strict=True)], axis=1)
    assert np.array_equal(predicted, run.hits)
    assert static_oracle(s, curves).hit_ratio >= run.hit_ratio
    assert per_epoch_optimal(s, curves).hit_ratio >= static_oracle(s, curves).hit_ratio


def test_efficiency_is_hit_pages_over_cache_pages() -> None:
    out = run_scenario(parse_scenario(SMALL.format(seed=9)))
    run = out.runs["equal"]
    per_vm, total = run.efficiency()
    assert np.allclose(per_vm, run.hit_pages / run.resident)
    assert ((run.hit_pages <= run.hits) & (run.hit_pages <= run.resident)).all()
    assert np.allclose(total, run.hit_pages.sum(axis=1) / run.resident.sum(axis=1))
