"""``vmio trend`` as text: per point, each figure per campaign (mean, 95 % interval, repetitions, verdict), then
the changes with the facts that changed with them, then the gate."""

from __future__ import annotations

from vmio.report.compare_text import columns
from vmio.report.trend import FIGURES, UNITS, Judged, Trend, rule


def number(v: float | None, what: str) -> str:
    if v is None:
        return "-"
    if what in ("p50", "p99"):
        return f"{v / 1e6:.3f} ms"
    if what == "bw":
        return f"{v / 2**20:.1f} MiB/s"
    return f"{v:.0f}"


def pct(size: float | None) -> str:
    return "-" if size is None else f"{size * 100:+.1f}%"


def format_trend(t: Trend) -> str:
    r = rule(t.min_change)
    out = [
        f"series {t.series!r}: {len(t.campaigns)} campaign(s), oldest first: "
        + ", ".join(str(c["name"]) + (" (accepted)" if c["accepted"] else "") for c in t.campaigns)
        + "\n",
        f"rule: window of {r['window']} campaigns before each (from the latest accepted), robust spread "
        f"(MAD, outliers left out), a change when Welch's 95 % interval lies beyond {t.min_change * 100:g}%\n",
    ]
    for p in t.points:
        out.append(f"\n{p.point}\n")
        lines = [("figure", "campaign", "mean", "95% interval", "n", "verdict", "vs window", "settled")]
        for figure, entries in p.figures.items():
            what = FIGURES[figure][1]
            for e in entries:
                ci = e.spread
                span = "-" if ci.lo is None else f"{number(ci.lo, what)} .. {number(ci.hi, what)}"
                settle = p.settle.get(e.campaign)
                said = "-" if settle is None else f"{'yes' if settle[1] else 'NO'} ({settle[0]} reps)"
                verdict = e.verdict + (" (accepted)" if e.accepted and e.changed else "")
                lines.append(
                    (figure, e.campaign, number(ci.mean, what), span, str(ci.n), verdict, pct(e.size), said)
                )
        out.append(columns(lines, right=frozenset({2, 4, 6})))
    out.append("\n" + (f"changes ({len(t.changes)}):\n" if t.changes else "changes: none\n"))
    for c in t.changes:
        head = f"  {c.campaign}: {c.point} {c.figure} {c.verdict} {c.size * 100:+.1f}%"
        head += " (worse" if c.worse else " (better"
        head += ", accepted)" if c.accepted else ")"
        out.append(head + "\n")
        out.extend(f"    changed with it: {fact}\n" for fact in c.facts)
        if not c.facts:
            out.append("    no recorded fact changed with it\n")
    return "".join(out)


def format_gate(t: Trend, fail: float, worse: Judged, unclear: Judged) -> str:
    latest = t.latest
    out = []
    for point, figure, e in worse:
        out.append(
            f"gate: {latest} {point} {figure} {e.verdict} {pct(e.size)}, worse by more than {fail * 100:g}%\n"
        )
    for point, figure, e in unclear:
        out.append(
            f"gate: {latest} {point} {figure} inconclusive ({pct(e.size)} over {e.spread.n} repetition(s) "
            f"against {len(e.window)} campaign(s)): the repetitions cannot tell a {fail * 100:g}% change\n"
        )
    if not worse:
        out.append(f"gate: {latest} has no figure worse by more than {fail * 100:g}%\n")
    return "".join(out)


def gate_json(t: Trend, fail: float, worse: Judged, unclear: Judged, strict: bool) -> dict[str, object]:
    def item(point: str, figure: str, e: object) -> dict[str, object]:
        from vmio.report.trend import Entry

        assert isinstance(e, Entry)
        return {
            "point": point,
            "figure": figure,
            "verdict": e.verdict,
            "size": e.size,
            "unit": UNITS[FIGURES[figure][1]],
        }

    return {
        "campaign": t.latest,
        "fail_on_change": fail,
        "worse": [item(*w) for w in worse],
        "inconclusive": [item(*u) for u in unclear],
        "fail_on_inconclusive": strict,
        "exit": 1 if worse or (unclear and strict) else 0,
    }
