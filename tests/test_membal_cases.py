"""hitachi-membal-2014's two cases and the case that shows why its measure is not the default (examples/membal)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vmio.membal.outcome import Outcome, run_scenario
from vmio.membal.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "membal"


@pytest.fixture(scope="module")
def case1() -> Outcome:
    return run_scenario(load_scenario(EXAMPLES / "case1-web-burst.toml"))


@pytest.fixture(scope="module")
def case2() -> Outcome:
    return run_scenario(load_scenario(EXAMPLES / "case2-nfs-images.toml"))


@pytest.fixture(scope="module")
def skewed() -> Outcome:
    return run_scenario(load_scenario(EXAMPLES / "uniform-vs-skewed.toml"))


def test_case1_efficiency_and_marginal_beat_equal(case1: Outcome) -> None:
    assert case1.vs_equal("efficiency") > 1.2
    assert case1.vs_equal("marginal") > 1.2
    assert case1.vs_equal("refault") > 1.2
    # as in hitachi-membal-2014 Fig. 2: memory goes from the low-locality web server to the bursty one
    for name in ("efficiency", "marginal", "refault"):
        web, burst = case1.runs[name].allocation[-1]
        assert burst > web
        assert case1.runs[name].vm_hit_ratio()[1] > case1.runs["equal"].vm_hit_ratio()[1]


def test_case2_no_policy_falls_below_equal(case2: Outcome) -> None:
    for name in case2.runs:
        assert case2.vs_equal(name) >= 0.99, name
    # the image server's range fits in its share: it hits almost always under every policy
    for run in case2.runs.values():
        assert run.vm_hit_ratio()[1] > 0.95


def test_efficiency_moves_memory_the_wrong_way_beside_uniform_access(skewed: Outcome) -> None:
    uniform_share = skewed.runs["efficiency"].allocation[:, 0].mean()
    equal_share = skewed.runs["equal"].allocation[0, 0]
    oracle_share = skewed.oracle.allocation[0, 0]
    assert oracle_share > equal_share > uniform_share  # the best split gives "uniform" more; efficiency less
    assert skewed.vs_equal("efficiency") < 0.95
    assert skewed.vs_equal("marginal") > 1.03


@pytest.mark.parametrize("policy", ["marginal", "refault"])
def test_marginal_stays_within_two_percent_of_optimal(skewed: Outcome, case1: Outcome, policy: str) -> None:
    assert skewed.vs_optimal(policy) >= 0.98
    assert case1.vs_optimal(policy) >= 0.98


def test_seed001_efficiency_is_reported_per_epoch(case1: Outcome) -> None:
    per_vm, total = case1.runs["efficiency"].efficiency()
    assert per_vm.shape == (100, 2) and total.shape == (100,)
    assert np.all((per_vm >= 0) & (per_vm <= 1))
