"""Upper bounds from exact miss-ratio curves: the best split per epoch, and the best single (static) split.

An LRU cache that holds ``c`` pages at an access can only hit when the access's stack distance is below
``c``, so summing each epoch's best split of the exact curves bounds every policy that fixes allocations
per epoch. Both bounds work on a grid of ``grain`` pages (the scenario's ``grain``).

For scenarios too long for exact stack distances, ``sampled_curves`` estimates the same curves by SHARDS
(:mod:`vmio.mrc.shards`) at a fixed rate or size; the bounds built on them are then estimates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vmio.membal.scenario import Scenario
from vmio.membal.simulator import Streams
from vmio.membal.split import optimal_split
from vmio.mrc.curve import Sampling, feed_all
from vmio.mrc.exact import epoch_hit_curves, stack_distances

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Curves = Sequence[I64] | Sequence[F64]


@dataclass(frozen=True)
class Bound:
    name: str
    hits: I64  # per epoch and VM
    allocation: I64  # pages, per epoch and VM
    accesses: int

    @property
    def hit_ratio(self) -> float:
        return float(self.hits.sum() / max(self.accesses, 1))


def exact_curves(scenario: Scenario, streams: Streams) -> list[I64]:
    """Per VM, ``[epoch, unit]`` hits with ``unit * grain`` pages, from exact stack distances."""
    units = scenario.memory // scenario.grain
    n_epochs = -(-scenario.accesses // scenario.epoch)
    return [
        epoch_hit_curves(stack_distances(stream), pos // scenario.epoch, n_epochs, units, scenario.grain)
        for stream, pos in zip(streams.local, streams.position, strict=True)
    ]


def sampled_curves(scenario: Scenario, streams: Streams, sampling: Sampling) -> list[F64]:
    """Per VM, ``[epoch, unit]`` estimated hits with ``unit * grain`` pages, from SHARDS-sampled stack
    distances: each sampled access counts 1/R where its scaled distance is below the cache size."""
    units = scenario.memory // scenario.grain
    n_epochs = -(-scenario.accesses // scenario.epoch)
    out = []
    for stream, pos in zip(streams.local, streams.position, strict=True):
        counts = np.zeros(n_epochs * (units + 2), dtype=np.float64)
        weight = np.zeros(n_epochs, dtype=np.float64)  # every sampled access's weight, per epoch
        for got in feed_all(sampling.samplers(), stream):
            epoch = pos[got.index] // scenario.epoch
            weight += np.bincount(epoch, weights=got.weight, minlength=n_epochs)
            keep = got.distance >= 0
            buckets = np.minimum((got.distance[keep] // scenario.grain).astype(np.int64) + 1, units + 1)
            flat = epoch[keep] * (units + 2) + buckets
            counts += np.bincount(flat, weights=got.weight[keep], minlength=n_epochs * (units + 2))
        hits = np.cumsum(counts.reshape(n_epochs, units + 2)[:, : units + 1], axis=1, dtype=np.float64)
        # SHARDS_adj per epoch: the estimated misses (sampled weight not yet hit) over the epoch's own
        # accesses, so a hot key in (or out of) the sample cannot make hits exceed accesses (or miss them)
        accesses = np.bincount(pos // scenario.epoch, minlength=n_epochs).astype(np.float64)
        adjusted = np.clip(accesses[:, None] - (weight[:, None] - hits), 0.0, accesses[:, None])
        adjusted[:, 0] = 0.0  # no cache, no hits
        out.append(adjusted)
    return out


def _floor_units(scenario: Scenario) -> list[int]:
    units = scenario.memory // scenario.grain
    up = [-(-f // scenario.grain) for f in scenario.floors]
    return up if sum(up) <= units else [f // scenario.grain for f in scenario.floors]


def per_epoch_optimal(scenario: Scenario, curves: Curves) -> Bound:
    """The best split of every epoch on its own (a bound, not a policy: it knows the future)."""
    units = scenario.memory // scenario.grain
    floors = _floor_units(scenario)
    n_epochs = curves[0].shape[0]
    hits = np.zeros((n_epochs, len(curves)), dtype=np.int64)
    alloc = np.zeros_like(hits)
    for e in range(n_epochs):
        _, split = optimal_split([c[e] for c in curves], units, floors)
        alloc[e] = split
        hits[e] = np.rint([c[e][u] for c, u in zip(curves, split, strict=True)])
    return Bound("optimal", hits, alloc * scenario.grain, scenario.accesses)


def static_oracle(scenario: Scenario, curves: Curves) -> Bound:
    """The best single split for the whole run, chosen knowing the whole run."""
    units = scenario.memory // scenario.grain
    _, split = optimal_split([c.sum(axis=0) for c in curves], units, _floor_units(scenario))
    hits = np.rint(np.stack([c[:, u] for c, u in zip(curves, split, strict=True)], axis=1)).astype(np.int64)
    alloc = np.tile(np.asarray(split, dtype=np.int64) * scenario.grain, (hits.shape[0], 1))
    return Bound("oracle", hits, alloc, scenario.accesses)
