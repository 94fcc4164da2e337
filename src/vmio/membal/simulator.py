"""The multi-VM page-cache simulator: interleaved access streams, LRU caches, a policy every epoch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vmio.membal.engine import Engine, FastEngine
from vmio.membal.observation import Budget, Policy, VmObservation, equal_split
from vmio.membal.scenario import Scenario
from vmio.mrc.exact import sampled_distances

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
EngineFactory = Callable[[int, int], Engine]
_ROWS = ("accesses", "hits", "hit_pages", "refaults", "activations", "resident", "allocation")


@dataclass(frozen=True)
class Streams:
    """Every access of a scenario: which VM, which page (dense global ids; VM ``i`` owns its range)."""

    vm_of: I64
    pages: I64
    local: tuple[I64, ...]  # each VM's own stream, its page ids from 0
    position: tuple[I64, ...]  # where each VM's accesses sit in the interleaved stream
    n_pages: int


def build_streams(scenario: Scenario, rng: np.random.Generator) -> Streams:
    """Interleave the VMs by rate and draw each VM's stream; deterministic for a given ``rng`` state."""
    rates = np.array([vm.rate for vm in scenario.vms])
    vm_of = rng.choice(len(rates), size=scenario.accesses, p=rates / rates.sum()).astype(np.int64)
    children = rng.spawn(len(rates))
    pages = np.empty(scenario.accesses, dtype=np.int64)
    local, position = [], []
    offset = 0
    for i, vm in enumerate(scenario.vms):
        pos = np.flatnonzero(vm_of == i).astype(np.int64)
        stream = vm.workload.generate(pos.size, children[i])
        pages[pos] = stream + offset
        local.append(stream)
        position.append(pos)
        offset += vm.workload.footprint
    return Streams(vm_of, pages, tuple(local), tuple(position), max(offset, 1))


@dataclass
class PolicyRun:
    """Per epoch (rows) and VM (columns): what one policy did and got."""

    name: str
    accesses: I64
    hits: I64
    hit_pages: I64
    refaults: I64
    activations: I64
    resident: I64  # cache pages at the end of the epoch
    allocation: I64  # pages allowed during the epoch

    @property
    def misses(self) -> I64:
        return np.asarray(self.accesses - self.hits, dtype=np.int64)

    @property
    def hit_ratio(self) -> float:
        return float(self.hits.sum() / max(self.accesses.sum(), 1))

    def vm_hit_ratio(self) -> F64:
        return np.asarray(self.hits.sum(axis=0) / np.maximum(self.accesses.sum(axis=0), 1), dtype=np.float64)

    def epoch_hit_ratio(self) -> tuple[F64, F64]:
        """(per epoch and VM, per epoch in total)."""
        per_vm = self.hits / np.maximum(self.accesses, 1)
        total = self.hits.sum(axis=1) / np.maximum(self.accesses.sum(axis=1), 1)
        return per_vm.astype(np.float64), total.astype(np.float64)

    def efficiency(self) -> tuple[F64, F64]:
        """hitachi-membal-2014's page utilization efficiency (pages that hit / cache pages): per epoch and VM, total."""
        per_vm = self.hit_pages / np.maximum(self.resident, 1)
        total = self.hit_pages.sum(axis=1) / np.maximum(self.resident.sum(axis=1), 1)
        return per_vm.astype(np.float64), total.astype(np.float64)


def reuse_histograms(scenario: Scenario, streams: Streams, rate: float) -> list[F64]:
    """Per VM, ``[epoch, bin]`` estimated hits by sampled stack distance in grain units (last bin: beyond)."""
    units = scenario.memory // scenario.grain
    n_epochs = -(-scenario.accesses // scenario.epoch)
    out = []
    for stream, pos in zip(streams.local, streams.position, strict=True):
        mask, dist = sampled_distances(stream, rate)
        epochs = pos[mask] // scenario.epoch
        keep = dist >= 0
        bins = np.minimum((dist[keep] // scenario.grain).astype(np.int64), units)
        flat = np.bincount(epochs[keep] * (units + 1) + bins, minlength=n_epochs * (units + 1))
        out.append(flat.reshape(n_epochs, units + 1) / rate)
    return out


def simulate(
    scenario: Scenario,
    streams: Streams,
    policy: Policy,
    engine: EngineFactory = FastEngine,
    reuse: Sequence[F64] | None = None,
) -> PolicyRun:
    """Replay ``streams`` under ``policy``; every VM starts from the equal split."""
    n = len(scenario.vms)
    budget = Budget(scenario.memory, tuple(scenario.floors), scenario.grain)
    n_epochs = -(-scenario.accesses // scenario.epoch)
    if policy.sample_rate > 0 and reuse is None:
        reuse = reuse_histograms(scenario, streams, policy.sample_rate)
    cache = engine(n, streams.n_pages)
    alloc = equal_split(budget)
    for i, a in enumerate(alloc):
        cache.set_capacity(i, a)
    rows: dict[str, list[list[int]]] = {k: [] for k in _ROWS}
    for e in range(n_epochs):
        lo, hi = e * scenario.epoch, min((e + 1) * scenario.epoch, scenario.accesses)
        counts = cache.run(streams.vm_of[lo:hi], streams.pages[lo:hi])
        resident = cache.resident()
        accesses = np.bincount(streams.vm_of[lo:hi], minlength=n).tolist()
        row = (accesses, *counts, resident, alloc)
        for key, values in zip(_ROWS, row, strict=True):
            rows[key].append(list(values))
        obs = [
            VmObservation(
                allocation=alloc[i],
                resident=resident[i],
                accesses=accesses[i],
                hits=counts.hits[i],
                hit_pages=counts.hit_pages[i],
                refaults=counts.refaults[i],
                activations=counts.activations[i],
                reuse=reuse[i][e] if reuse is not None else None,
            )
            for i in range(n)
        ]
        alloc = _checked(policy, policy.decide(obs), budget)
        for i, a in enumerate(alloc):
            cache.set_capacity(i, a)
    return PolicyRun(policy.name, *(np.asarray(rows[k], dtype=np.int64) for k in _ROWS))


def _checked(policy: Policy, alloc: list[int], budget: Budget) -> list[int]:
    if sum(alloc) > budget.memory or any(a < f for a, f in zip(alloc, budget.floors, strict=True)):
        raise ValueError(
            f"policy {policy.name!r} asked for {alloc!r}: more than {budget.memory} pages or below floors "
            f"{list(budget.floors)!r}"
        )
    return [int(a) for a in alloc]
