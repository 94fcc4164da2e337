"""A reproduction's result: each claim beside what vmio measured, judged by the claim's tolerance."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from vmio.reproduce.claims import TCG_WHY, Claim, Paper, ToleranceJson

Cell = str | int | float | None
TableRow = dict[str, Cell]  # one row of a table on the page, by column
# per-paper tables for the page (and the figures they share)
Details = dict[str, list[TableRow] | list[int] | int]


class SpreadJson(TypedDict):
    min: float | None
    max: float | None
    n: int


class ClaimRow(TypedDict):
    """One claim's row of ``result.json``."""

    id: str
    text: str
    source: str
    paper_value: float
    measured: float | None
    unit: str
    spread: SpreadJson | None
    tolerance: ToleranceJson
    agrees: bool | None
    why: str | None


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

    @classmethod
    def median_of(cls, values: Sequence[float], why: str | None = None, note: str | None = None) -> Measured:
        return cls(statistics.median(values), Spread.of(values), why, note)


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

    def claim_rows(self) -> list[ClaimRow]:
        return [judge(c, self.measured.get(c.id), self.accel) for c in self.paper.claims]

    def json(self) -> dict[str, object]:
        """``result.json``."""
        return {
            "paper": self.paper.id,
            "title": self.paper.title,
            "scale": self.scale,
            "host": self.host,
            "accel": self.accel,
            "campaigns": self.campaigns,
            "fitted": self.fitted,
            "failures": self.failures,
            "retried": self.retried,
            "claims": self.claim_rows(),
        }


def judge(claim: Claim, m: Measured | None, accel: str | None) -> ClaimRow:
    """One claim's row of ``result.json``: ``agrees`` by the tolerance, null where it cannot be judged."""
    value = None if m is None else m.value
    row: ClaimRow = {
        "id": claim.id,
        "text": claim.text,
        "source": claim.source,
        "paper_value": claim.paper_value,
        "measured": _round(value),
        "unit": claim.unit,
        "spread": m.spread.json() if m is not None and m.spread is not None else None,
        "tolerance": claim.tolerance.json(),
        "agrees": None,
        "why": None,
    }
    if claim.virtualization_cost and accel == "tcg":
        row["why"] = TCG_WHY + (f"; {m.why}" if m is not None and m.why else "")
        return row
    if m is None or value is None:
        row["why"] = (m.why if m is not None and m.why else None) or "not measured in this run"
        return row
    agrees = claim.tolerance.holds(claim.paper_value, value)
    row["agrees"] = agrees
    if not agrees:
        row["why"] = m.why or "no explanation was found"
    if m.note:
        row["why"] = m.note if row["why"] is None else f"{row['why']}; {m.note}"
    return row


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)
