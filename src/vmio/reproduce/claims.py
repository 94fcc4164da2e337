"""The papers and what they state: one claims file per paper (``papers/<id>.toml``, package data).

A claims file has a ``[paper]`` table (id, titles, authors, year, keywords, needs) and one ``[[claim]]``
table per statement: its text, where in the paper it is (text, a table, or a figure with the reading
named), the paper's value and unit, and the tolerance by which a measurement agrees with it.

A claim's ``kind`` is ``result`` (something the paper's experiment measured or computed, judged against
vmio's), ``setup`` (the paper's own setting, or a place vmio chose: shown beside vmio's value for reference,
never judged nor counted) or ``absent`` (a finding of the paper that vmio cannot test, for want of what the
paper measured it on, e.g. another provider's cloud; named with what is missing, never judged nor counted).
``bs``: the block sizes a claim speaks of (``["4k", "8k"]``), where the paper states it per block size. ``statistic`` names the measure the paper reports and vmio computes for it
(a peak over windows, a whole-run mean, the maximum of 100 operations, a ratio of what to what).
``scale = "log"`` marks a ratio or a time: its repetitions are judged on their logarithm (a ratio's
natural scale, where 2x and 0.5x are equally far from 1), by the same rule (``vmio.stats.tell.side``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypedDict

from vmio.errors import InputError
from vmio.units import parse_size

NEEDS = ("qemu", "ceph", "kvm", "hdd", "root")
TOLERANCES = ("relative", "absolute", "at_least", "at_most")
KINDS = ("result", "setup", "absent")
SCALES_OF_VALUES = ("linear", "log")
TCG_WHY = "TCG: the guest CPU is emulated"


class ToleranceJson(TypedDict):
    kind: str
    value: float


class Listing(TypedDict):
    """``vmio reproduce --list --json``'s entry."""

    id: str
    title: str
    authors: list[str]
    year: int
    keywords: list[str]
    needs: list[str]


@dataclass(frozen=True)
class Tolerance:
    """``relative``: |measured - paper| <= value x |paper|; ``absolute``: |measured - paper| <= value;
    ``at_least`` / ``at_most``: measured >= value / <= value."""

    kind: str
    value: float

    def holds(self, paper: float, measured: float) -> bool:
        if self.kind == "relative":
            return abs(measured - paper) <= self.value * abs(paper)
        if self.kind == "absolute":
            return abs(measured - paper) <= self.value
        if self.kind == "at_least":
            return measured >= self.value
        return measured <= self.value

    def json(self) -> ToleranceJson:
        return {"kind": self.kind, "value": self.value}


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    source: str  # where the paper states it: "text, §4", "Fig. 3 (read off the figure: ...)"
    paper_value: float
    unit: str
    tolerance: Tolerance
    virtualization_cost: bool = False  # not judged under TCG
    kind: str = "result"  # "result" | "setup" (an input shown for reference) | "absent" (not testable here)
    statistic: str = ""  # the measure the paper reports and vmio computes for it
    scale: str = "linear"  # "log": a ratio or a time, judged on the logarithm of its values (result.decided)
    bs: tuple[int, ...] = ()  # the block sizes (bytes) the claim speaks of; empty: not a per-size claim


@dataclass(frozen=True)
class Paper:
    id: str
    number: int  # the file's number among the five studies (code only)
    title: str
    title_original: str
    authors: tuple[str, ...]
    year: int
    keywords: tuple[str, ...]
    needs: tuple[str, ...]
    claims: tuple[Claim, ...]

    def listing(self) -> Listing:
        """``vmio reproduce --list --json``'s entry."""
        return {
            "id": self.id,
            "title": self.title,
            "authors": list(self.authors),
            "year": self.year,
            "keywords": list(self.keywords),
            "needs": list(self.needs),
        }

    def claim(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(claim_id)


def papers() -> list[Paper]:
    """Every paper, in the order of their numbers."""
    folder = resources.files("vmio.reproduce") / "papers"
    found = [
        _parse(f.name, f.read_text(encoding="utf-8")) for f in folder.iterdir() if f.name.endswith(".toml")
    ]
    return sorted(found, key=lambda p: p.number)


def paper(paper_id: str) -> Paper:
    """The paper with id ``paper_id``; an InputError naming the ids there are otherwise."""
    known = papers()
    for p in known:
        if p.id == paper_id:
            return p
    ids = ", ".join(p.id for p in known)
    raise InputError(
        f"reproduce: {paper_id!r} is not a paper vmio knows; use one of {ids} (vmio reproduce --list)"
    )


def _parse(name: str, text: str) -> Paper:
    data = tomllib.loads(text)
    head = data["paper"]
    needs = tuple(head.get("needs", ()))
    if not set(needs) <= set(NEEDS):
        raise ValueError(f"{name}: paper.needs {needs!r} has names outside {NEEDS}")
    claims = tuple(_claim(name, c) for c in data.get("claim", ()))
    return Paper(
        id=head["id"],
        number=int(head["number"]),
        title=head["title"],
        title_original=head["title_original"],
        authors=tuple(head["authors"]),
        year=int(head["year"]),
        keywords=tuple(head["keywords"]),
        needs=needs,
        claims=claims,
    )


def _claim(name: str, c: dict[str, Any]) -> Claim:  # a [[claim]] table as tomllib read it
    tol = c["tolerance"]
    if tol["kind"] not in TOLERANCES:
        raise ValueError(
            f"{name}: claim {c['id']!r}: tolerance kind {tol['kind']!r} is not one of {TOLERANCES}"
        )
    kind, scale = c.get("kind", "result"), c.get("scale", "linear")
    if scale not in SCALES_OF_VALUES:
        raise ValueError(f"{name}: claim {c['id']!r}: scale {scale!r} is not one of {SCALES_OF_VALUES}")
    if kind not in KINDS:
        raise ValueError(f"{name}: claim {c['id']!r}: kind {kind!r} is not one of {KINDS}")
    return Claim(
        id=c["id"],
        text=c["text"],
        source=c["source"],
        paper_value=float(c["paper_value"]),
        unit=c["unit"],
        tolerance=Tolerance(tol["kind"], float(tol["value"])),
        virtualization_cost=bool(c.get("virtualization_cost", False)),
        kind=kind,
        statistic=str(c.get("statistic", "")),
        scale=scale,
        bs=tuple(parse_size(str(b)) for b in c.get("bs", ())),
    )
