"""A profile built from a stored campaign, so ``dstore model --calibrate`` fits measured campaigns too.

Every done, unthrottled point of the campaign's rbd targets (or the one named) becomes a profile point per
block size: IOPS and mean latency are the medians over repetitions (mean latency weighted by operations
across directions), p99 the worse direction's merged p99.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from vmio.dstore.profile import Criteria, Point, Profile, verdict
from vmio.errors import InputError
from vmio.spec import RbdTarget
from vmio.store import Store
from vmio.store.campaigns import stored_campaign
from vmio.store.rows import PointRow, point_row


def profile_from_campaign(store: Store, campaign: str, target: str | None = None) -> Profile:
    spec = stored_campaign(store, campaign)
    # isinstance: the profile calibrates on the RBD images themselves (the only kind whose pool it reads)
    names = [t.name for t in spec.targets if isinstance(t, RbdTarget)] if target is None else [target]
    if not names:
        raise InputError(f"campaign {campaign!r} has no rbd target to calibrate on; name one with --target")
    per_bs: dict[int, list[tuple[float, float, float]]] = defaultdict(list)
    read_share: list[float] = []
    depth: set[int] = set()
    for run in store.runs(campaign):
        if run["status"] != "done" or run["target"] not in names or run["offered_iops"] is not None:
            continue
        row = point_row(store, campaign, run)
        per_bs[run["bs"]].append(_figures(row))
        read_share.append(spec.workload(run["workload"]).read_pct)
        depth.add(spec.workload(run["workload"]).iodepth)
    if not per_bs:
        raise InputError(f"campaign {campaign!r} has no done unthrottled points on {', '.join(names)}")
    criteria = Criteria()
    points = []
    for bs, runs in sorted(per_bs.items()):
        iops, mean, p99 = (statistics.median(x[i] for x in runs) for i in range(3))
        points.append(Point(bs, iops, iops * bs / 1e6, mean, p99, verdict(mean, iops, criteria)))
    setup: dict[str, object] = {
        "campaign": campaign,
        "rwmixread": statistics.median(read_share),
        "iodepth": max(depth),
    }
    return Profile(points, criteria, setup)


def _figures(row: PointRow) -> tuple[float, float, float]:
    ops = {d: row.ops(d) for d in ("read", "write")}
    lats = {d: row.lat_ns(d) for d in ("read", "write")}
    total_ops = sum(ops.values()) or 1
    mean_ns = sum(((lats[d] or {}).get("mean") or 0.0) * ops[d] for d in ops) / total_ops
    p99_ns = max((lats[d] or {}).get("p99") or 0.0 for d in ops)
    return row.read_iops + row.write_iops, mean_ns / 1e6, p99_ns / 1e6
