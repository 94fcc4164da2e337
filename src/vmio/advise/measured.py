"""This host's VM/bare IOPS ratios from stored campaigns, per configuration of Fig. 9.

Fig. 9 promises that the chosen configuration's performance is known; on this host it is known when a stored
campaign ran that configuration beside a bare target with the same workload and block size. The newest such
campaign wins. A side (reads or writes) the campaign did not measure keeps the seed's figure, and says so.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import mean

from vmio.advise import thresholds as t
from vmio.advise.config_guideline import IOTHREAD, ONE_VM, PASSTHROUGH, SCALE_OUT
from vmio.advise.from_store import stored_campaign
from vmio.spec import QemuTarget
from vmio.store import Store
from vmio.store.rows import point_row

SEED_BY_CONFIG = {
    SCALE_OUT: t.SEED_RATIO_SCALE_OUT,
    PASSTHROUGH: t.SEED_RATIO_PASSTHROUGH,
    IOTHREAD: t.SEED_RATIO_IOTHREAD,
    ONE_VM: t.SEED_RATIO_ONE_VM,
}


def config_of(target: QemuTarget) -> str | None:
    """The Fig. 9 configuration a VM target runs, or None when it is none of them."""
    if target.bus in ("vfio", "block"):
        return PASSTHROUGH
    if target.vms > 1 and target.jobs_per_vm == 1:
        return SCALE_OUT
    if target.vms == 1 and target.jobs_per_vm > 1:
        return IOTHREAD if target.iothreads and target.bus == "virtio-blk" else ONE_VM
    return None


def measured_ratios(store: Store) -> dict[str, t.Ratio]:
    """Configuration name -> this host's ratio, from the newest campaign that measured it beside bare."""
    found: dict[str, t.Ratio] = {}
    for name in reversed(store.campaigns()):
        for config, ratio in _campaign_ratios(store, name).items():
            found.setdefault(config, ratio)
    return found


def _campaign_ratios(store: Store, name: str) -> dict[str, t.Ratio]:
    camp = stored_campaign(store, name)
    bare: dict[tuple[str, int], list[dict[str, float]]] = defaultdict(list)
    vms: dict[tuple[str, str, int], list[dict[str, float]]] = defaultdict(list)
    accels: dict[str, set[str]] = defaultdict(set)
    for run in store.runs(name):
        if run["status"] != "done" or run["offered_iops"] is not None or run["load_processes"]:
            continue
        row = point_row(store, name, run)
        figures = {"read": row.read_iops, "write": row.write_iops}
        if run["target_kind"] == "host":
            bare[(run["workload"], run["bs"])].append(figures)
            continue
        target = camp.target(run["target"])
        config = config_of(target) if isinstance(target, QemuTarget) else None
        if config is not None:
            vms[(config, run["workload"], run["bs"])].append(figures)
            accels[config].add(run["accel"] or "unknown accel")
    out: dict[str, t.Ratio] = {}
    for config in {c for c, _, _ in vms}:
        sides: dict[str, list[float]] = {"read": [], "write": []}
        points = 0
        for (c, workload, bs), pts in vms.items():
            base = bare.get((workload, bs))
            if c != config or not base:
                continue
            for side in sides:
                b, v = mean(f[side] for f in base), mean(f[side] for f in pts)
                if b > 0:
                    sides[side].append(v / b)
            points += len(pts)
        if not sides["read"] and not sides["write"]:
            continue
        seed = SEED_BY_CONFIG[config]
        kept = [side for side in sides if not sides[side]]
        basis = f"{config} vs the bare target, same workloads and block sizes, on this host"
        if kept:
            basis += f"; {' and '.join(kept)} not measured there: seed 000's figure kept ({seed.basis})"
        out[config] = t.Ratio(
            round(mean(sides["read"]), 2) if sides["read"] else seed.read,
            round(mean(sides["write"]), 2) if sides["write"] else seed.write,
            f"measured: {name}, {points} points, {', '.join(sorted(accels[config]))}",
            basis,
        )
    return out
