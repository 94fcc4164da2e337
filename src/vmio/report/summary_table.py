"""The summary table: ratio to the baseline at saturation, the knee of each IOPS curve, offered rates met.

IOPS here are read + write. A rate counts as achieved when the median over repetitions reaches
``ACHIEVED`` of the offered rate; the knee is the lowest offered rate that is not achieved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vmio.report.data import CampaignData, Group, Row, families, iops, offered_order, tcg_note
from vmio.stats.spread import Spread, ratio
from vmio.units import format_size

ACHIEVED = 0.95


def total_iops(row: Row) -> float:
    return iops(row, "read") + iops(row, "write")


@dataclass(frozen=True)
class Rate:
    offered: int
    achieved: Spread

    @property
    def ok(self) -> bool:
        return self.achieved.median >= ACHIEVED * self.offered


@dataclass
class SummaryRow:
    workload: str
    bs: int
    load_processes: int
    target: str
    is_baseline: bool
    saturation: Spread | None  # IOPS at offered "max"
    vs_baseline: Spread | None
    rates: list[Rate] = field(default_factory=list)
    label: str = ""  # the target as shown: with its QEMU build when the campaign ran several
    build: str | None = None  # the target's QEMU build (``qemu 10.0.2 / q35``); None without VMs

    @property
    def knee(self) -> int | None:
        return next((r.offered for r in self.rates if not r.ok), None)

    def as_dict(self) -> dict[str, object]:
        return {
            "workload": self.workload,
            "bs": self.bs,
            "load_processes": self.load_processes,
            "target": self.target,
            "qemu_build": self.build,
            "baseline": self.is_baseline,
            "saturation_iops": self.saturation.as_dict() if self.saturation else None,
            "ratio_to_baseline": self.vs_baseline.as_dict() if self.vs_baseline else None,
            "knee": self.knee,
            "rates": [
                {"offered": r.offered, "achieved": r.achieved.as_dict(), "ok": r.ok} for r in self.rates
            ],
        }


def summarize(data: CampaignData, baseline: str) -> list[SummaryRow]:
    out = []
    builds = data.builds()
    for family, targets in families(data).items():
        base = _saturation(targets.get(baseline, []))
        for target, groups in targets.items():
            sat = _saturation(groups)
            rel = ratio(sat, base) if sat and base else None
            label, build = data.target_label(target), builds.get(target)
            out.append(
                SummaryRow(*family, target, target == baseline, sat, rel, _rates(groups), label, build)
            )
    return out


def _saturation(groups: list[Group]) -> Spread | None:
    at_max = [g for g in groups if g.offered is None]
    return at_max[0].spread(total_iops) if at_max else None


def _rates(groups: list[Group]) -> list[Rate]:
    rates = []
    for g in sorted(groups, key=lambda g: offered_order(g.offered)):
        spread = g.spread(total_iops)
        if g.offered is not None and spread is not None:
            rates.append(Rate(g.offered, spread))
    return rates


def format_text(rows: list[SummaryRow], campaign: str, baseline: str) -> str:
    """The terminal version of the table."""
    head = (
        "workload",
        "bs",
        "load",
        "target",
        "IOPS at max [min-max]",
        f"vs {baseline}",
        "knee",
        "offered rates",
    )
    lines = [head] + [_cells(r) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    title = (
        f"campaign {campaign!r}: medians over repetitions; a rate is achieved at >= {ACHIEVED:.0%} of it; "
        "knee = lowest rate not achieved\n"
    )
    body = "".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() + "\n" for line in lines
    )
    return title + body + tcg_note(r.label for r in rows) if rows else title + "no points done\n"


def _cells(r: SummaryRow) -> tuple[str, ...]:
    return (
        r.workload, format_size(r.bs), str(r.load_processes), r.label or r.target,
        spread_text(r.saturation, 0), ratio_text(r), knee_text(r), rates_text(r),
    )  # fmt: skip


def spread_text(s: Spread | None, digits: int) -> str:
    if s is None:
        return "-"
    if s.n < 2:
        return f"{s.median:.{digits}f}"
    return f"{s.median:.{digits}f} [{s.lo:.{digits}f}-{s.hi:.{digits}f}]"


def ratio_text(r: SummaryRow) -> str:
    if r.is_baseline:
        return "baseline"
    return spread_text(r.vs_baseline, 2)


def knee_text(r: SummaryRow) -> str:
    if not r.rates:
        return "-"
    knee = r.knee
    return "none" if knee is None else str(knee)


def rates_text(r: SummaryRow) -> str:
    return (
        ", ".join(f"{x.offered} {'yes' if x.ok else 'no'} ({x.achieved.median:.0f})" for x in r.rates) or "-"
    )
