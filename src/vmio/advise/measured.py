"""This host's VM/bare IOPS ratios from stored campaigns, per configuration of Fig. 9 and per shape.

Fig. 9 promises that the chosen configuration's performance is known; on this host it is known when a stored
campaign ran that configuration beside a bare target with the same workload and block size. Ratios are
never averaged over targets of different shapes: a shape is the bus, I/O threads, queues, VMs x fio per VM
and the number of devices the VM disks are on, and each measured ratio names its shape and N (fio per VM).
The newest campaign that measured a shape wins. A side (reads or writes) the campaign did not measure keeps
the seed's figure, and says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import mean

from vmio.advise.config_guideline import IOTHREAD, ONE_VM, PASSTHROUGH, SCALE_OUT
from vmio.advise.disk_config import Config
from vmio.advise.from_store import stored_campaign
from vmio.published import (
    SEED_RATIO_IOTHREAD,
    SEED_RATIO_ONE_VM,
    SEED_RATIO_PASSTHROUGH,
    SEED_RATIO_SCALE_OUT,
    Ratio,
)
from vmio.spec import QemuTarget
from vmio.store import Store
from vmio.store.rows import point_row
from vmio.targets.traits import vm_config

SEED_BY_CONFIG = {
    SCALE_OUT: SEED_RATIO_SCALE_OUT,
    PASSTHROUGH: SEED_RATIO_PASSTHROUGH,
    IOTHREAD: SEED_RATIO_IOTHREAD,
    ONE_VM: SEED_RATIO_ONE_VM,
}


@dataclass(frozen=True)
class Shape:
    """What makes two VM targets comparable: a ratio measured on one shape says nothing of another."""

    bus: str
    iothreads: int
    queues: int
    vms: int
    jobs_per_vm: int
    devices: int

    def label(self) -> str:
        return (
            f"{self.bus}, {self.iothreads} iothread(s), {self.queues} queue(s), {self.vms} VM(s) x "
            f"{self.jobs_per_vm} fio, {self.devices} backing path(s)"
        )


@dataclass(frozen=True)
class MeasuredRatio:
    config: str
    shape: Shape
    ratio: Ratio


def shape_of(target: QemuTarget) -> Shape:
    return Shape(
        target.bus, target.iothreads, target.queues, target.vms, target.jobs_per_vm, len(set(target.backing))
    )


def config_of(target: QemuTarget) -> str | None:
    """The Fig. 9 configuration a VM target runs, or None when it is none of them."""
    if target.bus in ("vfio", "block"):
        return PASSTHROUGH
    if target.vms > 1 and target.jobs_per_vm == 1:
        return SCALE_OUT
    if target.vms == 1 and target.jobs_per_vm > 1:
        return IOTHREAD if target.iothreads and target.bus == "virtio-blk" else ONE_VM
    return None


def measured_ratios(store: Store) -> list[MeasuredRatio]:
    """Every (configuration, shape) this store measured beside bare, newest campaign first; one per shape."""
    found: dict[tuple[str, Shape], MeasuredRatio] = {}
    for name in reversed(store.campaigns()):
        for m in _campaign_ratios(store, name):
            found.setdefault((m.config, m.shape), m)
    return list(found.values())


def _campaign_ratios(store: Store, name: str) -> list[MeasuredRatio]:
    camp = stored_campaign(store, name)
    bare: dict[tuple[str, int], list[dict[str, float]]] = defaultdict(list)
    vms: dict[tuple[str, Shape, str, int], list[dict[str, float]]] = defaultdict(list)
    accels: dict[tuple[str, Shape], set[str]] = defaultdict(set)
    for run in store.runs(name):
        if run["status"] != "done" or run["offered_iops"] is not None or run["load_processes"]:
            continue
        row = point_row(store, name, run)
        figures = {"read": row.read_iops, "write": row.write_iops}
        if run["target_kind"] == "host":
            bare[(run["workload"], run["bs"])].append(figures)
            continue
        target = camp.target(run["target"])
        vm = vm_config(target)
        config = config_of(vm) if vm is not None else None
        if config is not None and vm is not None:
            shape = shape_of(vm)
            vms[(config, shape, run["workload"], run["bs"])].append(figures)
            accels[(config, shape)].add(run["accel"] or "unknown accel")
    out: list[MeasuredRatio] = []
    for config, shape in {(c, s) for c, s, _, _ in vms}:
        sides: dict[str, list[float]] = {"read": [], "write": []}
        points = 0
        for (c, s, workload, bs), pts in vms.items():
            base = bare.get((workload, bs))
            if (c, s) != (config, shape) or not base:
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
        basis = f"{config} at N = {shape.jobs_per_vm} ({shape.label()}) vs the bare target, same workloads "
        basis += "and block sizes, on this host"
        if kept:
            basis += (
                f"; {' and '.join(kept)} not measured there: hitachi-nvme-2016's figure kept ({seed.basis})"
            )
        ratio = Ratio(
            round(mean(sides["read"]), 2) if sides["read"] else seed.read,
            round(mean(sides["write"]), 2) if sides["write"] else seed.write,
            f"measured: {name}, {points} points, {', '.join(sorted(accels[(config, shape)]))}",
            basis,
        )
        out.append(MeasuredRatio(config, shape, ratio))
    return sorted(out, key=lambda m: (m.config, m.shape.label()))


def config_shape(config: Config) -> tuple[str, int, int | None, int]:
    """(bus, iothreads, queues or None for any single-queue setting, devices) of an advised configuration."""
    bus = config.passthrough if config.passthrough in ("block", "vfio") else config.bus
    iothreads = 0 if config.passthrough == "vfio" else config.iothreads
    return (
        str(bus),
        iothreads,
        config.iothreads if config.vq_mapping else None,
        max(1, len(config.spread_over)),
    )


def pick(ratios: list[MeasuredRatio], config: Config) -> Ratio | None:
    """The newest measured ratio of ``config`` on a target of its shape (any N), or None."""
    bus, iothreads, queues, devices = config_shape(config)
    for m in ratios:
        s = m.shape
        if m.config != config.name or (s.bus, s.iothreads, s.devices) != (bus, iothreads, devices):
            continue
        if (queues is None and s.queues != 1) or (queues is not None and s.queues != queues):
            continue
        return m.ratio
    return None
