"""Terminal text of the comparisons: aligned columns, one row per point, direction and metric."""

from __future__ import annotations

from collections.abc import Sequence

from vmio.report.compare import LAYER_METRICS, METRICS, BeforeAfter, Change, RatioRow, point_label
from vmio.report.data import offered_label, tcg_note
from vmio.stats.spread import LEVEL, Spread
from vmio.units import format_size


def columns(lines: Sequence[Sequence[str]], right: frozenset[int] = frozenset()) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "".join(
        "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        + "\n"
        for line in lines
    )


def ratio_cell(s: Spread | None) -> str:
    if s is None:
        return "-"
    if s.n < 2:
        return f"{s.median:.2f}"
    return f"{s.median:.2f} [{s.lo:.2f}-{s.hi:.2f}]"


Lines = list[tuple[str, ...]]


def format_baseline(rows: list[RatioRow], campaign: str, baseline: str) -> str:
    title, lines, tail = baseline_parts(rows, campaign, baseline)
    return title + (columns(lines) if lines else "") + tail


def baseline_parts(rows: list[RatioRow], campaign: str, baseline: str) -> tuple[str, Lines, str]:
    """The title, the table's lines (head first; none when empty) and what follows it."""
    title = (
        f"campaign {campaign!r}: each target / baseline {baseline!r}; median over repetitions "
        "[range from the extremes]; a latency ratio above 1 is slower\n"
    )
    if not rows:
        return title, [], "no points to compare (the baseline and the other targets share no done point)\n"
    shown = [m for m, _, _ in METRICS] + baseline_layers(rows)
    head = ("workload", "bs", "offered", "load", "dir", "target", *(f"{m} ratio" for m in shown))
    lines: Lines = [head]
    for r in rows:
        target, workload, bs, offered, load = r.key
        cells = [workload, format_size(bs), offered_label(offered), str(load), r.ddir, r.label or target]
        lines.append((*cells, *(ratio_cell(r.ratios.get(m)) for m in shown)))
    return title, lines, tcg_note(r.label for r in rows)


def baseline_layers(rows: Sequence[RatioRow]) -> list[str]:
    """The layer means (docs/layers.md) some row of a baseline comparison has: its table's extra columns."""
    return [m for m, _, _ in LAYER_METRICS if any(m in r.ratios for r in rows)]


def _value(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric == "bandwidth":
        return f"{value / (1 << 20):.1f}"  # MiB/s
    return f"{value:.1f}" if metric == "IOPS" else f"{value / 1e3:.1f}"


def _signed(metric: str, value: float) -> str:
    text = _value(metric, abs(value))
    return f"-{text}" if value < 0 and text.strip("0.") else f"+{text}"


def change_cells(c: Change) -> tuple[str, ...]:
    d, m = c.diff, c.metric
    unit = {"IOPS": "IOPS", "bandwidth": "MiB/s"}.get(m, f"{m} us")
    interval = "-" if d.lo is None or d.hi is None else f"[{_signed(m, d.lo)}, {_signed(m, d.hi)}]"
    rel = f" ({d.rel:+.1%})" if d.rel is not None else ""
    return (
        point_label(c.key), c.ddir, unit, f"{_value(m, d.before)} (n={d.n_before})",
        f"{_value(m, d.after)} (n={d.n_after})", _signed(m, d.diff) + rel, interval, c.verdict,
    )  # fmt: skip


def format_before_after(result: BeforeAfter) -> str:
    title, lines, tail = before_after_parts(result)
    return title + (columns(lines) if lines else "no common points\n") + tail


def before_after_parts(result: BeforeAfter) -> tuple[str, Lines, str]:
    """The title, the table's lines (head first; none without common points) and the points in one only."""
    title = (
        f"{result.before!r} -> {result.after!r}: difference of means (after - before) per point, "
        f"{LEVEL:.0%} interval (Welch t) over repetitions\n{result.rule}\n"
    )
    title += "".join(
        f"build differs: target {c.target!r} ran on {c.before or 'no QEMU'} in {result.before!r} and on "
        f"{c.after or 'no QEMU'} in {result.after!r}; its differences include the build's\n"
        for c in result.builds
    )
    head = ("point", "dir", "metric", "before", "after", "difference", f"{LEVEL:.0%} interval", "verdict")
    lines: Lines = [head, *(change_cells(c) for c in result.changes)] if result.changes else []
    tail = "".join(f"only in {result.before!r}: {point_label(k)}\n" for k in result.only_before)
    tail += "".join(f"only in {result.after!r}: {point_label(k)}\n" for k in result.only_after)
    return title, lines, tail
