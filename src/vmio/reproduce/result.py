"""A reproduction's result: each claim beside what vmio measured, judged by the claim's tolerance.

A claim measured more than once (repetitions, or seeds of a simulation) is judged on its repetitions by
``vmio.stats.tell``: ``stable`` is true when the 95 % interval of their mean lies wholly on one side of each
boundary the tolerance draws, and ``agrees`` is then the side it lies on; otherwise ``stable`` is false
(the repetitions cannot tell) and ``agrees`` is the tolerance applied to the measured value, shown as not
settled. ``setup`` claims (the paper's own settings) are shown for reference: ``agrees`` null, never counted.
A measurement may say that it does not test the claim's sentence (``untested``: shown, not judged), that this
setup cannot decide it whatever the repetitions (``cannot_tell``), or that it is a decision procedure's answer,
the same on every run (``exact``: judged by the tolerance alone, nothing to repeat).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from vmio.reproduce.claims import TCG_WHY, Claim, Paper, Tolerance, ToleranceJson
from vmio.reproduce.figure import Figure
from vmio.stats.tell import Interval, interval, side

Cell = str | int | float | None
TableRow = dict[str, Cell]  # one row of a table on the page, by column
# per-paper tables for the page (and the figures they share)
Details = dict[str, list[TableRow] | list[int] | int]


class SpreadJson(TypedDict):
    min: float | None
    max: float | None
    n: int


class IntervalJson(TypedDict):
    mean: float | None  # on a log claim: the geometric mean, lo and hi taken back from the log scale
    lo: float | None
    hi: float | None
    scale: str  # "linear" | "log"


class ClaimRow(TypedDict):
    """One claim's row of ``result.json``."""

    id: str
    kind: str  # "result" | "setup" | "absent"
    bs: list[int]  # the block sizes (bytes) the claim speaks of; empty: not a per-size claim
    text: str
    source: str
    statistic: str
    paper_value: float
    measured: float | None
    unit: str
    repetitions: int  # how many values the verdict rests on (0: not measured)
    values: list[float]  # each repetition's (or seed's) value
    spread: SpreadJson | None
    interval: IntervalJson | None  # the 95 % Student interval of the values' mean (2 values or more)
    tolerance: ToleranceJson
    agrees: bool | None
    stable: bool | None  # null where nothing is judged; false: the repetitions cannot tell
    why: str | None


class BeyondRow(TypedDict):
    """A what-if beyond the paper (``result.json``'s ``beyond``): measured, with no paper value."""

    id: str
    text: str
    statistic: str
    measured: float | None
    unit: str
    values: list[float]
    spread: SpreadJson | None
    note: str


class Counts(TypedDict):
    """How the result claims came out; setup and absent claims are counted apart, never as agreements."""

    agree: int
    disagree: int
    cannot_tell: int
    not_judged: int
    setup: int
    absent: int


class Fitted(TypedDict):
    """A parameter fitted on a claim (``result.json``'s ``fitted``)."""

    name: str
    value: float
    fitted_to: str
    how: str


@dataclass(frozen=True)
class Spread:
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(min(values), max(values), len(values))

    def json(self) -> SpreadJson:
        return {"min": _round(self.min), "max": _round(self.max), "n": self.n}


@dataclass(frozen=True)
class Measured:
    """What an experiment gave for one claim. ``value`` None: not measured (``why`` says why).
    ``why``: the explanation kept when the claim does not agree (a hypothesis says how it was tested);
    ``note``: said even when it agrees (e.g. a parameter fitted on this very claim)."""

    value: float | None
    spread: Spread | None = None
    why: str | None = None
    note: str | None = None
    values: tuple[float, ...] = ()  # the repetitions the verdict rests on (empty: ``value`` alone)
    # a decision procedure's answer (1 = the paper's), the same on every run: judged by the tolerance alone
    exact: bool = False
    # why this setup cannot decide the claim whatever the repetitions say (shown as "cannot tell")
    cannot_tell: str | None = None
    # why the measurement does not test the claim's sentence (shown beside it, not judged)
    untested: str | None = None

    @classmethod
    def median_of(cls, values: Sequence[float], why: str | None = None, note: str | None = None) -> Measured:
        return cls(statistics.median(values), Spread.of(values), why, note, tuple(float(v) for v in values))


@dataclass
class Reproduction:
    paper: Paper
    scale: str
    host: dict[str, object]  # the host's facts (vmio.campaign.facts)
    accel: str | None = None  # "tcg" / "kvm" when guests ran, None when no guest ran
    measured: dict[str, Measured] = field(default_factory=dict)
    campaigns: list[str] = field(default_factory=list)
    fitted: list[Fitted] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)  # failed once, measured on a second try: the first error
    details: Details = field(default_factory=dict)
    beyond: list[BeyondRow] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how vmio read the paper where it allows several readings

    def claim_rows(self) -> list[ClaimRow]:
        return [judge(c, self.measured.get(c.id), self.accel) for c in self.paper.claims]

    def counts(self) -> Counts:
        return counts(self.claim_rows())

    def json(self) -> dict[str, object]:
        """``result.json`` (and what ``reproduce --json`` prints)."""
        doc: dict[str, object] = {
            "paper": self.paper.id,
            "title": self.paper.title,
            "scale": self.scale,
            "host": self.host,
            "accel": self.accel,
            "campaigns": self.campaigns,
            "fitted": self.fitted,
            "failures": self.failures,
            "retried": self.retried,
            "notes": self.notes,
            "counts": self.counts(),
            "claims": self.claim_rows(),
            "beyond": self.beyond,
            "figures": [f.json() for f in self.figures],
        }
        network = self.details.get("network")
        if (
            isinstance(network, list) and network and isinstance(network[0], dict)
        ):  # bitisle-dstore-2014's links
            shown: dict[str, object] = dict(network[0])
            slow = self.details.get("network-1gbit")
            if isinstance(slow, list) and slow:  # the second run at 1 Gbit/s (--scale paper)
                shown["at_1gbit"] = slow
            doc["network"] = shown
        return doc


def beyond(name: str, text: str, statistic: str, m: Measured, unit: str, note: str) -> BeyondRow:
    """A ``beyond`` row from a measurement."""
    return {
        "id": name,
        "text": text,
        "statistic": statistic,
        "measured": _round(m.value),
        "unit": unit,
        "values": [_round_f(v) for v in m.values],
        "spread": m.spread.json() if m.spread is not None else None,
        "note": note,
    }


def counts(rows: Sequence[ClaimRow]) -> Counts:
    out: Counts = {"agree": 0, "disagree": 0, "cannot_tell": 0, "not_judged": 0, "setup": 0, "absent": 0}
    for r in rows:
        out[verdict(r)] += 1  # type: ignore[literal-required]
    return out


def verdict(row: ClaimRow) -> str:
    """``agree`` | ``disagree`` | ``cannot_tell`` (repetitions that cannot tell) | ``not_judged`` | ``setup``
    | ``absent``."""
    if row["kind"] in ("setup", "absent"):
        return row["kind"]
    if row["agrees"] is None:
        return "not_judged"
    if row["stable"] is False:
        return "cannot_tell"
    return "agree" if row["agrees"] else "disagree"


def judge(claim: Claim, m: Measured | None, accel: str | None) -> ClaimRow:
    """One claim's row of ``result.json``: ``agrees`` by the tolerance over the repetitions, with ``stable``;
    null where it cannot be judged (a setup claim, TCG for a virtualization cost, nothing measured). The
    reason (``why``) is kept whatever the verdict."""
    value = None if m is None else m.value
    values = [] if m is None or value is None else list(m.values or (value,))
    finite = bool(values) and all(math.isfinite(v) for v in values)
    log = claim.scale == "log" and finite and all(v > 0 for v in values)
    ci = interval([math.log(v) for v in values] if log else values) if finite else None
    row: ClaimRow = {
        "id": claim.id,
        "kind": claim.kind,
        "bs": list(claim.bs),
        "text": claim.text,
        "source": claim.source,
        "statistic": claim.statistic,
        "paper_value": claim.paper_value,
        "measured": _round(value),
        "unit": claim.unit,
        "repetitions": len(values),
        "values": [_round_f(v) for v in values],
        "spread": m.spread.json() if m is not None and m.spread is not None else None,
        "interval": None if ci is None else _interval(ci, log),
        "tolerance": claim.tolerance.json(),
        "agrees": None,
        "stable": None,
        "why": None,
    }
    said = "; ".join(x for x in ((m.untested, m.cannot_tell, m.why, m.note) if m is not None else ()) if x)
    if claim.kind == "setup":
        row["why"] = "a setting, not a result: shown for reference, not judged, not counted" + (
            f"; {said}" if said else ""
        )
        return row
    if claim.kind == "absent":
        row["why"] = "absent: a finding of the paper vmio cannot test here, not judged, not counted" + (
            f"; {said}" if said else ""
        )
        return row
    if claim.virtualization_cost and accel == "tcg":
        row["why"] = TCG_WHY + (f"; {said}" if said else "")
        return row
    if m is None or value is None:
        row["why"] = said or "not measured in this run"
        return row
    if m.untested:  # shown, not judged
        row["why"] = said
        return row
    if m.cannot_tell or m.exact:
        row["stable"], row["agrees"] = m.exact, claim.tolerance.holds(claim.paper_value, value)
        row["why"] = said or None
        return row
    settled = decided(claim.tolerance, claim.paper_value, values, log) if finite else None
    row["stable"] = settled is not None
    row["agrees"] = settled if settled is not None else claim.tolerance.holds(claim.paper_value, value)
    row["why"] = said or None
    if settled is None:
        lead = (
            "one measurement: no repetitions to tell by"
            if len(values) < 2
            else "a repetition gave no finite value"
            if not finite
            else f"the repetitions cannot tell: the 95 % interval of their {'geometric ' if log else ''}mean "
            f"({_g(row['interval']['lo'] if row['interval'] else None)}..{_g(row['interval']['hi'] if row['interval'] else None)}, "
            f"n={len(values)}) crosses the tolerance's boundary"
            if ci is not None
            else ""
        )
        row["why"] = lead + (f"; {said}" if said else "")
    elif not row["agrees"] and not said:
        row["why"] = "no explanation was found"
    return row


def decided(tol: Tolerance, paper_value: float, values: Sequence[float], log: bool = False) -> bool | None:
    """Whether ``values`` agree with ``paper_value`` by ``tol``, as ``vmio.stats.tell.side`` decides it
    for each boundary the tolerance draws (``log``: on the logarithms of the values and boundaries, a
    boundary at or below 0 lying below every value); None when the repetitions cannot tell."""

    def at(threshold: float) -> str:
        if not log:
            return side(values, threshold)
        if threshold <= 0:
            return "above"
        return side([math.log(v) for v in values], math.log(threshold))

    if tol.kind == "at_least":
        return {"above": True, "below": False}.get(at(tol.value))
    if tol.kind == "at_most":
        return {"below": True, "above": False}.get(at(tol.value))
    width = tol.value * abs(paper_value) if tol.kind == "relative" else tol.value
    low, high = at(paper_value - width), at(paper_value + width)
    if low == "above" and high == "below":
        return True
    if low == "below" or high == "above":
        return False
    return None


def _interval(ci: Interval, log: bool) -> IntervalJson:
    if not log:
        return {"mean": _round(ci.mean), "lo": _round(ci.lo), "hi": _round(ci.hi), "scale": "linear"}
    back = [None if x is None else math.exp(x) for x in (ci.mean, ci.lo, ci.hi)]
    return {"mean": _round(back[0]), "lo": _round(back[1]), "hi": _round(back[2]), "scale": "log"}


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _round_f(x: float) -> float:
    return round(float(x), 6)


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)
