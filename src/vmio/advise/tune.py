"""``vmio tune``: diagnose a campaign's VM targets, apply each one's top action, re-run, compare.

``plan`` decides everything before anything runs: per VM target the diagnoses of its unthrottled points,
the top action (the first action most of its points name), and the changed target or why it cannot be
changed automatically. Only a plan with nothing refused is run (``execute``): the tuned campaign holds the
changed targets under their own names with the same workloads, so its points have the same keys and
``vmio compare``'s before/after machinery pairs them (the CLI prints that comparison).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypedDict

from vmio.advise import from_store
from vmio.advise.actions import Applied, CannotApply, apply
from vmio.advise.diagnose import Action, Diagnosis, Limit, diagnose
from vmio.campaign import runner
from vmio.errors import InputError
from vmio.fio import options as fio_options
from vmio.qemu import QemuCaps
from vmio.spec import Campaign, loads_spec
from vmio.spec.dump import dumps
from vmio.store import Store
from vmio.targets.traits import vm_config


class PointVerdict(TypedDict):
    limit: Limit
    actions: list[Action]


class TargetPlanJson(TypedDict):
    """One target of ``advise --tune --json``."""

    target: str
    points: dict[str, PointVerdict]  # by point key
    limit: Limit
    action: str
    applied: bool
    change: str | None
    refused: str | None


@dataclass
class TargetPlan:
    """One VM target: its points' verdicts, the action taken, and what it changed or why not."""

    target: str
    diagnoses: dict[str, Diagnosis]
    action: str
    applied: Applied | None = None
    refused: str | None = None

    def as_dict(self) -> TargetPlanJson:
        first = next(iter(self.diagnoses.values()))
        return {
            "target": self.target,
            "points": {
                key: {"limit": d.limit, "actions": list(d.actions)} for key, d in self.diagnoses.items()
            },
            "limit": first.limit,
            "action": self.action,
            "applied": self.applied is not None,
            "change": self.applied.change if self.applied else None,
            "refused": self.refused,
        }


@dataclass
class Plan:
    campaign: str
    tuned_name: str
    targets: list[TargetPlan]
    tuned: Campaign | None = None
    spec_text: str | None = None

    @property
    def refused(self) -> list[TargetPlan]:
        return [t for t in self.targets if t.refused is not None]

    @property
    def changes(self) -> list[TargetPlan]:
        return [t for t in self.targets if t.applied is not None]


def top_action(diagnoses: dict[str, Diagnosis]) -> str:
    """The first action most points name (ties: the one seen first)."""
    counts = Counter(d.actions[0] for d in diagnoses.values())
    return max(counts, key=lambda a: (counts[a], -list(counts).index(a)))


def plan(
    store: Store,
    name: str,
    *,
    caps: Callable[[], QemuCaps],
    backing: str | None = None,
    tuned_name: str | None = None,
    only: str | None = None,
) -> Plan:
    """Diagnose ``name``'s VM targets and decide each one's change; nothing is written."""
    camp = from_store.stored_campaign(store, name)
    vms = [vm for t in camp.targets if (vm := vm_config(t)) is not None]
    vm_targets = [t for t in vms if only is None or t.name == only]
    if not vm_targets:
        what = f"no VM target named {only!r}" if only else "no VM target (kind = 'qemu')"
        raise InputError(f"campaign {name!r} has {what}; tune changes VM targets only")
    runs = from_store.points_to_diagnose(store, name, None)
    tuned_name = tuned_name or f"{name}-tuned"
    result = Plan(name, tuned_name, [])
    for target in vm_targets:
        mine = [r for r in runs if r["target"] == target.name]
        if not mine:
            raise InputError(f"target {target.name!r} of campaign {name!r} has no done point to diagnose")
        verdicts = {r["point_key"]: diagnose(from_store.evidence_for(store, camp, r)) for r in mine}
        tp = TargetPlan(target.name, verdicts, top_action(verdicts))
        if tp.action != "none":
            try:
                tp.applied = apply(target, tp.action, caps=caps, backing=backing)
            except CannotApply as exc:
                tp.refused = str(exc)
        result.targets.append(tp)
    if result.changes and not result.refused:
        _tuned_campaign(result, camp, store)
    return result


def _tuned_campaign(p: Plan, camp: Campaign, store: Store) -> None:
    changed = {t.target: t.applied.target for t in p.changes if t.applied}
    tuned = replace(camp, name=p.tuned_name, targets=tuple(changed.values()), path=f"<vmio tune {camp.name}>")
    lines = [
        f"vmio tune {camp.name}: {t.target}: {t.action}: {t.applied.change}" for t in p.changes if t.applied
    ]
    text = dumps(tuned, "\n".join(lines))
    # the text is what is stored as the spec, so it must read back to exactly what runs
    back = loads_spec(text, tuned.path, fio_names=fio_options.names)
    if back.canonical() != tuned.canonical():
        raise InputError(f"the tuned spec of {camp.name!r} does not read back to the tuned campaign")
    stored = store.campaign(p.tuned_name)
    if stored is not None and stored["canonical"] != tuned.canonical():
        raise InputError(
            f"campaign {p.tuned_name!r} is already stored with other targets; name the tuned campaign "
            "with --name NAME"
        )
    p.tuned, p.spec_text = tuned, text


def execute(
    p: Plan, store: Store, options: runner.Options, progress: Callable[[runner.Progress], None] | None = None
) -> runner.Outcome | None:
    """Run the tuned campaign's points (``None``: the plan tuned nothing); ``vmio compare`` pairs them."""
    if p.tuned is None or p.spec_text is None:
        return None
    return runner.run(p.tuned, p.spec_text, store, options, progress)
