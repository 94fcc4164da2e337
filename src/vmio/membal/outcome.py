"""One scenario, every policy and both bounds, on the same streams; and its JSON form."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np

from vmio.errors import InputError
from vmio.membal.bounds import Bound, exact_curves, per_epoch_optimal, sampled_curves, static_oracle
from vmio.membal.engine import FastEngine
from vmio.membal.observation import Budget
from vmio.membal.policies import make_policy
from vmio.membal.scenario import Scenario
from vmio.membal.simulator import EngineFactory, PolicyRun, build_streams, simulate
from vmio.mrc.curve import EXACT, Sampling


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    runs: dict[str, PolicyRun]
    optimal: Bound
    oracle: Bound
    curves: Sampling = EXACT  # how the bounds' miss-ratio curves were built (default: exact)

    def vs_equal(self, name: str) -> float:
        base = self.runs["equal"].hit_ratio
        return self.runs[name].hit_ratio / base if base > 0 else float("nan")

    def vs_optimal(self, name: str) -> float:
        best = self.optimal.hit_ratio
        return self.runs[name].hit_ratio / best if best > 0 else float("nan")


# measured: ~55 bytes per access (streams, stack distances, per-policy state) over ~300 MB of Python,
# numpy and numba; the pages are already bounded (scenario.MAX_FOOTPRINT)
BYTES_PER_ACCESS = 64
BASE_BYTES = 400 << 20


def check_memory(scenario: Scenario, meminfo: Path = Path("/proc/meminfo")) -> None:
    """Refuse a simulation this machine's available memory cannot hold, before it starts."""
    need = BASE_BYTES + BYTES_PER_ACCESS * scenario.accesses
    try:
        fields = dict(line.split(":", 1) for line in meminfo.read_text().splitlines() if ":" in line)
        available = int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return  # no figure to hold it against: the accesses' own range still bounds it
    if need > available:
        raise InputError(
            f"scenario {scenario.name!r}: {scenario.accesses} accesses need about {need / 2**30:.1f} GiB; "
            f"this machine has {available / 2**30:.1f} GiB available (MemAvailable, the limit); "
            f"lower scenario.accesses"
        )


def run_scenario(
    scenario: Scenario,
    engine: EngineFactory = FastEngine,
    rng: np.random.Generator | None = None,
    curves: Sampling = EXACT,
) -> Outcome:
    """Simulate every policy of ``scenario`` on one set of streams drawn from ``rng`` (default: a
    generator seeded with the scenario's seed); the bounds come from exact miss-ratio curves, or from
    sampled ones (estimates) when ``curves`` samples."""
    check_memory(scenario)
    streams = build_streams(scenario, rng if rng is not None else np.random.default_rng(scenario.seed))
    budget = Budget(scenario.memory, tuple(scenario.floors), scenario.grain)
    runs = {}
    for name in scenario.policies:
        policy = make_policy(name, budget, scenario.policy_params.get(name))
        runs[name] = simulate(scenario, streams, policy, engine)
    hit_curves = (
        exact_curves(scenario, streams) if curves.exact else sampled_curves(scenario, streams, curves)
    )
    optimal, oracle = per_epoch_optimal(scenario, hit_curves), static_oracle(scenario, hit_curves)
    return Outcome(scenario, runs, optimal, oracle, curves)


def _num(x: float) -> float | None:
    return None if np.isnan(x) else round(x, 6)


class PolicyJson(TypedDict):
    hit_ratio: float | None
    vs_equal: float | None
    vs_optimal: float | None
    efficiency: float | None
    vms: dict[str, float | None]  # hit ratio by VM name
    final_memory: dict[str, int]  # bytes by VM name


class CurvesJson(TypedDict):
    method: str
    rate: float
    size: int | None


class OracleJson(TypedDict):
    hit_ratio: float | None
    memory: dict[str, int]  # bytes by VM name


class OptimalJson(TypedDict):
    hit_ratio: float | None


class OutcomeJson(TypedDict):
    scenario: str
    policies: dict[str, PolicyJson]
    optimal: OptimalJson
    curves: CurvesJson
    oracle: OracleJson


def outcome_json(out: Outcome) -> OutcomeJson:
    """The ``--json`` contract: ``{"policies": {name: {"hit_ratio", "vs_equal", "vs_optimal", ...}},
    "optimal": {"hit_ratio"}, ...}``."""
    names = [vm.name for vm in out.scenario.vms]
    policies: dict[str, PolicyJson] = {}
    for name, run in out.runs.items():
        _, eff = run.efficiency()
        policies[name] = {
            "hit_ratio": _num(run.hit_ratio),
            "vs_equal": _num(out.vs_equal(name)),
            "vs_optimal": _num(out.vs_optimal(name)),
            "efficiency": _num(float(eff.mean())),
            "vms": {n: _num(float(r)) for n, r in zip(names, run.vm_hit_ratio(), strict=True)},
            "final_memory": {
                n: int(a) * out.scenario.page for n, a in zip(names, run.allocation[-1], strict=True)
            },
        }
    split = out.oracle.allocation[0]
    return {
        "scenario": out.scenario.name,
        "policies": policies,
        "optimal": {"hit_ratio": _num(out.optimal.hit_ratio)},
        "curves": {"method": out.curves.describe(), "rate": out.curves.rate, "size": out.curves.size},
        "oracle": {
            "hit_ratio": _num(out.oracle.hit_ratio),
            "memory": {n: int(a) * out.scenario.page for n, a in zip(names, split, strict=True)},
        },
    }
