"""A series: the same measurement over weeks (``vmio trend SERIES``), each figure of each point per campaign in
time order with its spread, and the campaigns where a figure changed, with the facts that changed with it.

The rule (``docs/trend.md``), built on ``vmio.stats.tell``:

- A **point** of a series is its key without the repetition: target, workload, block size, iodepth, numjobs,
  offered load as written, load processes. (An imported point has no spec: its offered load is not part of its
  identity; fio's ``rate_iops`` is one of its job options, so a changed rate is a changed fact.)
- Each campaign's **value** of a figure at a point is the mean of its done repetitions, with the 95 % interval
  of that mean (``tell.interval``) as its spread.
- The **window** of a campaign is the up to ``WINDOW`` campaigns before it that hold the point, not before the
  latest campaign accepted before it (``vmio trend --accept``), leaving out those already found changed.
- The window is made **robust**: a window campaign whose mean lies further than ``OUTLIERS`` robust spreads
  (1.4826 × the median absolute deviation of the window's means) from the window's median is left out.
- The campaign **changed** when ``tell.change(window repetitions, its repetitions, size)`` says ``higher`` or
  ``lower``: Welch's 95 % interval of the difference of means lies wholly beyond ``size`` (the minimum size of
  change, a fraction of the window's mean). ``inconclusive`` (fewer than 2 repetitions on a side, or an interval
  that reaches across the size) is said as such; ``unchanged`` when the interval lies wholly within the size.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from vmio.campaign.until_stable import point_of
from vmio.stats import tell
from vmio.store import Store
from vmio.store.rows import PointRow, build_label, point_rows
from vmio.units import format_size

WINDOW = 5
OUTLIERS = 3.0
MAD_SCALE = 1.4826  # the median absolute deviation of a normal sample times this estimates its sigma
DEFAULT_MIN_CHANGE = tell.DEFAULT_MIN_CHANGE
# figure -> (direction, what, whether higher is worse)
FIGURES: dict[str, tuple[str, str, bool]] = {
    "read_iops": ("read", "iops", False),
    "write_iops": ("write", "iops", False),
    "read_bw": ("read", "bw", False),
    "write_bw": ("write", "bw", False),
    "read_p50": ("read", "p50", True),
    "read_p99": ("read", "p99", True),
    "write_p50": ("write", "p50", True),
    "write_p99": ("write", "p99", True),
}
UNITS = {"iops": "IOPS", "bw": "B/s", "p50": "ns", "p99": "ns"}
Verdict = Literal["first", "higher", "lower", "unchanged", "inconclusive"]


@dataclass(frozen=True)
class Fact:
    """A fact of a campaign's point that differs from the campaign before it."""

    fact: str
    before: object
    after: object

    def to_json(self) -> dict[str, object]:
        return {"fact": self.fact, "before": self.before, "after": self.after}

    def __str__(self) -> str:
        return f"{self.fact}: {_said(self.before)} -> {_said(self.after)}"


@dataclass(frozen=True)
class Entry:
    """One campaign's figure at one point: its repetitions, their interval, and the judgement."""

    campaign: str
    values: tuple[float, ...]
    spread: tell.Interval
    verdict: Verdict
    size: float | None  # relative change of the mean against the window's mean
    window: tuple[str, ...]
    accepted: bool = False

    @property
    def changed(self) -> bool:
        return self.verdict in ("higher", "lower")

    def to_json(self) -> dict[str, object]:
        return {
            "campaign": self.campaign,
            "values": list(self.values),
            **{k: v for k, v in self.spread.as_dict().items() if k != "level"},
            "verdict": self.verdict,
            "size": self.size,
            "window": list(self.window),
            "accepted": self.accepted,
        }


@dataclass(frozen=True)
class Change:
    """A campaign whose figure left its window's spread by more than the size asked about."""

    campaign: str
    point: str
    figure: str
    verdict: Literal["higher", "lower"]
    size: float  # relative, signed
    worse: bool
    accepted: bool
    facts: tuple[Fact, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "campaign": self.campaign,
            "point": self.point,
            "figure": self.figure,
            "verdict": self.verdict,
            "size": self.size,
            "size_pct": round(self.size * 100, 2),
            "worse": self.worse,
            "accepted": self.accepted,
            "facts": [f.to_json() for f in self.facts],
        }


@dataclass
class PointTrend:
    point: str
    identity: dict[str, object]
    figures: dict[str, list[Entry]] = field(default_factory=dict)
    settle: dict[str, tuple[int, bool, float | None]] = field(default_factory=dict)  # campaign -> settle


@dataclass
class Trend:
    series: str
    campaigns: list[dict[str, object]]
    points: list[PointTrend]
    changes: list[Change]
    min_change: float

    @property
    def latest(self) -> str | None:
        return str(self.campaigns[-1]["name"]) if self.campaigns else None

    def to_json(self) -> dict[str, object]:
        return {
            "series": self.series,
            "rule": rule(self.min_change),
            "campaigns": self.campaigns,
            "points": [
                {
                    "point": p.point,
                    **p.identity,
                    "figures": {f: [e.to_json() for e in es] for f, es in p.figures.items()},
                    "settle": {c: _settle_json(s) for c, s in p.settle.items()},
                }
                for p in self.points
            ],
            "changes": [c.to_json() for c in self.changes],
        }


def rule(min_change: float) -> dict[str, object]:
    return {
        "window": WINDOW,
        "robust_spread": f"{MAD_SCALE} x median absolute deviation of the window's means; "
        f"campaigns beyond {OUTLIERS:g} of it left out",
        "min_change": min_change,
        "test": "Welch's 95 % interval of the difference of means wholly beyond min_change (vmio.stats.tell.change)",
    }


def _settle_json(s: tuple[int, bool, float | None]) -> dict[str, object]:
    return {"repetitions": s[0], "settled": s[1], "spread": s[2]}


def build(store: Store, series: str, min_change: float = DEFAULT_MIN_CHANGE) -> Trend:
    """The trend of ``series`` in ``store`` (a series no campaign belongs to is an error naming the known ones)."""
    from vmio.errors import StoreError

    rows = store.series_campaigns(series)
    if not rows:
        known = ", ".join(store.series_names()) or "none"
        raise StoreError(
            f"no campaign in {store.path} belongs to series {series!r}; series stored: {known} "
            "(vmio run --series NAME, vmio import --series NAME, or [campaign] series)",
            exit_code=2,
        )
    names = [str(r["name"]) for r in rows]
    accepted = {str(r["name"]) for r in rows if r["accepted"] is not None}
    specs = {str(r["name"]): _canonical(r["canonical"]) for r in rows}
    by_point: dict[str, dict[str, list[PointRow]]] = {}
    identity: dict[str, dict[str, object]] = {}
    settles: dict[str, dict[str, tuple[int, bool, float | None]]] = {}
    for name in names:
        for row in point_rows(store, name):
            key, ident = series_point(row)
            identity.setdefault(key, ident)
            if row.done:
                by_point.setdefault(key, {}).setdefault(name, []).append(row)
        settles[name] = run_settles(store, name)
    points, changes = [], []
    for key in identity:
        trend = PointTrend(key, identity[key])
        per = by_point.get(key, {})
        order = [n for n in names if n in per]
        for figure in FIGURES:
            series_values = [(n, [v for r in per[n] if (v := value(r, figure)) is not None]) for n in order]
            series_values = [(n, v) for n, v in series_values if v]
            if not series_values:
                continue
            entries = judge(series_values, accepted, min_change)
            trend.figures[figure] = entries
            for i, e in enumerate(entries):
                if e.changed:
                    facts = changed_facts(
                        per, specs, order, e.campaign, key, prior=[x.campaign for x in entries[:i]]
                    )
                    worse = (e.verdict == "higher") == FIGURES[figure][2]
                    verdict: Literal["higher", "lower"] = "higher" if e.verdict == "higher" else "lower"
                    changes.append(
                        Change(e.campaign, key, figure, verdict, e.size or 0.0, worse, e.accepted, facts)
                    )
        for name in order:
            if key in settles.get(name, {}):
                trend.settle[name] = settles[name][key]
        points.append(trend)
    campaigns = [
        {"name": str(r["name"]), "created": r["created"], "accepted": str(r["name"]) in accepted}
        for r in rows
    ]
    return Trend(series, campaigns, points, changes, min_change)


def series_point(row: PointRow) -> tuple[str, dict[str, object]]:
    """A point's identity in a series (its key without the repetition) and its fields."""
    return identity_of(
        row.target, row.target_kind, row.workload, row.bs, row.iodepth, row.numjobs, row.offered_iops,
        row.offered_pct, row.load_processes,
    )  # fmt: skip


def identity_of(
    target: str,
    kind: str,
    workload: str,
    bs: int,
    iodepth: int | None,
    numjobs: int | None,
    offered_iops: int | None,
    offered_pct: float | None,
    load: int,
) -> tuple[str, dict[str, object]]:
    offered: object
    if kind == "import":
        offered = None  # an import has no spec: see the module's docstring
    elif offered_pct is not None:
        offered = f"{offered_pct:g}%"
    else:
        offered = "max" if offered_iops is None else offered_iops
    ident: dict[str, object] = {
        "target": target,
        "workload": workload,
        "bs": bs,
        "iodepth": iodepth,
        "numjobs": numjobs,
        "offered_iops": offered,
        "load_processes": load,
    }
    parts = [target, workload, f"bs={format_size(bs)}"]
    parts += [f"qd={iodepth}"] if iodepth is not None else []
    parts += [f"jobs={numjobs}"] if numjobs is not None else []
    parts += [f"offered={offered}"] if offered is not None else []
    parts += [f"load={load}"]
    return "/".join(parts), ident


def run_settles(store: Store, campaign: str) -> dict[str, tuple[int, bool, float | None]]:
    """Repeat-until-stable's record of each point of ``campaign``, by series key."""
    stored = store.settles(campaign)
    if not stored:
        return {}
    out = {}
    for r in store.runs(campaign):
        settle = stored.get(point_of(r["point_key"]))
        if settle is not None:
            key, _ = identity_of(
                r["target"], r["target_kind"], r["workload"], r["bs"], r["iodepth"], r["numjobs"],
                r["offered_iops"], r["offered_pct"], r["load_processes"],
            )  # fmt: skip
            out[key] = settle
    return out


def value(row: PointRow, figure: str) -> float | None:
    """A point's figure; None where its direction did no I/O or fio recorded no such percentile."""
    ddir, what, _ = FIGURES[figure]
    if (row.read_ops if ddir == "read" else row.write_ops) <= 0:
        return None
    if what == "iops":
        return row.iops(ddir)
    if what == "bw":
        return row.bw(ddir)
    lat = row.read_lat_ns if ddir == "read" else row.write_lat_ns
    got = lat.get(what) if lat else None
    return float(got) if got is not None else None


def judge(values: Sequence[tuple[str, Sequence[float]]], accepted: set[str], size: float) -> list[Entry]:
    """Each campaign's entry in time order, judged against its window by the rule above."""
    out: list[Entry] = []
    start = 0
    for i, (name, vals) in enumerate(values):
        ci = tell.interval(vals)
        start_next = i if name in accepted and i > 0 else start
        window = [j for j in range(start, i) if not out[j].changed or out[j].accepted][-WINDOW:]
        window = robust(window, [statistics.fmean(values[j][1]) for j in window])
        if not window:
            out.append(Entry(name, tuple(vals), ci, "first", None, (), name in accepted))
        else:
            before = [v for j in window for v in values[j][1]]
            verdict = tell.change(before, vals, size)
            base = statistics.fmean(before)
            rel = (ci.mean - base) / abs(base) if base else None
            names = tuple(values[j][0] for j in window)
            out.append(Entry(name, tuple(vals), ci, verdict, rel, names, name in accepted))
        start = start_next
    return out


def robust(window: list[int], means: list[float]) -> list[int]:
    """The window without campaigns whose mean lies beyond ``OUTLIERS`` robust spreads of the window's median."""
    if len(window) < 3:
        return window
    mid = statistics.median(means)
    mad = MAD_SCALE * statistics.median(abs(m - mid) for m in means)
    if mad == 0:
        return window
    return [j for j, m in zip(window, means, strict=True) if abs(m - mid) <= OUTLIERS * mad]


def facts_of(
    rows: Sequence[PointRow], spec: Mapping[str, Any], workload: str, target: str
) -> dict[str, object]:
    """The facts of one campaign's point that a change may come with (from its first done repetition)."""
    if not rows:
        return {}
    r = rows[0]
    host = r.host_facts
    disk: Mapping[str, object] = r.storage or {}  # the first disk and filesystem under the target
    facts: dict[str, object] = {
        "kernel": host.get("kernel"),
        "qemu": build_label(r.qemu_version, r.qemu_machine),
        "fio": r.fio_version,
        "vmio": host.get("vmio_version"),
        "device model": disk.get("model"),
        "device firmware": disk.get("firmware"),
        "device scheduler": disk.get("scheduler"),
        "filesystem": disk.get("filesystem"),
        "accel": r.accel,
    }
    options = host.get("fio_job_options")
    if isinstance(options, dict):
        facts |= {f"fio job option {k}": v for k, v in sorted(options.items())}
    for kind, name in (("target", target), ("workload", workload)):
        for item in spec.get(f"{kind}s", []) or []:
            if isinstance(item, dict) and item.get("name") == name:
                facts |= {f"spec {kind}.{k}": _said(v) for k, v in sorted(item.items()) if k != "name"}
    return facts


def changed_facts(
    per: Mapping[str, Sequence[PointRow]],
    specs: Mapping[str, Mapping[str, Any]],
    order: Sequence[str],
    campaign: str,
    point: str,
    prior: Sequence[str],
) -> tuple[Fact, ...]:
    """The facts of ``campaign``'s point that differ from those of the campaign before it in the series."""
    if not prior:
        return ()
    before_name = prior[-1]
    b, a = per[before_name], per[campaign]
    target, workload = a[0].target, a[0].workload
    fb = facts_of(b, specs.get(before_name, {}), workload, target)
    fa = facts_of(a, specs.get(campaign, {}), workload, target)
    return tuple(
        Fact(k, fb.get(k), fa.get(k)) for k in sorted(fb.keys() | fa.keys()) if fb.get(k) != fa.get(k)
    )


Judged = list[tuple[str, str, Entry]]  # (point, figure, entry)


def gate(trend: Trend, fail_pct: float) -> tuple[Judged, Judged]:
    """The series' latest campaign judged with size ``fail_pct`` (a fraction): its figures that changed for the
    worse (unless accepted) and those the repetitions cannot tell, each as (point, figure, entry)."""
    latest = trend.latest
    worse: list[tuple[str, str, Entry]] = []
    unclear: list[tuple[str, str, Entry]] = []
    for p in trend.points:
        for figure, entries in p.figures.items():
            rejudged = _rejudge(entries, fail_pct)
            last = rejudged[-1] if rejudged else None
            if last is None or last.campaign != latest or last.accepted:
                continue
            is_worse = last.changed and ((last.verdict == "higher") == FIGURES[figure][2])
            if is_worse:
                worse.append((p.point, figure, last))
            elif last.verdict == "inconclusive":
                unclear.append((p.point, figure, last))
    return worse, unclear


def _rejudge(entries: Sequence[Entry], size: float) -> list[Entry]:
    accepted = {e.campaign for e in entries if e.accepted}
    return judge([(e.campaign, e.values) for e in entries], accepted, size)


def _canonical(text: str | None) -> dict[str, Any]:
    try:
        body = json.loads(text or "{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _said(v: object) -> object:
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True)
    return "(none)" if v is None else v
