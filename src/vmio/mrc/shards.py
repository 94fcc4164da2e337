"""Sampled LRU stack distances (SHARDS, Waldspurger et al., FAST '15) over a stream of chunks, compiled.

A key is in the sample when ``hash(key) mod P < T`` (``P = 2**24``), so a key is either always sampled or
never, and the sample's stack distances, scaled by ``1/R`` (``R = T/P``), estimate the whole trace's.

- **fixed rate**: ``T`` stays ``R * P``; the state grows with the sampled keys (about ``R`` x the keys).
- **fixed size**: at most ``S`` sampled keys are kept. When a new key would make ``S + 1``, ``T`` drops to
  the largest hash value held and every key at or above it leaves the sample (fixed-size SHARDS); ``R``
  falls with ``T``. Each sampled access counts ``1/R`` of the rate when it was seen (the paper rescales
  the histogram when ``R`` falls, which is the same once normalized).

Rate 1.0 (``T = P``) samples every key: exact Mattson stack distances over any 64-bit keys, in memory
bounded by the distinct keys, not the trace length.

The hash is fixed (the SplitMix64 finalizer), so a given trace always gives the same sample; Python's
``hash()`` of a string is salted per process and is never used. The plain-Python twin of the kernel is
:func:`vmio.membal.reference.shards_distances`; tests hold one to the other.

The kernel keeps one mark per sampled key in a bitset over time slots with a Fenwick tree over its 64-slot
words (as :mod:`vmio.mrc.stackdist` does), and the keys in an open-addressing hash table; under a fixed
size a max-heap of the keys' hash values finds the ones to drop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vmio.mrc.compiled import I64, LOOKAHEAD, jit, prefetch
from vmio.mrc.stackdist import _add, _popcount, _prefix, _rebuild

F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]

MODULUS = 1 << 24  # P: the hash values a threshold compares against
EMPTY = -1  # a free hash-table cell (keys are non-negative)
KEY, AT = 0, 1  # hash-table columns: the key, its slot (one 16-byte row: one cache line per probe)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW = np.uint64(MODULUS - 1)
_ONE = np.uint64(1)
# meta: live keys (= marks), next free slot, threshold T, keys in the heap, size limit (0: none)
LIVE, SLOT, THRESHOLD, HEAP, LIMIT = range(5)


def key_hash(keys: I64) -> U64:
    """SplitMix64's finalizer of ``key + 0x9E3779B97F4A7C15``, for every key (uint64 arithmetic wraps)."""
    z = keys.astype(np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return np.asarray(z ^ (z >> np.uint64(31)), dtype=np.uint64)


def threshold_of(rate: float) -> int:
    """``T`` for a sampling rate in (0, 1]: at least 1, at most ``P``."""
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"sampling rate {rate!r} is not in (0, 1]")
    return max(1, min(MODULUS, round(rate * MODULUS)))


@jit
def _mix(key: int) -> Any:
    z = np.uint64(key) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@jit
def _home(key: int, cells: int) -> Any:
    return np.int64((_mix(key) >> np.uint64(32)) & np.uint64(cells - 1))


@jit
def _find(table: Any, key: int, home: Any) -> Any:
    """The cell holding ``key`` (whose home cell is ``home``), or the free cell where it would go."""
    mask = table.shape[0] - 1
    i = home
    while table[i, KEY] != EMPTY and table[i, KEY] != key:
        i = (i + 1) & mask
    return i


@jit
def _delete(table: Any, i: int) -> None:
    """Empty cell ``i``, shifting later keys of its probe run back so every key stays reachable."""
    mask = table.shape[0] - 1
    j = i
    while True:
        j = (j + 1) & mask
        if table[j, KEY] == EMPTY:
            break
        k = _home(table[j, KEY], table.shape[0])
        if (i <= j and i < k <= j) or (i > j and (k > i or k <= j)):
            continue  # its home lies after the hole: it stays
        table[i, KEY] = table[j, KEY]
        table[i, AT] = table[j, AT]
        i = j
    table[i, KEY] = EMPTY


@jit
def _heap_push(prio: I64, hkey: I64, n: int, p: Any, key: int) -> None:
    i = n
    while i > 0:
        up = (i - 1) >> 1
        if prio[up] >= p:
            break
        prio[i] = prio[up]
        hkey[i] = hkey[up]
        i = up
    prio[i] = p
    hkey[i] = key


@jit
def _heap_pop(prio: I64, hkey: I64, n: int) -> None:
    """Remove the top of the max-heap of ``n`` entries."""
    n -= 1
    p, key = prio[n], hkey[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and prio[c + 1] > prio[c]:
            c += 1
        if prio[c] <= p:
            break
        prio[i] = prio[c]
        hkey[i] = hkey[c]
        i = c
    prio[i] = p
    hkey[i] = key


@jit
def _unmark(words: Any, tree: Any, slot: int) -> None:
    words[slot >> 6] &= ~(_ONE << np.uint64(slot & 63))
    _add(tree, (slot >> 6) + 1, -1)


@jit
def _compact(table: Any, words: Any, tree: Any) -> int:
    """Renumber the held keys' slots to 0..L-1 in their order; returns L."""
    owner = np.full(words.shape[0] * 64, -1, dtype=np.int64)
    for c in range(table.shape[0]):
        if table[c, KEY] != EMPTY:
            owner[table[c, AT]] = c
    j = 0
    for s in range(owner.shape[0]):
        c = owner[s]
        if c >= 0:
            table[c, AT] = j
            j += 1
    _rebuild(words, tree, j)
    return j


@jit
def _shrink(state: Any, meta: I64) -> None:
    """Fixed size: lower ``T`` to the largest held hash value and drop every key at or above it."""
    table, words, tree, prio, hkey = state
    meta[THRESHOLD] = prio[0]
    while meta[HEAP] > 0 and prio[0] >= meta[THRESHOLD]:
        c = _find(table, hkey[0], _home(hkey[0], table.shape[0]))
        _unmark(words, tree, table[c, AT])
        _delete(table, c)
        _heap_pop(prio, hkey, meta[HEAP])
        meta[HEAP] -= 1
        meta[LIVE] -= 1


@jit
def _count_sampled(chunk: I64, threshold: int) -> int:
    n = 0
    for i in range(chunk.shape[0]):
        if np.int64(_mix(chunk[i]) & _LOW) < threshold:
            n += 1
    return n


@jit
def _run(chunk: I64, state: Any, meta: I64, index: I64, dist: F64, weight: F64) -> int:
    """Feed one chunk; writes each sampled access's index, distance scaled by 1/R (-1: first access of the
    key in the sample) and weight 1/R; returns how many were sampled."""
    table, words, tree, prio, hkey = state
    n_slots = words.shape[0] * 64
    cells = np.uint64(table.shape[0] - 1)
    ahead = np.zeros(LOOKAHEAD, dtype=np.uint64)  # hashes of the next keys, each computed once
    n = chunk.shape[0]
    for i in range(min(LOOKAHEAD, n)):
        ahead[i] = _mix(chunk[i])
    out = 0
    for i in range(n):
        h = ahead[i % LOOKAHEAD]
        if i + LOOKAHEAD < n:  # fetch the table row of a key sampled a few accesses ahead
            g = _mix(chunk[i + LOOKAHEAD])
            ahead[i % LOOKAHEAD] = g
            if np.int64(g & _LOW) < meta[THRESHOLD]:
                prefetch(table, np.int64((g >> np.uint64(32)) & cells))
        p = np.int64(h & _LOW)
        if p >= meta[THRESHOLD]:
            continue
        key = chunk[i]
        scale = MODULUS / meta[THRESHOLD]
        if meta[SLOT] == n_slots:
            meta[SLOT] = _compact(table, words, tree)
        c = _find(table, key, np.int64((h >> np.uint64(32)) & cells))
        index[out] = i
        weight[out] = scale
        if table[c, KEY] == EMPTY:
            dist[out] = -1.0
            table[c, KEY] = key
            meta[LIVE] += 1
            if meta[LIMIT] > 0:
                _heap_push(prio, hkey, meta[HEAP], p, key)
                meta[HEAP] += 1
        else:
            old = table[c, AT]
            w = old >> 6
            after = _popcount(words[w] >> np.uint64(old & 63) >> _ONE)
            dist[out] = (meta[LIVE] - _prefix(tree, w + 1) + after) * scale
            _unmark(words, tree, old)
        t = meta[SLOT]
        words[t >> 6] |= _ONE << np.uint64(t & 63)
        _add(tree, (t >> 6) + 1, 1)
        table[c, AT] = t
        meta[SLOT] = t + 1
        out += 1
        if meta[LIMIT] > 0 and meta[LIVE] > meta[LIMIT]:
            _shrink(state, meta)
    return out


@jit
def _regrow(old: Any, table: Any) -> None:
    for c in range(old.shape[0]):
        key = old[c, KEY]
        if key != EMPTY:
            d = _find(table, key, _home(key, table.shape[0]))
            table[d, KEY] = key
            table[d, AT] = old[c, AT]


@dataclass(frozen=True)
class Sampled:
    """One chunk's sampled accesses: where in the chunk, distance x 1/R (-1: first access), weight 1/R."""

    index: I64
    distance: F64
    weight: F64


class ShardsSampler:
    """Feed chunks of keys (non-negative int64) in trace order; get each chunk's sampled accesses.

    ``rate`` is the sampling rate (fixed rate), or the starting rate when ``size`` (fixed size: at most
    ``size`` sampled keys held) is given. Memory: a few tens of bytes per held key, never per access.
    """

    def __init__(self, rate: float = 1.0, size: int | None = None) -> None:
        if size is not None and size < 1:
            raise ValueError(f"sample size {size!r} must be at least one key")
        self.meta = np.zeros(5, dtype=np.int64)
        self.meta[THRESHOLD] = threshold_of(rate)
        self.meta[LIMIT] = size or 0
        self.accesses = 0  # every access fed, sampled or not
        self.sampled = 0
        heap = (size or 0) + 1 if size else 1
        self._state: tuple[Any, ...] = (
            np.full((16, 2), EMPTY, dtype=np.int64),  # hash table: key, its slot
            np.zeros(1, dtype=np.uint64),  # bitset over slots
            np.zeros(2, dtype=np.int32),  # Fenwick tree over its words
            np.zeros(heap, dtype=np.int64),  # fixed size: max-heap of hash values
            np.zeros(heap, dtype=np.int64),  # and their keys
        )

    @property
    def rate(self) -> float:
        """The sampling rate now (falls under a fixed size)."""
        return float(self.meta[THRESHOLD]) / MODULUS

    @property
    def keys_held(self) -> int:
        return int(self.meta[LIVE])

    def feed(self, chunk: npt.ArrayLike) -> Sampled:
        keys = np.ascontiguousarray(chunk, dtype=np.int64)
        if keys.size and int(keys.min()) < 0:
            raise ValueError(f"keys must be non-negative; the chunk holds {int(keys.min())!r}")
        self._reserve(_count_sampled(keys, int(self.meta[THRESHOLD])))
        n = keys.size
        index, dist, weight = np.empty(n, np.int64), np.empty(n, np.float64), np.empty(n, np.float64)
        m = _run(keys, self._state, self.meta, index, dist, weight)
        self.accesses += n
        self.sampled += m
        return Sampled(index[:m].copy(), dist[:m].copy(), weight[:m].copy())

    def _reserve(self, new: int) -> None:
        """Room for ``new`` more keys: the table at most half full, at least twice as many slots as keys."""
        limit = int(self.meta[LIMIT])
        need = int(self.meta[LIVE]) + new
        if limit:
            need = min(need, limit + 1)
        table, words, tree, prio, hkey = self._state
        if 2 * need > table.shape[0]:
            bigger = np.full((1 << max(4, (2 * need).bit_length()), 2), EMPTY, dtype=np.int64)
            _regrow(table, bigger)
            table = bigger
        if 64 * words.size < 2 * need + 64:
            n_words = (4 * need) // 64 + 2
            bigger_words = np.zeros(n_words, dtype=np.uint64)
            bigger_words[: words.size] = words
            words, tree = bigger_words, np.zeros(n_words + 1, dtype=np.int32)
            self.meta[SLOT] = _compact(table, words, tree)
        self._state = (table, words, tree, prio, hkey)


HLL_BITS = 16  # 65,536 one-byte registers: relative standard error 1.04 / 256 ~ 0.4 %
HLL_REGISTERS = 1 << HLL_BITS


@jit
def _hll_feed(chunk: I64, regs: Any) -> None:
    """HyperLogLog registers: the top ``HLL_BITS`` bits of a key's hash pick a register, which keeps the
    largest position of the first set bit in the rest."""
    rest = 64 - HLL_BITS
    for i in range(chunk.shape[0]):
        h = _mix(chunk[i])
        j = np.int64(h >> np.uint64(rest))
        w = (h << np.uint64(HLL_BITS)) | np.uint64((1 << HLL_BITS) - 1)  # a sentinel bounds the run
        rank = 1  # 1 + leading zeros of w, by halving
        for half in (32, 16, 8, 4, 2, 1):
            if (w >> np.uint64(64 - half)) == np.uint64(0):
                rank += half
                w <<= np.uint64(half)
        if rank > regs[j]:
            regs[j] = rank


class DistinctCounter:
    """The number of distinct keys of a stream, estimated with HyperLogLog (Flajolet et al., 2007) over the
    same SplitMix64 hash as the sampler, in 64 KiB whatever the stream's length."""

    def __init__(self) -> None:
        self.regs = np.zeros(1 << HLL_BITS, dtype=np.uint8)

    def feed(self, keys: I64) -> None:
        _hll_feed(np.ascontiguousarray(keys, dtype=np.int64), self.regs)

    def estimate(self) -> float:
        m = float(self.regs.size)
        raw = 0.7213 / (1 + 1.079 / m) * m * m / float(np.sum(np.exp2(-self.regs.astype(np.float64))))
        zeros = int(np.count_nonzero(self.regs == 0))
        if raw <= 2.5 * m and zeros:
            return m * float(np.log(m / zeros))  # few keys: linear counting
        return raw
