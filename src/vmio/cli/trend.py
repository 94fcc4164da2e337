"""``vmio trend SERIES``: each figure of each point of a series per campaign in time order, its changes, and the
nightly gate (``--fail-on-change PCT``, ``--fail-on-inconclusive``); ``--accept CAMPAIGN`` marks an expected
change, after which the series' window starts there."""

from __future__ import annotations

import argparse
import json
import math

from vmio.cli.store_args import add_db, open_store
from vmio.errors import InputError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``trend`` to ``sub``."""
    p = sub.add_parser(
        "trend", help="a series of campaigns over time: each figure per campaign, and what changed"
    )
    p.add_argument(
        "series", metavar="SERIES", help="the series (vmio run/import --series, [campaign] series)"
    )
    p.add_argument("--json", action="store_true", help="print the trend as JSON")
    p.add_argument(
        "--min-change",
        metavar="PCT",
        default="5",
        help="the smallest change listed, in percent of the window's mean (default 5)",
    )
    p.add_argument(
        "--fail-on-change",
        metavar="PCT",
        default=None,
        help="exit 1 when the series' latest campaign changed by more than PCT percent for the worse "
        "(IOPS or bandwidth lower, p50/p99 higher), 0 otherwise",
    )
    p.add_argument(
        "--fail-on-inconclusive",
        action="store_true",
        help="with --fail-on-change: exit 1 also when the repetitions cannot tell (said either way)",
    )
    p.add_argument(
        "--accept",
        metavar="CAMPAIGN",
        action="append",
        default=[],
        help="accept CAMPAIGN's change as expected (a planned upgrade): the window starts there; stored; repeatable",
    )
    add_db(p)
    p.set_defaults(handler=cmd_trend)


def percent(flag: str, text: str | None) -> float | None:
    """``5`` or ``5%`` as the fraction 0.05 (0 to 1000 percent)."""
    if text is None:
        return None
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise InputError(f"{flag} {text!r} is not a percentage; give one such as 5") from None
    if not 0 <= value <= 1000 or math.isnan(value):
        raise InputError(f"{flag} {text!r} is out of range; use 0 to 1000 (percent)")
    return value / 100


def checked_series(text: str) -> str:
    from vmio.spec.series import series_name

    try:
        return series_name(text)
    except ValueError as exc:
        raise InputError(f"series {text!r}: {exc}") from None


def cmd_trend(args: argparse.Namespace) -> int:
    from vmio.report import trend, trend_text

    series = checked_series(args.series)
    size = percent("--min-change", args.min_change)
    fail = percent("--fail-on-change", args.fail_on_change)
    if args.fail_on_inconclusive and fail is None:
        raise InputError("--fail-on-inconclusive goes with --fail-on-change PCT (the gate it widens)")
    with open_store(args, write=bool(args.accept)) as store:
        for name in args.accept:
            if store.series_of(name) != series:
                store.require(name)
                raise InputError(f"--accept {name!r}: campaign {name!r} is not in series {series!r}")
            store.accept(name)
        result = trend.build(store, series, size if size is not None else trend.DEFAULT_MIN_CHANGE)
    worse, unclear = trend.gate(result, fail) if fail is not None else ([], [])
    if args.json:
        doc = result.to_json()
        if fail is not None:
            doc["gate"] = trend_text.gate_json(result, fail, worse, unclear, args.fail_on_inconclusive)
        print(json.dumps(doc, indent=1))
    else:
        print(trend_text.format_trend(result), end="")
        if fail is not None:
            print(trend_text.format_gate(result, fail, worse, unclear), end="")
    if worse or (unclear and args.fail_on_inconclusive):
        return 1
    return 0
