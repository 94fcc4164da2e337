"""``vmio tune``'s result (the plan, the re-run, the before/after comparison) and its terminal text."""

from __future__ import annotations

from dataclasses import dataclass, field

from vmio.advise.tune import Plan
from vmio.campaign import Outcome
from vmio.report import compare
from vmio.report.compare_text import format_before_after


@dataclass
class Result:
    plan: Plan
    outcome: Outcome | None = None
    comparison: compare.BeforeAfter | None = None
    failures: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        out = self.outcome
        return {
            "campaign": self.plan.campaign,
            "tuned_campaign": self.plan.tuned_name if self.plan.tuned else None,
            "targets": [t.as_dict() for t in self.plan.targets],
            "run": None
            if out is None
            else {
                "done": out.done,
                "failed": out.failed,
                "skipped": out.skipped,
                "failures": out.failures,
            },
            "compare": None if self.comparison is None else self.comparison.as_dict(),
        }


def format_plan(plan: Plan) -> str:
    lines = [f"campaign {plan.campaign!r}: tuning guideline (hitachi-nvme-2016, Fig. 10) per VM target"]
    for t in plan.targets:
        limits = sorted({d.limit for d in t.diagnoses.values()})
        lines.append(f"  target {t.target!r}: {len(t.diagnoses)} point(s); limit {', '.join(limits)}")
        for key, d in t.diagnoses.items():
            lines.append(f"    {key}: limit {d.limit}; actions {', '.join(d.actions)}")
        lines.append(f"    top action: {t.action}")
        if t.applied is not None:
            lines.append(f"    applied: {t.applied.change}")
        elif t.refused is not None:
            lines.append(f"    cannot be applied automatically: {t.refused}")
        else:
            lines.append("    nothing to apply: the guideline names no action for this target")
    return "\n".join(lines) + "\n"


def format_result(result: Result) -> str:
    return format_plan(result.plan) + format_outcome(result)


def format_outcome(result: Result) -> str:
    """What became of the plan: refused, nothing to do, or the re-run and its comparison."""
    plan = result.plan
    text = ""
    if plan.refused:
        names = ", ".join(repr(t.target) for t in plan.refused)
        return (
            text + f"not tuned: the action for {names} cannot be applied automatically; nothing was written\n"
        )
    if plan.tuned is None:
        return text + "not tuned: no action to apply; nothing was re-run\n"
    out = result.outcome
    assert out is not None and result.comparison is not None
    text += (
        f"re-ran as campaign {plan.tuned_name!r}: {out.done} done, {out.failed} failed, "
        f"{out.skipped} already done\n"
    )
    text += "".join(f"  failed: {f}\n" for f in out.failures)
    return text + "\n" + format_before_after(result.comparison)
