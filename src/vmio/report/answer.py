"""``#answer``, the report's first section: per target, in words and in one table, the IOPS it reached at
the highest offered load (per direction, with the unit), its ratio to the baseline, its knee (the lowest
offered rate not achieved), the highest IOPS within the SLA when one is set, p50/p99 at the knee (at the
highest load when it has none) and the limit ``vmio diagnose`` names for it (TCG said where it applies).

The verdicts come from ``vmio.advise``, which this layer may not import: the CLI diagnoses the points at
the highest load and hands their limits in (``Limits``: by campaign and point key, the text to show).
A page of several campaigns has one row set (and one paragraph) per campaign.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass

from vmio.report import sla
from vmio.report.data import TCG_MARK, CampaignData, Group, families, offered_order
from vmio.report.summary_table import SummaryRow, knee_text, ratio_text
from vmio.stats.spread import Spread
from vmio.units import format_size

Limits = Mapping[tuple[str, str], str]  # (campaign, point key) → the limit diagnose names


@dataclass(frozen=True)
class AnswerRow:
    campaign: str
    row: SummaryRow
    iops: dict[str, float]  # per direction moved, the median at the highest offered load
    top: str  # that load ("max" or a number)
    at: str  # where the latencies were read: "knee 2000" or "max"
    p50_ms: dict[str, float | None]
    p99_ms: dict[str, float | None]
    sla: str | None  # the SLA cell (None: no SLA set)
    limit: str


def rows_of(
    data: CampaignData, summary: list[SummaryRow], knees: list[sla.Knee], limits: Limits
) -> list[AnswerRow]:
    """The answer's rows of one campaign, in the summary's order."""
    fams = families(data)
    out = []
    for r in summary:
        groups = fams.get((r.workload, r.bs, r.load_processes), {}).get(r.target, [])
        if not groups:
            continue
        ordered = sorted(groups, key=lambda g: offered_order(g.offered))
        top = ordered[-1]
        ddirs = [d for d in ("read", "write") if any(row.ops(d) for g in groups for row in g.rows)] or [
            "read"
        ]
        knee = next((g for g in ordered if g.offered == r.knee), None) if r.knee is not None else None
        at = knee or top
        mine = [
            k
            for k in knees
            if (k.target, k.workload, k.bs, k.load_processes)
            == (r.target, r.workload, r.bs, r.load_processes)
        ]
        out.append(
            AnswerRow(
                campaign=data.name,
                row=r,
                iops={d: _median(top, lambda row, d=d: float(row.iops(d))) or 0.0 for d in ddirs},
                top="max" if top.offered is None else f"{top.offered:,}",
                at=f"knee {at.offered:,}" if knee is not None and at.offered is not None else _load(top),
                p50_ms={d: _lat(at, d, "p50") for d in ddirs},
                p99_ms={d: _lat(at, d, "p99") for d in ddirs},
                sla=_sla(mine) if data.sla else None,
                limit=_limit(data, top, limits),
            )
        )
    return out


def _load(g: Group) -> str:
    return "max" if g.offered is None else f"{g.offered:,}"


def _median(g: Group, value: object) -> float | None:
    spread = Spread.of([value(r) for r in g.rows])  # type: ignore[operator]
    return spread.median if spread else None


def _lat(g: Group, ddir: str, key: str) -> float | None:
    values = []
    for r in g.rows:
        lat = r.lat_ns(ddir)
        v = lat.get(key) if lat is not None else None
        values.append(None if v is None else float(v) / 1e6)
    spread = Spread.of(values)
    return spread.median if spread else None


def _sla(knees: list[sla.Knee]) -> str:
    cells = []
    for k in knees:
        value = "none within" if k.iops is None else f"{k.iops:,.0f} IOPS"
        cells.append(f"{k.ddir} {value}" + ("" if k.crossed else " (never over)"))
    return "; ".join(cells) or "-"


def _limit(data: CampaignData, top: Group, limits: Limits) -> str:
    found = [limits[(data.name, r.point)] for r in top.rows if (data.name, r.point) in limits]
    text = found[0] if found else "not diagnosed"
    if any(r.accel == "tcg" for r in top.rows) and "TCG" not in text:
        text += " · TCG"
    return text


def _iops_text(row: AnswerRow) -> str:
    return " + ".join(f"{v:,.0f} {d}" for d, v in row.iops.items()) + " IOPS"


def _ms_text(values: dict[str, float | None]) -> str:
    return " / ".join("-" if v is None else f"{v:.3f}" for v in values.values())


def words(rows: list[AnswerRow], baseline: str | None) -> list[str]:
    """One sentence per target: what it reached, against the baseline, where it saturates, its limit."""
    by_target: dict[str, list[AnswerRow]] = {}
    for r in rows:
        by_target.setdefault(r.row.target, []).append(r)
    out = []
    tcg = [t for t, mine in by_target.items() if any(TCG_MARK in (r.row.label or "") for r in mine)]
    if tcg:
        out.append(
            f"{', '.join(tcg) if len(tcg) < len(by_target) - 1 else 'Every VM target'} ran under TCG (QEMU "
            "emulating the CPU, no KVM): their ratios measure the emulator, not a KVM host."
        )
    for target, mine in by_target.items():
        reached = " / ".join(
            f"{v:,.0f} {d}" for r in mine for d, v in r.iops.items() if v or len(r.iops) == 1
        )
        tops = sorted({r.top for r in mine})
        text = f"{target}: {reached} IOPS at {' / '.join(tops)}"
        ratios = [ratio_text(r.row) for r in mine if not r.row.is_baseline and r.row.vs_baseline]
        if ratios:
            text += f" ({' / '.join(ratios)} × {baseline})"
        knees = sorted({str(r.row.knee) for r in mine if r.row.knee is not None})
        text += f"; saturates at {' / '.join(knees)} offered IOPS" if knees else ""
        limits = sorted({r.limit.removesuffix(" · TCG") for r in mine})
        text += f"; limit: {' / '.join(limits)}."
        out.append(text)
    return out


HEAD = ("target", "workload · bs · load", "IOPS at the highest load", "vs baseline", "knee (offered IOPS)",
        "p50 / p99 ms at the knee", "limit (vmio diagnose)")  # fmt: skip


def table_html(sets: list[tuple[str, list[AnswerRow]]], baseline: str | None, bound: str | None) -> str:
    """The answer's table: one row set per campaign (a heading row each when there are several)."""
    e = html.escape
    head = list(HEAD)
    head[3] = f"vs {baseline}" if baseline else head[3]
    if bound:
        head.insert(5, f"IOPS within {bound}")
    out = ['<table id="summary" class="answer"><tr>', *(f"<th>{e(h)}</th>" for h in head), "</tr>"]
    for campaign, rows in sets:
        if len(sets) > 1:
            out.append(f'<tr class="campaign"><th colspan="{len(head)}">campaign {e(campaign)}</th></tr>')
        for r in rows:
            s = r.row
            cells = [
                (s.label or s.target, ""),
                (f"{s.workload} · {format_size(s.bs)} · {s.load_processes}", ""),
                (f"{_iops_text(r)} (at {r.top})", "num"),
                (ratio_text(s), "num"),
                (knee_text(s), "num"),
                (f"{_ms_text(r.p50_ms)} / {_ms_text(r.p99_ms)} (at {r.at})", "num"),
                (r.limit, ""),
            ]
            if bound:
                cells.insert(5, (r.sla or "-", "num"))
            out.append(
                f'<tr data-campaign="{e(campaign)}" data-target="{e(s.target)}">'
                + "".join(f'<td class="{c}">{e(t)}</td>' if c else f"<td>{e(t)}</td>" for t, c in cells)
                + "</tr>"
            )
    out.append("</table>")
    return "".join(out)


def section_html(
    sets: list[tuple[str, list[AnswerRow]]], baseline: str | None, bound: str | None, note: str
) -> str:
    """``#answer``: the sentences (per campaign), the table, and what its terms mean."""
    e = html.escape
    parts = [
        '<section id="answer"><h2>Answer: what does each target deliver, and where does it saturate?</h2>'
    ]
    for campaign, rows in sets:
        said = words(rows, baseline)
        lead = f"<p><strong>{e(campaign)}</strong></p>" if len(sets) > 1 else ""
        parts.append(lead + '<ul class="words">' + "".join(f"<li>{e(w)}</li>" for w in said) + "</ul>")
    parts.append(table_html(sets, baseline, bound))
    tcg = any(TCG_MARK in (r.row.label or "") for _, rows in sets for r in rows)
    parts.append(
        f'<p class="note">{e(note)}' + (f" {e(TCG_MARK)}: ran under TCG (no KVM)." if tcg else "") + "</p>"
    )
    parts.append("</section>")
    return "".join(parts)
