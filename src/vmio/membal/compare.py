"""Live runs of several policies on the same workload beside ``membal sim`` of the same scenario.

``vmio membal run --config CONFIG --compare equal,efficiency`` runs each policy live for the same duration on
the same per-VM workloads (fresh VMs per run), simulates the config's scenario (``[run] sim``, or ``--sim``)
with the same policies, and puts side by side, per VM and in total: hit ratios, where memory went (live:
balloon targets, first and last; sim: page-cache allocation, first and last epoch), and each policy's total
hit ratio over the first policy's (``equal``). VMs are matched by their order: the config's ``[[vm]]``
tables and the scenario's ``[[vm]]`` tables describe the same VMs in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from vmio.errors import InputError
from vmio.membal.liverun import LiveOutcome
from vmio.membal.outcome import Outcome


class SideVm(TypedDict):
    """One VM of a side: its name there, hit ratio, memory first and last (bytes) and the move; live,
    its workload's hits and misses (pages) too."""

    vm: str
    hit_ratio: float | None
    hits: NotRequired[int]
    misses: NotRequired[int]
    initial: int
    final: int
    move: int


@dataclass(frozen=True)
class Side:
    """One policy on one side (live or sim): per VM hit ratio and memory first → last, bytes."""

    hit_ratio: float | None
    vms: dict[str, SideVm]  # by VM label


def live_side(out: LiveOutcome, names: Sequence[str]) -> Side:
    vms: dict[str, SideVm] = {}
    for name, vm in zip(names, out.vms, strict=True):
        s = out.summary[vm]
        vms[name] = {
            "vm": vm,
            "hit_ratio": s["hit_ratio"],
            "hits": s["hits"],
            "misses": s["misses"],
            "initial": s["initial"],
            "final": s["final"],
            "move": s["final"] - s["initial"],
        }
    return Side(out.hit_ratio, vms)


def sim_side(outcome: Outcome, policy: str, names: Sequence[str]) -> Side:
    run, page = outcome.runs[policy], outcome.scenario.page
    ratios = run.vm_hit_ratio()
    vms: dict[str, SideVm] = {}
    for i, name in enumerate(names):
        first, last = int(run.allocation[0][i]) * page, int(run.allocation[-1][i]) * page
        vms[name] = {
            "vm": outcome.scenario.vms[i].name,
            "hit_ratio": round(float(ratios[i]), 6),
            "initial": first,
            "final": last,
            "move": last - first,
        }
    return Side(round(run.hit_ratio, 6), vms)


def _over(sides: Mapping[str, Side], base: str) -> dict[str, float | None]:
    b = sides[base].hit_ratio
    return {
        p: (round(s.hit_ratio / b, 4) if b and s.hit_ratio is not None else None) for p, s in sides.items()
    }


@dataclass(frozen=True)
class Comparison:
    policies: tuple[str, ...]  # the first is the baseline
    names: tuple[str, ...]  # VM labels, in order
    live: dict[str, Side]
    run_ids: dict[str, int]
    sim: dict[str, Side]  # empty without a scenario
    scenario: str | None
    duration: float  # live seconds per policy
    accel: str

    def ratios(self) -> dict[str, dict[str, float | None]]:
        """Each policy's total hit ratio over the baseline's, live and sim."""
        base = self.policies[0]
        out = {"live": _over(self.live, base)}
        if self.sim:
            out["sim"] = _over(self.sim, base)
        return out

    def to_json(self) -> dict[str, object]:
        """``membal run --compare --json``."""

        def side(s: Side) -> dict[str, object]:
            return {"hit_ratio": s.hit_ratio, "vms": s.vms}

        return {
            "policies": list(self.policies),
            "baseline": self.policies[0],
            "vms": list(self.names),
            "duration": self.duration,
            "accel": self.accel,
            "scenario": self.scenario,
            "run_ids": self.run_ids,
            "live": {p: side(s) for p, s in self.live.items()},
            "sim": {p: side(s) for p, s in self.sim.items()},
            "vs_baseline": self.ratios(),
        }


def compare(
    policies: Sequence[str], live: Mapping[str, LiveOutcome], sim: Outcome | None, duration: float
) -> Comparison:
    """The side-by-side of live outcomes (one per policy, same VMs) and a simulated outcome."""
    first = live[policies[0]]
    names = list(first.vms)
    if sim is not None:
        if len(sim.scenario.vms) != len(names):
            raise InputError(
                f"scenario {sim.scenario.name!r} has {len(sim.scenario.vms)} VMs and the live runs {len(names)}; "
                "give the scenario one [[vm]] per live VM, in the same order"
            )
        names = [f"{vm}/{spec.name}" for vm, spec in zip(first.vms, sim.scenario.vms, strict=True)]
    return Comparison(
        policies=tuple(policies),
        names=tuple(names),
        live={p: live_side(live[p], names) for p in policies},
        run_ids={p: live[p].run_id for p in policies},
        sim={p: sim_side(sim, p, names) for p in policies} if sim is not None else {},
        scenario=sim.scenario.name if sim is not None else None,
        duration=duration,
        accel=first.accel,
    )
