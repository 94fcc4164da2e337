"""``vmio report`` (HTML, PNGs, summary table) and ``vmio compare`` (baseline ratios, before/after)."""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import sys
from typing import TYPE_CHECKING

from vmio.cli import argtypes
from vmio.cli.campaign import add_wide
from vmio.cli.store_args import add_db, open_store
from vmio.errors import InputError, VmioError

# the store and the report's modules are imported when a command runs, not for its --help
if TYPE_CHECKING:
    from vmio.report import seed000
    from vmio.report import summary_table as saturation
    from vmio.store import Store

# on a narrow terminal the columns of compare leave in this order (never a cut number; the interval's head
# names its level, as compare_text writes it)
BASELINE_DROP = ("p50 ratio", "load", "p99 ratio")
BEFORE_AFTER_DROP = ("{level} interval", "before", "after")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report`` and ``compare`` to ``sub``."""
    p = sub.add_parser("report", help="an HTML report with plots, and the summary table")
    p.add_argument(
        "campaigns",
        nargs="*",
        metavar="CAMPAIGN",
        help="the campaign; several: side by side on one page, the first as the reference",
    )
    p.add_argument(
        "--series",
        metavar="SERIES",
        help="instead of campaigns: each figure over series SERIES, one line per point, changes marked (with -o)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=argtypes.out_file_anywhere,
        help="the HTML file to write (without it: the summary table only)",
    )
    p.add_argument("--png-dir", type=argtypes.out_dir, help="also write every plot as PNG here")
    p.add_argument("--baseline", help="the baseline target (default: the first host target)")
    p.add_argument("--json", action="store_true", help="print the summary table as JSON")
    add_db(p)
    p.set_defaults(handler=cmd_report)

    p = sub.add_parser("compare", help="targets against a baseline, or campaign A against campaign B")
    p.add_argument("campaigns", nargs="+", metavar="CAMPAIGN", help="one campaign with --baseline, or two")
    p.add_argument("--baseline", help="the baseline target (with one campaign)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--fail-on-regression",
        metavar="PCT",
        default=None,
        help="with two campaigns: exit 1 when a paired figure worsens by more than PCT percent "
        "(IOPS or bandwidth lower, p50/p99 higher): with >= 2 repetitions a side when the whole 95 %% "
        "interval of the difference lies beyond PCT; an interval that reaches past it is 'inconclusive'",
    )
    p.add_argument(
        "--fail-on-inconclusive",
        action="store_true",
        help="with --fail-on-regression: exit 1 also when the repetitions cannot tell whether a figure "
        "worsened by more than PCT (its 95 %% interval reaches past PCT without lying wholly beyond it)",
    )
    p.add_argument(
        "--min-change",
        metavar="PCT",
        default=None,
        help="with two campaigns: the size of change each verdict is about, in percent of the before mean "
        "(default 5; with --fail-on-regression its PCT): 'higher'/'lower' when the whole 95 %% interval of "
        "the difference lies beyond it, 'no change' when within it, else 'inconclusive'",
    )
    add_wide(p)
    add_db(p)
    p.set_defaults(handler=cmd_compare)


def cmd_report(args: argparse.Namespace) -> int:
    if args.series is not None or not args.campaigns:
        return report_series(args)
    if args.png_dir is not None and args.output is None:
        raise InputError("--png-dir needs -o/--output: the PNGs are the HTML report's plots")
    from vmio.report import data, page, seed000, side_by_side  # page: matplotlib (0.3 s), only for `report`
    from vmio.report import summary_table as saturation

    names: list[str] = list(dict.fromkeys(args.campaigns))
    with open_store(args) as store:
        datas = [data.load(store, name) for name in names]
        limits = diagnosed(store, names) if args.output is not None else {}
    loaded = datas[0] if len(datas) == 1 else side_by_side.merge(datas)
    if args.output is None and len(datas) > 1:
        raise InputError(
            f"several campaigns ({', '.join(names)}) go side by side on a page: give -o PAGE.html "
            "(the text comparison of two is `vmio compare A B`)"
        )
    if args.output is None:
        base = args.baseline or page.default_baseline(loaded)
        if base is not None and base not in loaded.target_names():
            raise InputError(
                f"--baseline {base!r} is not a target of campaign {loaded.name!r}; "
                f"targets: {', '.join(loaded.target_names())}"
            )
        rows = saturation.summarize(loaded, base) if base else []
        _print_summary(
            rows, loaded.name, base, args.json, seed000.rows(loaded, seed000.bare_target(loaded, base))
        )
        return 0
    report = page.build_many(datas, args.baseline, drawn=args.png_dir is None, limits=limits)  # PNGs: figures
    # at exit Python's collector walks every object once more, the figures' many thousands of artists (0.2-0.5 s
    # of a report): frozen (atexit runs first), they are left to the process' end
    atexit.register(gc.freeze)
    try:
        written = page.write(report, args.output, args.png_dir)
    except OSError as exc:
        where = exc.filename or args.output
        raise InputError(f"cannot write the report to {str(where)!r}: {exc.strerror or exc}") from None
    _print_summary(report.summary, loaded.name, report.baseline, args.json, report.seed)
    if not args.json:
        print(
            f"wrote {written[0]} ({len(report.plots)} plots"
            + (f", PNGs in {args.png_dir})" if args.png_dir else ")")
        )
    return 0


def report_series(args: argparse.Namespace) -> int:
    """``vmio report --series SERIES -o PAGE.html``."""
    from vmio.cli.trend import checked_series

    if args.series is None:
        raise InputError("vmio report needs a CAMPAIGN, or --series SERIES")
    if args.campaigns or args.output is None or args.png_dir is not None or args.baseline is not None:
        raise InputError(
            "vmio report --series SERIES takes -o PAGE.html and no campaign, --png-dir or --baseline"
        )
    from vmio.report import page, trend, trend_page

    with open_store(args) as store:
        result = trend.build(store, checked_series(args.series))
    try:
        written = page.atomic_write(args.output, trend_page.render(result, page.CSS).encode())
    except OSError as exc:
        raise InputError(f"cannot write the report to {str(args.output)!r}: {exc.strerror or exc}") from None
    figures = sum(1 for f in trend.FIGURES if any(f in p.figures for p in result.points))
    print(f"wrote {written} (series {result.series!r}: {len(result.campaigns)} campaigns, {figures} figures, "
          f"{len(result.changes)} changes)")  # fmt: skip
    return 0


def diagnosed(store: Store, names: list[str]) -> dict[tuple[str, str], str]:
    """What ``vmio diagnose`` names as the limit of each campaign's points at the highest load, for the
    report's ``#answer`` (the report may not import the advisor: the CLI hands the verdicts over). A
    campaign vmio cannot diagnose (an import, a spec it no longer reads) gives none."""
    from vmio.advise import from_store
    from vmio.advise.diagnose import diagnose

    out: dict[tuple[str, str], str] = {}
    for name in names:
        try:
            camp = from_store.stored_campaign(store, name)
            for run in from_store.points_to_diagnose(store, name, None):
                verdict = diagnose(from_store.evidence_for(store, camp, run))
                text = verdict.limit + (" (at its limit)" if verdict.at_limit else "")
                if verdict.accel == "tcg":
                    text += " · TCG"
                out[(name, run["point_key"])] = text
        except VmioError:
            continue
    return out


def _print_summary(
    rows: list[saturation.SummaryRow],
    campaign: str,
    baseline: str | None,
    as_json: bool,
    seed: list[seed000.SeedRow],
) -> None:
    """The summary table, then hitachi-nvme-2016's configurations beside the campaign's when it has them."""
    from vmio.report import seed000
    from vmio.report import summary_table as saturation

    if as_json:
        doc = {
            "campaign": campaign,
            "baseline": baseline,
            "rows": [r.as_dict() for r in rows],
            "seed000": [r.as_dict() for r in seed],
        }
        print(json.dumps(doc, indent=1))
    else:
        print(saturation.format_text(rows, campaign, baseline or "-"), end="")
        if seed:
            print("\n" + seed000.format_text(seed), end="")


def cmd_compare(args: argparse.Namespace) -> int:
    from vmio.cli import terminal
    from vmio.report import compare, compare_text, data
    from vmio.stats import tell
    from vmio.stats.spread import LEVEL

    names: list[str] = args.campaigns
    if len(names) > 2:
        raise InputError(f"compare takes one campaign (with --baseline) or two, not {len(names)}: {names!r}")
    if len(names) == 1 and not args.baseline:
        raise InputError(
            f"compare {names[0]!r} needs --baseline TARGET, or a second campaign to compare with"
        )
    if len(names) == 2 and args.baseline:
        raise InputError(
            "--baseline compares targets inside one campaign; give one campaign with it, not two"
        )
    gate = _percent("--fail-on-regression", args.fail_on_regression)
    size = _percent("--min-change", args.min_change)
    if size is not None and len(names) != 2:
        raise InputError("--min-change judges campaign A against campaign B; give two campaigns")
    if size is not None and gate is not None and size != gate:
        raise InputError(
            f"--min-change {size:g} and --fail-on-regression {gate:g} ask about two sizes of change; the "
            "table's verdicts are the gate's, so give one of them"
        )
    if gate is not None and len(names) != 2:
        raise InputError("--fail-on-regression compares campaign A with campaign B; give two campaigns")
    if args.fail_on_inconclusive and gate is None:
        raise InputError(
            "--fail-on-inconclusive goes with --fail-on-regression PCT (the size of change to judge)"
        )
    with open_store(args) as store:
        loaded = [data.load_points(store, n) for n in names]  # the stored summaries: no detail table
    if len(loaded) == 1:
        rows = compare.against_baseline(loaded[0], args.baseline)
        if not rows:
            others = [t for t in loaded[0].target_names() if t != args.baseline]
            raise InputError(
                f"campaign {names[0]!r}: no target shares a done point with the baseline {args.baseline!r} "
                + (f"(its other targets: {', '.join(others)})" if others else "(it has no other target)")
                + "; compare a second campaign instead: vmio compare "
                + f"{names[0]} OTHER_CAMPAIGN"
            )
        if args.json:
            print(
                json.dumps(
                    {"campaign": names[0], "baseline": args.baseline, "rows": [r.as_dict() for r in rows]},
                    indent=1,
                )
            )
        else:
            console = terminal.console_for(sys.stdout)
            if console is not None:
                title, lines, tail = compare_text.baseline_parts(rows, names[0], args.baseline)
                layer_heads = [f"{m} ratio" for m in compare_text.baseline_layers(rows)]  # these go first
                terminal.print_table(
                    console,
                    lines,
                    title=title,
                    tail=tail,
                    right=frozenset(range(6, len(lines[0]) if lines else 0)),
                    drop=terminal.by_name(lines[0], [*layer_heads, *BASELINE_DROP]) if lines else (),
                    wide=args.wide,
                    fold=frozenset({0, 5}),  # the workload's and the target's names
                )
            else:
                print(compare_text.format_baseline(rows, names[0], args.baseline), end="")
        return 0
    judged = gate if gate is not None else size
    result = compare.before_after(
        loaded[0], loaded[1], tell.DEFAULT_MIN_CHANGE if judged is None else judged / 100
    )
    if result.pairs == 0:
        raise InputError(
            f"campaigns {names[0]!r} and {names[1]!r} have no point in common (paired by target, workload, "
            "block size and offered load); nothing to compare"
        )
    for warning in result.warnings:
        print(f"vmio: warning: {warning}", file=sys.stderr)
    flagged = compare.regressions(result, gate) if gate is not None else []
    failing = [r for r in flagged if r.verdict == "regression"]
    unsure = [r for r in flagged if r.verdict == "inconclusive"]
    state = f"{len(failing)} regression(s)" if failing else "inconclusive" if unsure else "no regression"
    if args.json:
        doc = result.as_dict()
        if gate is not None:
            doc["fail_on_regression"] = {
                "pct": gate,
                "verdict": state if not failing else "regression",
                "regressions": [r.as_dict() for r in failing],
                "inconclusive": [r.as_dict() for r in unsure],
            }
        print(json.dumps(doc, indent=1))
    else:
        console = terminal.console_for(sys.stdout)
        if console is not None:
            title, lines, tail = compare_text.before_after_parts(result)
            terminal.print_table(
                console,
                lines,
                title=title,
                tail=tail,
                empty="no common points\n",
                drop=terminal.by_name(lines[0], [d.format(level=f"{LEVEL:.0%}") for d in BEFORE_AFTER_DROP])
                if lines
                else (),
                wide=args.wide,
            )
        else:
            print(compare_text.format_before_after(result), end="")
        if gate is not None:
            print(f"--fail-on-regression {gate:g} %: {state}")
            for r in failing:
                print(f"  regression: {r.text()}")
            for r in unsure:
                print(f"  inconclusive: {r.text()}")
    return 1 if failing or (unsure and args.fail_on_inconclusive) else 0


def _percent(flag: str, text: str | None) -> float | None:
    """``--fail-on-regression PCT`` or ``--min-change PCT``: a percentage from 0 to 1000 (``5`` or ``5%``)."""
    if text is None:
        return None
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise InputError(f"{flag} {text!r} is not a percentage; give one such as 5") from None
    if not 0 <= value <= 1000 or value != value:
        raise InputError(f"{flag} {text!r} is out of range; use 0 to 1000 (percent)")
    return value
