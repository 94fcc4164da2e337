"""Comparisons: targets against a baseline in one campaign, and one campaign against another.

Against a baseline the ratio is of medians over repetitions, with a range from the extreme ratios of
the two ranges (a conservative spread). Before/after, each point's difference of means comes with its
95% interval (Welch's t); an interval that spans zero is "no significant change".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vmio.errors import InputError
from vmio.report.data import CampaignData, Group, GroupKey, Row, along, iops, latency, offered_label
from vmio.stats.spread import LEVEL, Difference, Spread, ratio, welch
from vmio.units import format_size

Metric = tuple[str, Callable[[Row, str], float | None], bool]  # name, value, higher is better
METRICS: tuple[Metric, ...] = (
    ("IOPS", iops, True),
    ("p50", lambda r, d: latency(r, d, "p50"), False),
    ("p99", lambda r, d: latency(r, d, "p99"), False),
)


def point_label(key: GroupKey) -> str:
    target, workload, bs, offered, load = key
    return f"{target}/{workload}/bs={format_size(bs)}/offered={offered_label(offered)}/load={load}"


def _key_dict(key: GroupKey) -> dict[str, Any]:
    target, workload, bs, offered, load = key
    return {"target": target, "workload": workload, "bs": bs, "offered_iops": offered_label(offered),
            "load_processes": load}  # fmt: skip


@dataclass
class RatioRow:
    key: GroupKey
    ddir: str
    ratios: dict[str, Spread | None]  # metric → target / baseline
    values: dict[str, Spread | None]  # metric → the target's own figures
    label: str = ""  # the target as shown: with its QEMU build when the campaign ran several
    build: str | None = None  # the target's QEMU build; None without VMs

    def as_dict(self) -> dict[str, Any]:
        return {
            **_key_dict(self.key), "qemu_build": self.build, "ddir": self.ddir,
            "ratio": {m: s.as_dict() if s else None for m, s in self.ratios.items()},
            "value": {m: s.as_dict() if s else None for m, s in self.values.items()},
        }  # fmt: skip


def against_baseline(data: CampaignData, baseline: str) -> list[RatioRow]:
    if baseline not in data.target_names():
        known = ", ".join(data.target_names())
        raise InputError(
            f"--baseline {baseline!r} is not a target of campaign {data.name!r}; targets: {known}"
        )
    groups = data.groups()
    base = {g.key[1:]: g for g in groups if g.target == baseline}
    builds = data.builds()
    rows = []
    for g in groups:
        b = base.get(g.key[1:])
        if g.target == baseline or b is None:
            continue
        for ddir in data.ddirs(g.key[1]):
            values = {name: _spread(g, fn, ddir) for name, fn, _ in METRICS}
            ratios = {name: _ratio(values[name], _spread(b, fn, ddir)) for name, fn, _ in METRICS}
            rows.append(
                RatioRow(g.key, ddir, ratios, values, data.target_label(g.target), builds.get(g.target))
            )
    return rows


def _spread(g: Group, fn: Callable[[Row, str], float | None], ddir: str) -> Spread | None:
    return g.spread(along(fn, ddir))


def _ratio(num: Spread | None, den: Spread | None) -> Spread | None:
    return ratio(num, den) if num and den else None


@dataclass
class Change:
    key: GroupKey
    ddir: str
    metric: str
    higher_is_better: bool
    diff: Difference

    @property
    def verdict(self) -> str:
        d = self.diff
        if not d.decided:
            return "too few repetitions"
        if not d.significant:
            return "no significant change"
        better = (d.diff > 0) == self.higher_is_better
        return f"{'higher' if d.diff > 0 else 'lower'} ({'better' if better else 'worse'})"

    def as_dict(self) -> dict[str, Any]:
        d = self.diff
        return {
            **_key_dict(self.key), "ddir": self.ddir, "metric": self.metric,
            "before_mean": d.before, "after_mean": d.after, "n_before": d.n_before, "n_after": d.n_after,
            "diff": d.diff, "rel": d.rel, "ci_level": LEVEL, "ci_low": d.lo, "ci_high": d.hi,
            "significant": d.significant, "verdict": self.verdict,
        }  # fmt: skip


@dataclass(frozen=True)
class BuildChange:
    """A target of both campaigns whose VMs ran on different QEMU builds: its differences include the
    build's."""

    target: str
    before: str | None  # ``qemu 7.2.22 / q35``; None: no VMs (a host target)
    after: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target, "before": self.before, "after": self.after}


@dataclass
class BeforeAfter:
    before: str
    after: str
    changes: list[Change]
    only_before: list[GroupKey]
    only_after: list[GroupKey]
    builds: list[BuildChange] = field(default_factory=list)  # targets that ran on different builds

    def as_dict(self) -> dict[str, Any]:
        return {
            "before": self.before, "after": self.after, "ci_level": LEVEL,
            "build_changes": [b.as_dict() for b in self.builds],
            "changes": [c.as_dict() for c in self.changes],
            "only_before": [point_label(k) for k in self.only_before],
            "only_after": [point_label(k) for k in self.only_after],
        }  # fmt: skip


def before_after(a: CampaignData, b: CampaignData) -> BeforeAfter:
    after = {g.key: g for g in b.groups()}
    changes, only_a = [], []
    for ga in a.groups():
        gb = after.pop(ga.key, None)
        if gb is None:
            only_a.append(ga.key)
            continue
        ddirs = [d for d in ("read", "write") if d in a.ddirs(ga.key[1]) or d in b.ddirs(ga.key[1])]
        for ddir in ddirs:
            for name, fn, higher in METRICS:
                diff = welch(ga.values(along(fn, ddir)), gb.values(along(fn, ddir)))
                if diff is not None:
                    changes.append(Change(ga.key, ddir, name, higher, diff))
    return BeforeAfter(a.name, b.name, changes, only_a, list(after), build_changes(a, b))


def build_changes(a: CampaignData, b: CampaignData) -> list[BuildChange]:
    """The targets of both campaigns whose QEMU build differs between them, in ``a``'s target order."""
    before, after = a.builds(), b.builds()
    common = [t for t in a.target_names() if t in set(b.target_names())]
    return [
        BuildChange(t, before.get(t), after.get(t))
        for t in common
        if before.get(t) != after.get(t) and (t in before or t in after)
    ]
