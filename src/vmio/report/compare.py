"""Comparisons: targets against a baseline in one campaign, and one campaign against another.

Against a baseline the ratio is of medians over repetitions (IOPS, p50, p99 and each traced layer's mean),
with a range from the extreme ratios of the two ranges (a conservative spread). Before/after, points are paired by target, workload name, block
size and offered load (and load processes); each pair's difference of means comes with its 95% interval
(Welch's t), and its verdict is ``vmio.stats.tell.change``'s at a size of change (``--min-change``, 5 % unless
given; the gate's PCT with ``--fail-on-regression``): the whole interval beyond that share of the before mean
is a change ("higher"/"lower", better or worse), the whole interval within it "no change", anything else
(an interval reaching across it, fewer than 2 repetitions a side) "inconclusive". Every parameter that differs within a
pair (iodepth, rw, numjobs, runtime, direct, engine, QEMU build, accelerator) is a warning: the difference
includes it. ``regressions`` finds the paired figures that worsened by more than a given percentage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from vmio.errors import InputError
from vmio.metrics import layers
from vmio.report.data import CampaignData, Group, GroupKey, Row, along, iops, latency, offered_label
from vmio.stats import tell
from vmio.stats.spread import LEVEL, Difference, Spread, ratio, welch
from vmio.units import format_size

Metric = tuple[str, Callable[[Row, str], float | None], bool]  # name, value, higher is better
METRICS: tuple[Metric, ...] = (
    ("IOPS", iops, True),
    ("p50", lambda r, d: latency(r, d, "p50"), False),
    ("p99", lambda r, d: latency(r, d, "p99"), False),
)


def bandwidth(row: Row, ddir: str) -> float | None:
    value = row.read_bw if ddir == "read" else row.write_bw
    return None if value is None else float(value)


# before/after also pairs bandwidth (bytes/s), which a regression gate needs


def _layer(name: str) -> Callable[[Row, str], float | None]:
    """A traced layer's mean (docs/layers.md) in ns, as the other latencies are kept."""

    def value(row: Row, ddir: str) -> float | None:
        mean = layers.mean_us(row.layers, name, ddir)
        return None if mean is None else mean * 1000

    return value


# the layers' means (points traced with layers = true): compared, but not gated (they explain the point's
# own figures; host_block counts everything on a shared disk)
LAYER_METRICS: tuple[Metric, ...] = tuple((f"{n} layer mean", _layer(n), False) for n in layers.LAYERS)
PAIRED_METRICS: tuple[Metric, ...] = (
    *METRICS[:1],
    ("bandwidth", bandwidth, True),
    *METRICS[1:],
    *LAYER_METRICS,
)
# the workload's parameters that must match within a pair, as the spec names them
PAIR_PARAMETERS = ("iodepth", "rw", "numjobs", "runtime", "direct", "ioengine")


def point_label(key: GroupKey) -> str:
    target, workload, bs, offered, load = key
    return f"{target}/{workload}/bs={format_size(bs)}/offered={offered_label(offered)}/load={load}"


def _key_dict(key: GroupKey) -> dict[str, object]:
    target, workload, bs, offered, load = key
    return {
        "target": target,
        "workload": workload,
        "bs": bs,
        "offered_iops": offered_label(offered),
        "load_processes": load,
    }


@dataclass
class RatioRow:
    key: GroupKey
    ddir: str
    ratios: dict[str, Spread | None]  # metric → target / baseline
    values: dict[str, Spread | None]  # metric → the target's own figures
    label: str = ""  # the target as shown: with its QEMU build when the campaign ran several
    build: str | None = None  # the target's QEMU build; None without VMs

    def as_dict(self) -> dict[str, object]:
        return {
            **_key_dict(self.key),
            "qemu_build": self.build,
            "ddir": self.ddir,
            "ratio": {m: s.as_dict() if s else None for m, s in self.ratios.items()},
            "value": {m: s.as_dict() if s else None for m, s in self.values.items()},
            "unit": {m: JSON_UNITS.get(m, "ns") for m in self.values},  # of ``value``; ratios have none
        }


def against_baseline(data: CampaignData, baseline: str) -> list[RatioRow]:
    """Each target's points against the baseline's (paired by workload, block size, offered load and load
    processes): the ratio of medians of IOPS, p50 and p99, and of each layer's mean where either side traced
    it (docs/layers.md; a ratio is None when one side has no figure)."""
    if baseline not in data.target_names():
        known = ", ".join(data.target_names())
        raise InputError(
            f"--baseline {baseline!r} is not a target of campaign {data.name!r}; targets: {known}"
        )
    groups = data.groups()
    base = {g.key[1:]: g for g in groups if g.target == baseline}
    builds = data.builds()
    traced = LAYER_METRICS if any(r.layers for r in data.rows) else ()  # no layer: no entry for any
    rows = []
    for g in groups:
        b = base.get(g.key[1:])
        if g.target == baseline or b is None:
            continue
        for ddir in data.ddirs(g.key[1]):
            values = {name: _spread(g, fn, ddir) for name, fn, _ in METRICS}
            ratios = {name: _ratio(values[name], _spread(b, fn, ddir)) for name, fn, _ in METRICS}
            for name, fn, _ in traced:  # a layer traced on either side (else no entry)
                mine, theirs = _spread(g, fn, ddir), _spread(b, fn, ddir)
                if mine is not None or theirs is not None:
                    values[name], ratios[name] = mine, _ratio(mine, theirs)
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
    before_values: tuple[float, ...] = ()
    after_values: tuple[float, ...] = ()
    size: float = tell.DEFAULT_MIN_CHANGE  # the size of change asked about, a fraction of the before mean

    @property
    def change(self) -> tell.Change:
        """``vmio.stats.tell.change`` of the repetitions at ``size``: the one rule of the table, JSON and gate."""
        return tell.change(self.before_values, self.after_values, self.size)

    @property
    def verdict(self) -> str:
        """The table's and the JSON's word: ``higher (better)``, ``lower (worse)``, ``no change`` or
        ``inconclusive``."""
        said = self.change
        if said == "unchanged":
            return "no change"
        if said == "inconclusive":
            return "inconclusive"
        better = (said == "higher") == self.higher_is_better
        return f"{said} ({'better' if better else 'worse'})"

    def as_dict(self) -> dict[str, object]:
        d = self.diff
        return {
            **_key_dict(self.key),
            "ddir": self.ddir,
            "metric": self.metric,
            "before_mean": d.before,
            "after_mean": d.after,
            "n_before": d.n_before,
            "n_after": d.n_after,
            "diff": d.diff,
            "rel": d.rel,
            "ci_level": LEVEL,
            "ci_low": d.lo,
            "ci_high": d.hi,
            "significant": d.significant,
            "min_change": self.size,
            "change": self.change,
            "verdict": self.verdict,
            "unit": JSON_UNITS.get(self.metric, "ns"),
        }


@dataclass(frozen=True)
class BuildChange:
    """A target of both campaigns whose VMs ran on different QEMU builds: its differences include the
    build's."""

    target: str
    before: str | None  # ``qemu 7.2.22 / q35``; None: no VMs (a host target)
    after: str | None

    def as_dict(self) -> dict[str, object]:
        return {"target": self.target, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class PairWarning:
    """A parameter that differs within a pair of points: their difference includes it."""

    key: GroupKey
    parameter: str
    before: object
    after: object

    def text(self, a: str, b: str) -> str:
        return (
            f"{point_label(self.key)}: {self.parameter} differs ({self.before!r} in {a!r}, {self.after!r} in "
            f"{b!r}); the difference includes it"
        )


@dataclass
class BeforeAfter:
    before: str
    after: str
    changes: list[Change]
    only_before: list[GroupKey]
    only_after: list[GroupKey]
    builds: list[BuildChange] = field(default_factory=list)  # targets that ran on different builds
    pairs: int = 0  # points found in both
    mismatches: list[PairWarning] = field(default_factory=list)
    size: float = tell.DEFAULT_MIN_CHANGE  # the size of change each verdict is about

    @property
    def rule(self) -> str:
        """How each verdict is decided, in words (the table's title and the JSON's ``rule``)."""
        pct = f"{self.size * 100:g} %"
        return (
            f"verdict at a change of {pct}: higher/lower when the whole {LEVEL:.0%} interval lies beyond "
            f"{pct} of the before mean, no change when within {pct}, else inconclusive (fewer than 2 a side too)"
        )

    @property
    def warnings(self) -> list[str]:
        return [w.text(self.before, self.after) for w in self.mismatches]

    def as_dict(self) -> dict[str, object]:
        return {
            "before": self.before,
            "after": self.after,
            "ci_level": LEVEL,
            "min_change": self.size,
            "rule": self.rule,
            "pairs": self.pairs,
            "warnings": self.warnings,
            "build_changes": [b.as_dict() for b in self.builds],
            "changes": [c.as_dict() for c in self.changes],
            "only_before": [point_label(k) for k in self.only_before],
            "only_after": [point_label(k) for k in self.only_after],
        }


def before_after(a: CampaignData, b: CampaignData, size: float = tell.DEFAULT_MIN_CHANGE) -> BeforeAfter:
    """Pair ``a``'s points with ``b``'s by target, workload name, block size, offered load (and load
    processes); the difference of every paired figure, judged at a change of ``size`` (a fraction of the
    before mean), and a warning per parameter that differs."""
    after = {g.key: g for g in b.groups()}
    changes, only_a, mismatches, pairs = [], [], [], 0
    for ga in a.groups():
        gb = after.pop(ga.key, None)
        if gb is None:
            only_a.append(ga.key)
            continue
        pairs += 1
        mismatches += pair_mismatches(a, ga, b, gb)
        ddirs = [d for d in ("read", "write") if d in a.ddirs(ga.key[1]) or d in b.ddirs(ga.key[1])]
        for ddir in ddirs:
            for name, fn, higher in PAIRED_METRICS:
                va, vb = ga.values(along(fn, ddir)), gb.values(along(fn, ddir))
                diff = welch(va, vb)
                if diff is not None:
                    changes.append(Change(ga.key, ddir, name, higher, diff, tuple(va), tuple(vb), size))
    return BeforeAfter(
        a.name, b.name, changes, only_a, list(after), build_changes(a, b), pairs, mismatches, size
    )


def pair_setup(data: CampaignData, g: Group) -> dict[str, object]:
    """What a point ran with, beyond its pairing key: the workload's parameters, QEMU build, accelerator."""
    spec = data.workload_specs.get(g.key[1])
    setup: dict[str, object] = {p: getattr(spec, p, None) for p in PAIR_PARAMETERS}
    setup["qemu build"] = data.builds().get(g.target)
    setup["accel"] = " + ".join(sorted({str(r.accel) for r in g.rows if r.accel})) or None
    return setup


def pair_mismatches(a: CampaignData, ga: Group, b: CampaignData, gb: Group) -> list[PairWarning]:
    before, after = pair_setup(a, ga), pair_setup(b, gb)
    return [PairWarning(ga.key, p, before[p], after[p]) for p in before if before[p] != after[p]]


@dataclass(frozen=True)
class Regression:
    """A paired figure the gate flags: worse by more than it allows (``verdict`` "regression"), or with a spread
    too wide to tell whether it is (``verdict`` "inconclusive", by ``vmio.stats.tell.change``)."""

    change: Change
    significant: bool | None  # None: fewer than 2 repetitions a side, the plain difference decided
    verdict: str = "regression"
    pct: float = 0.0

    def text(self) -> str:
        c, d = self.change, self.change.diff
        rel = f"{d.rel:+.1%}" if d.rel is not None else "from 0"
        unit = UNITS.get(c.metric, "us")
        shown = f"{_in_unit(c.metric, d.before)} -> {_in_unit(c.metric, d.after)} {unit} ({rel})"
        if self.verdict == "inconclusive":
            return (
                f"{point_label(c.key)} {c.ddir} {c.metric}: {shown}, inconclusive: the {LEVEL:.0%} interval of the "
                f"difference ({_in_unit(c.metric, d.lo)} to {_in_unit(c.metric, d.hi)} {unit}) reaches past a "
                f"{self.pct:g} % worsening (n = {d.n_before} and {d.n_after}); more repetitions narrow it"
            )
        why = (
            f"its whole {LEVEL:.0%} interval (Welch) lies beyond {self.pct:g} %"
            if self.significant
            else f"plain difference, no interval (n = {d.n_before} and {d.n_after}; Welch needs 2 a side)"
        )
        return f"{point_label(c.key)} {c.ddir} {c.metric}: {shown}, {why}"

    def as_dict(self) -> dict[str, object]:
        return {**self.change.as_dict(), "significance": self.significant, "gate": self.verdict}


UNITS = {"IOPS": "IOPS", "bandwidth": "MiB/s"}  # latencies: us, as the compare table prints them
JSON_UNITS = {"IOPS": "IOPS", "bandwidth": "B/s"}  # the JSON's figures as stored: latencies in ns


def _in_unit(metric: str, value: float | None) -> str:
    """A figure in its table's unit: IOPS, MiB/s, or latency in us (stored in ns)."""
    if value is None:
        return "-"
    if metric == "bandwidth":
        return f"{value / (1 << 20):.1f}"
    return f"{value:.1f}" if metric == "IOPS" else f"{value / 1e3:.1f}"


def regressions(result: BeforeAfter, pct: float) -> list[Regression]:
    """What the gate flags at ``pct`` percent: IOPS or bandwidth lower, p50 or p99 latency higher. With 2 or
    more repetitions a side the rule is ``vmio.stats.tell.change`` (size ``pct``): a worsening whose whole 95 %
    interval lies beyond ``pct`` is a regression; an interval that reaches past ``pct`` on the worse side
    without lying wholly beyond it is "inconclusive"; with fewer, the plain difference decides."""
    found = []
    for c in result.changes:
        d = c.diff
        if d.rel is None or c.metric.endswith("layer mean"):
            continue
        worse = -d.rel if c.higher_is_better else d.rel
        if not d.decided:
            if worse * 100 > pct:
                found.append(Regression(c, None, "regression", pct))
            continue
        said = tell.change(c.before_values, c.after_values, pct / 100)
        if said == ("lower" if c.higher_is_better else "higher"):
            found.append(Regression(c, True, "regression", pct))
        elif said == "inconclusive" and _reaches_worse(c, pct / 100):
            found.append(Regression(c, False, "inconclusive", pct))
    return found


def _reaches_worse(c: Change, size: float) -> bool:
    """Whether the interval of the difference reaches past a worsening of ``size`` (relative to before)."""
    d = c.diff
    if d.lo is None or d.hi is None or d.before == 0:
        return True
    if c.higher_is_better:
        return d.lo / abs(d.before) < -size
    return d.hi / abs(d.before) > size


def build_changes(a: CampaignData, b: CampaignData) -> list[BuildChange]:
    """The targets of both campaigns whose QEMU build differs between them, in ``a``'s target order."""
    before, after = a.builds(), b.builds()
    common = [t for t in a.target_names() if t in set(b.target_names())]
    return [
        BuildChange(t, before.get(t), after.get(t))
        for t in common
        if before.get(t) != after.get(t) and (t in before or t in after)
    ]
