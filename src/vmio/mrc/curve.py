"""Miss-ratio curves of traces read as streams of chunks: exact, or sampled at a fixed rate or size.

``stream_curve(chunks, Sampling(...))`` feeds every chunk to a :class:`~vmio.mrc.shards.ShardsSampler`
and keeps only a weighted histogram of the (scaled) stack distances; nothing grows with the trace length.
The histogram's bins start one page wide and double (neighbours merged) whenever the distances need more
than ``max_bins`` bins, so its memory is bounded too.

A sampled curve's miss ratio at ``c`` pages is the estimated misses (the weight 1/R of every sampled access
whose scaled distance is ``c`` or more, or that is the first of its key) divided by the accesses of the
whole trace: SHARDS_adj, which corrects for the sample holding more or fewer accesses than ``R`` x the
trace. With rate 1.0 the curve is exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vmio.mrc.shards import HLL_REGISTERS, DistinctCounter, Sampled, ShardsSampler, key_hash, threshold_of

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
MAX_BINS = 1 << 20


@dataclass(frozen=True)
class Sampling:
    """How to build a curve: every key (rate 1.0), a fixed rate, or at most ``size`` sampled keys; with
    ``seeds`` > 1, the mean of that many independent samples (each with its own hash salt, each at the
    rate or size given). The work and memory are ``seeds`` times one sample's."""

    rate: float = 1.0
    size: int | None = None
    seeds: int = 1

    def __post_init__(self) -> None:
        threshold_of(self.rate)  # raises on a rate outside (0, 1]
        if self.size is not None and self.size < 1:
            raise ValueError(f"sample size {self.size!r} must be at least one key")
        if self.seeds < 1 or (self.seeds > 1 and self.rate >= 1.0 and self.size is None):
            raise ValueError(f"seeds {self.seeds!r}: use 1, or more than 1 only with a sampling rate or size")

    @property
    def exact(self) -> bool:
        return self.rate >= 1.0 and self.size is None

    def describe(self) -> str:
        if self.size is not None:
            what = f"fixed-size sample of {self.size} keys"
        else:
            what = "exact" if self.exact else f"sampled at rate {self.rate:g}"
        return what if self.seeds == 1 else f"{what}, mean of {self.seeds} hash seeds"

    def sampler(self) -> ShardsSampler:
        return ShardsSampler(self.rate, self.size)

    def samplers(self) -> list[tuple[int, ShardsSampler]]:
        """One (salt, sampler) per seed; a sampler sees ``key ^ salt`` (a bijection of the non-negative
        keys below 2**62, so stack distances are unchanged and only which keys are sampled differs). The
        first salt is 0: one seed is the plain sampler."""
        return [(salt, self.sampler()) for salt in salts(self.seeds)]


def salts(n: int) -> list[int]:
    """``n`` fixed salts: 0, then SplitMix64 of 1, 2, ... cut to 62 bits."""
    mixed = key_hash(np.arange(1, n, dtype=np.int64)) & np.uint64((1 << 62) - 1)
    return [0, *(int(x) for x in mixed)]


def feed_all(samplers: list[tuple[int, ShardsSampler]], chunk: npt.ArrayLike) -> list[Sampled]:
    """Every sampler's sampled accesses of one chunk, weights divided by the number of samplers (their
    mean), distances and indices as each sampler gave them."""
    keys = np.ascontiguousarray(chunk, dtype=np.int64)
    k = len(samplers)
    out = []
    for salt, sampler in samplers:
        got = sampler.feed(keys ^ np.int64(salt) if salt else keys)
        out.append(got if k == 1 else Sampled(got.index, got.distance, got.weight / k))
    return out


EXACT = Sampling()


@dataclass(frozen=True)
class MissRatioCurve:
    """Miss ratio at ``sizes`` pages (ascending, from 0); between sizes, linear."""

    sizes: I64
    miss_ratio: F64
    accesses: int  # every access of the trace
    sampled: int  # accesses in the sample
    keys: int  # distinct keys held at the end
    rate: float  # sampling rate at the end
    method: str

    def at(self, pages: npt.ArrayLike) -> F64:
        """The miss ratio with caches of ``pages`` pages (beyond the last size: only first accesses miss)."""
        return np.asarray(np.interp(np.asarray(pages, dtype=np.float64), self.sizes, self.miss_ratio))


class ReuseHistogram:
    """Weighted counts of stack distances in bins of ``grain`` pages (a power of two that doubles as
    needed to stay within ``max_bins``), plus the weight of first accesses."""

    def __init__(self, max_bins: int = MAX_BINS) -> None:
        if max_bins < 2:
            raise ValueError(f"max_bins {max_bins!r} must be at least 2")
        self.max_bins = max_bins
        self.grain = 1
        self.bins = np.zeros(0, dtype=np.float64)
        self.cold = 0.0
        self.first = 0  # first accesses sampled (a count, not a weight)

    def add(self, distance: F64, weight: F64) -> None:
        reused = distance >= 0
        self.cold += float(weight[~reused].sum())
        self.first += int(distance.size - np.count_nonzero(reused))
        d, w = distance[reused], weight[reused]
        if d.size == 0:
            return
        top = int(d.max() // self.grain)
        while top >= self.max_bins:
            self._coarsen()
            top //= 2
        b = (d // self.grain).astype(np.int64)
        counts = np.asarray(np.bincount(b, weights=w, minlength=self.bins.size), dtype=np.float64)
        counts[: self.bins.size] += self.bins
        self.bins = counts

    def _coarsen(self) -> None:
        padded = np.concatenate([self.bins, np.zeros(self.bins.size % 2)])
        self.bins = padded.reshape(-1, 2).sum(axis=1)
        self.grain *= 2

    def curve(
        self,
        accesses: int,
        sampled: int,
        keys: int,
        rate: float,
        method: str,
        distinct: float | None = None,
        stretch: bool = True,
    ) -> MissRatioCurve:
        """The miss-ratio curve at every bin edge, the misses estimated over all ``accesses``; with
        ``distinct`` (the stream's distinct keys, counted apart), every size's misses are scaled by
        ``distinct`` / the sample's own estimate of it (the weight of its first accesses), and with
        ``stretch`` (default) the sizes too: the sample's distances then count its keys at the same ratio."""
        hits = np.concatenate([[0.0], np.cumsum(self.bins)])
        total = self.cold + float(self.bins.sum())
        scale = 1.0
        if distinct is not None and self.cold > 0:
            # the two estimates of the distinct keys weighted by their inverse relative variances: the
            # sample's (1 / its first accesses) and the counter's (HyperLogLog: 1.04^2 / registers)
            w_sample, w_counter = float(self.first), 1 / (1.04**2 / HLL_REGISTERS)
            scale = (w_sample + w_counter * distinct / self.cold) / (w_sample + w_counter)
        ratio = np.clip((total - hits) * scale / max(accesses, 1), 0.0, 1.0)
        ratio[0] = 1.0  # no cache: every access misses, whatever the sample says
        sizes = np.arange(hits.size, dtype=np.int64) * self.grain
        if stretch and scale != 1.0:
            # the sample's keys stand for ``scale`` x the keys 1/R says, and so do the keys between two
            # uses of one: its distances stretch by the same factor (read back on the grid of ``grain``)
            stretched = sizes * scale
            sizes = np.arange(int(np.ceil(stretched[-1] / self.grain)) + 1, dtype=np.int64) * self.grain
            ratio = np.asarray(np.interp(sizes, stretched, ratio), dtype=np.float64)
        return MissRatioCurve(sizes, ratio, accesses, sampled, keys, rate, method)


def stream_curve(
    chunks: Iterable[npt.ArrayLike],
    sampling: Sampling = EXACT,
    max_bins: int = MAX_BINS,
    distinct: bool = True,
    stretch: bool = True,
) -> MissRatioCurve:
    """The miss-ratio curve of the keys (non-negative integers, e.g. page numbers) in ``chunks``, read one
    chunk at a time: exact at rate 1.0, else SHARDS at ``sampling``'s fixed rate or size.

    A sampled curve's misses are SHARDS_adj's (over all the trace's accesses); with ``distinct`` (default)
    they are then scaled so that its cold misses equal a HyperLogLog count of the trace's distinct keys
    (:class:`~vmio.mrc.shards.DistinctCounter`, every key hashed, 64 KiB): a sample that happened to
    take more (or fewer) keys than ``R`` x the keys overstates (understates) the misses at every size
    about as much as the cold ones. The sample's and the counter's counts are weighted by their inverse
    relative variances, so a large sample relies on its own. With ``stretch`` (default) the stack distances
    are scaled by the same ratio: a sample holding 4 % more keys than ``R`` x the keys also finds 4 % more
    sampled keys between two uses of one, so ``d / R`` overstates every distance by about 4 % and moves the
    curve's cliffs (a horizontal error the misses' scaling alone leaves). Measured on the CloudPhysics
    sample at rate 0.01, one pass: MAE 0.030 (SHARDS_adj) -> 0.0104 (misses scaled) -> 0.0050 (and sizes
    stretched) with vmio's hash; over 40 salts 0.015 -> 0.0087 -> 0.0066 on average, worst 0.049 -> 0.026
    -> 0.016 (``benchmarks/membal_mrc_accuracy.py``)."""
    samplers = sampling.samplers()
    hist = ReuseHistogram(max_bins)
    counter = DistinctCounter() if distinct and not sampling.exact else None
    for chunk in chunks:
        keys = np.ascontiguousarray(chunk, dtype=np.int64)
        if counter is not None:
            counter.feed(keys)
        for out in feed_all(samplers, keys):
            hist.add(out.distance, out.weight)
    first = samplers[0][1]
    method = sampling.describe()
    if counter is not None:
        method += ", misses scaled to a HyperLogLog count of distinct keys"
        if stretch:
            method += ", distances stretched alike"
    return hist.curve(
        first.accesses,
        sum(s.sampled for _, s in samplers),
        sum(s.keys_held for _, s in samplers),
        float(np.mean([s.rate for _, s in samplers])),
        method,
        counter.estimate() if counter is not None else None,
        stretch,
    )
