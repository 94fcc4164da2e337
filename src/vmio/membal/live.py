"""The live balloon controller: every interval, each guest's agent record → observations → policy →
governor (floors, step, hysteresis, pressure, budget) → balloon targets over QMP, every decision stored.

Which policies run live: a guest reports its free and file pages, refaults and activations, and its
page-cache hits and misses of its processes (from their ``/proc/PID/io``), but not stack distances.
Existing libvirt domains (``membal.domains``) report only their balloon statistics unless vmio's agent runs
in them.
``equal``, ``refault``, ``mom`` and ``efficiency`` (hitachi-membal-2014: hit pages per second / cache pages) need only
what it reports; ``marginal`` needs sampled stack distances, so it is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from vmio.errors import InputError, ToolError
from vmio.membal.balloon import Guest
from vmio.membal.governor import Move, Rules, govern
from vmio.membal.guest_reports import GUEST_REPORTS, LIVE_POLICIES, NEEDS, WHY_NOT_REPORTED
from vmio.membal.observation import Budget, Policy
from vmio.membal.policies import POLICY_PARAMS, make_policy
from vmio.membal.signals import PAGE, GuestSignals, ReadCounter, signals
from vmio.qemu.agent import AgentRecord
from vmio.store import Store
from vmio.store.membal import DecisionRow, add_decisions
from vmio.units import parse_size


def check_live_policy(name: str) -> None:
    """Refuse a policy whose inputs an unmodified guest does not report."""
    if name not in POLICY_PARAMS:
        raise InputError(f"--policy {name!r} is not a policy; live policies are {', '.join(LIVE_POLICIES)}")
    missing = [n for n in NEEDS[name] if n not in GUEST_REPORTS]
    if missing:
        raise InputError(
            f"--policy {name!r} cannot run live: it needs {WHY_NOT_REPORTED[missing[0]]}; "
            f"live policies are {', '.join(LIVE_POLICIES)} (all policies run in 'vmio membal sim')"
        )


class VmSummary(TypedDict):
    """One VM over a live run: balloon targets (bytes) first/last/min/max, steps under pressure, activity
    totals (pages), and its workload's hit ratio (None without reads)."""

    initial: int
    final: int
    min: int
    max: int
    floor: int
    pressure_steps: int
    activations: int
    refaults: int
    read_pages: int
    hits: int
    misses: int
    moves: int
    hit_ratio: float | None


def policy_params(policy: str, given: Mapping[str, object]) -> dict[str, float]:
    """A live policy's parameters from ``--param KEY=VALUE`` or a config's ``[policy]`` table: sizes
    (``step``) in bytes become pages, fractions must lie in (0, 1]."""
    check_live_policy(policy)
    kinds = POLICY_PARAMS[policy]
    out: dict[str, float] = {}  # sizes in pages
    for key, value in given.items():
        if key not in kinds:
            known = ", ".join(kinds) or "none"
            raise InputError(f"policy {policy!r} has no parameter {key!r}; its parameters: {known}")
        try:
            if kinds[key] == "size":
                out[key] = max(1, parse_size(value) // PAGE)
                continue
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise InputError(f"policy parameter {key} = {value!r} is not a {kinds[key]}: {exc}") from exc
        if not 0.0 < number <= 1.0:
            raise InputError(f"policy parameter {key} = {value!r} must be a fraction in (0, 1]")
        out[key] = number
    return out


@dataclass
class VmStep:
    """One VM at one step."""

    vm: str
    signals: GuestSignals
    move: Move
    actual: int  # the balloon's size (query-balloon) before the new target was set


@dataclass
class Step:
    index: int
    t: float  # seconds since the controller started
    vms: list[VmStep] = field(default_factory=list)


class LiveController:
    """Drives ``guests``' balloons with a policy under ``rules``; records to ``store`` when given."""

    def __init__(
        self,
        guests: Sequence[Guest],
        rules: Rules,
        policy: str,
        params: Mapping[str, float] | None = None,
        *,
        psi_threshold: float = 0.01,
        store: Store | None = None,
        run_id: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_live_policy(policy)
        self.guests = list(guests)
        self.rules = rules
        self.policy_name = policy
        self.params = dict(params or {})
        self.psi_threshold = psi_threshold
        self.store = store
        self.run_id = run_id
        self._clock = clock
        self.targets = rules.initial()
        self.baseline: list[AgentRecord] = []
        self.policy: Policy | None = None
        self.steps: list[Step] = []
        self._reads = [ReadCounter() for _ in self.guests]
        self._t0 = clock()

    def start(self, settle: float = 30.0) -> None:
        """Set the initial targets, wait for fresh records (the first may be old) as the baseline."""
        for guest, target in zip(self.guests, self.targets, strict=True):
            guest.set_target(target)
        for guest in self.guests:
            self.baseline.append(self._wait(guest, 2, settle)[-1])
        self._t0 = self._clock()

    def _wait(self, guest: Guest, count: int, timeout: float) -> list[AgentRecord]:
        deadline = self._clock() + timeout
        got: list[AgentRecord] = []
        while len(got) < count:
            got += guest.records()
            if len(got) < count and self._clock() > deadline:
                raise ToolError(f"{guest.name}: no agent record within {timeout:g} s")
            if len(got) < count:
                time.sleep(0.05)
        return got

    def _budget(self, sigs: Sequence[GuestSignals]) -> Budget:
        """The budget and floors in this interval's cache frame (the overheads change as balloons settle)."""
        over = [s.overhead(t) for s, t in zip(sigs, self.targets, strict=True)]
        floors = tuple(max(0, f - o) // PAGE for f, o in zip(self.rules.floors, over, strict=True))
        memory = sum(t - o for t, o in zip(self.targets, over, strict=True)) // PAGE
        return Budget(memory=memory, floors=floors, grain=max(1, self.rules.grain // PAGE))

    def _policy(self, sigs: Sequence[GuestSignals]) -> Policy:
        """The policy on this interval's budget: ``equal`` and ``efficiency`` keep no state between
        intervals and are made afresh; the others keep theirs and get the new budget."""
        budget = self._budget(sigs)
        if self.policy is not None and self.policy_name not in ("equal", "efficiency"):
            self.policy.budget = budget  # type: ignore[attr-defined]
            return self.policy
        params = dict(self.params)
        if self.policy_name in ("refault", "efficiency"):
            params.setdefault("step", self.rules.max_step // PAGE)
        return make_policy(self.policy_name, budget, params)

    def step(self, wait: float = 10.0) -> Step:
        """One interval: read, decide, apply, record."""
        latest = [self._wait(g, 1, wait)[-1] for g in self.guests]
        sigs = [
            signals(b, a, self.psi_threshold, c)
            for b, a, c in zip(self.baseline, latest, self._reads, strict=True)
        ]
        self.baseline = latest
        actual = [g.actual() for g in self.guests]
        self.policy = self._policy(sigs)
        obs = [s.observation() for s in sigs]
        alloc = self.policy.decide(obs)
        proposed = [t + (a - o.allocation) * PAGE for t, a, o in zip(self.targets, alloc, obs, strict=True)]
        moves = govern(self.rules, self.targets, proposed, [s.pressure.under for s in sigs])
        for guest, move in zip(self.guests, moves, strict=True):
            if move.new != move.old:
                guest.set_target(move.new)
        self.targets = [m.new for m in moves]
        step = Step(len(self.steps), round(self._clock() - self._t0, 3))
        step.vms = [
            VmStep(g.name, s, m, a) for g, s, m, a in zip(self.guests, sigs, moves, actual, strict=True)
        ]
        self.steps.append(step)
        self._record(step)
        return step

    def _record(self, step: Step) -> None:
        if self.store is None or self.run_id is None:
            return
        rows = [
            DecisionRow(
                step.index,
                step.t,
                v.vm,
                decision_inputs(v),
                v.move.old,
                v.move.new,
                v.actual,
                self.policy_name,
                v.move.reason,
            )
            for v in step.vms
        ]
        add_decisions(self.store, self.run_id, rows)

    def run(self, duration: float, interval: float, on_step: Callable[[Step], None] | None = None) -> None:
        """``duration / interval`` steps, one every ``interval`` seconds (after ``start``)."""
        next_at = self._clock() + interval
        for _ in range(max(1, int(duration / interval + 1e-9))):
            time.sleep(max(0.0, next_at - self._clock()))
            step = self.step(wait=max(5 * interval, 30.0))  # a busy host may starve the guest's agent
            if on_step is not None:
                on_step(step)
            next_at += interval

    def summary(self) -> dict[str, VmSummary]:
        """Per VM (by guest name): targets first/last/min/max, intervals under pressure, activity totals."""
        out: dict[str, VmSummary] = {}
        for i, guest in enumerate(self.guests):
            vs = [s.vms[i] for s in self.steps]
            targets = [self.rules.initial()[i], *(v.move.new for v in vs)]
            hits, misses = sum(v.signals.hits for v in vs), sum(v.signals.misses for v in vs)
            out[guest.name] = {
                "initial": targets[0],
                "final": targets[-1],
                "min": min(targets),
                "max": max(targets),
                "floor": self.rules.floors[i],
                "pressure_steps": sum(v.signals.pressure.under for v in vs),
                "activations": sum(v.signals.activations for v in vs),
                "refaults": sum(v.signals.refaults for v in vs),
                "read_pages": sum(v.signals.read_pages for v in vs),
                "hits": hits,
                "misses": misses,
                "moves": sum(v.move.new != v.move.old for v in vs),
                "hit_ratio": round(hits / (hits + misses), 4) if hits + misses else None,
            }
        return out

    def hit_ratio(self) -> float | None:
        """All VMs' workload hits / (hits + misses) over the run; None without reads."""
        hits = sum(v.signals.hits for s in self.steps for v in s.vms)
        reads = hits + sum(v.signals.misses for s in self.steps for v in s.vms)
        return round(hits / reads, 4) if reads else None


def decision_inputs(v: VmStep) -> dict[str, object]:
    """What the decision was made from: the guest's signals, the balloon, the policy's proposal."""
    obs = v.signals.observation()
    return {
        "signals": v.signals.to_json(),
        "observation": {
            "allocation": obs.allocation,
            "resident": obs.resident,
            "activations": obs.activations,
            "refaults": obs.refaults,
            "accesses": obs.accesses,
            "hits": obs.hits,
            "hit_pages": obs.hit_pages,
            "page": PAGE,
        },
        "actual": v.actual,
        "proposed": v.move.proposed,
        "overhead": v.signals.overhead(v.move.old),
    }
