"""Plain-Python twins of the compiled kernels: slow, obvious, and the yardstick the fast path is tested on."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from vmio.membal.engine import EpochCounts


class LruCache:
    """One LRU page cache of ``capacity`` pages (an ``OrderedDict``, most recent last)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.pages: OrderedDict[int, None] = OrderedDict()
        self.evicted: dict[int, int] = {}  # page → the eviction count when it was evicted
        self.evictions = 0

    def access(self, page: int) -> bool:
        """Request ``page``; True on a hit. A miss inserts it, evicting the least recently used page."""
        if page in self.pages:
            self.pages.move_to_end(page)
            return True
        if self.capacity <= 0:
            return False
        if len(self.pages) >= self.capacity:
            self._evict()
        self.pages[page] = None
        return False

    def resize(self, capacity: int) -> None:
        """Set the capacity; shrinking evicts least recently used pages."""
        self.capacity = capacity
        while len(self.pages) > max(capacity, 0):
            self._evict()

    def _evict(self) -> None:
        self.evictions += 1
        self.evicted[self.pages.popitem(last=False)[0]] = self.evictions


def lru_hits(pages: Iterable[int], capacity: int) -> int:
    """Hits of one LRU cache of ``capacity`` pages over ``pages``."""
    cache = LruCache(capacity)
    return sum(cache.access(p) for p in pages)


def stack_distances(pages: Sequence[int]) -> list[int]:
    """Mattson stack distances (-1 for a first access) by walking an explicit LRU stack."""
    stack: list[int] = []  # most recent last
    out: list[int] = []
    for p in pages:
        if p in stack:
            i = stack.index(p)
            out.append(len(stack) - 1 - i)
            del stack[i]
        else:
            out.append(-1)
        stack.append(p)
    return out


class ReferenceEngine:
    """The multi-VM page-cache engine in plain Python; same interface as ``FastEngine``."""

    def __init__(self, n_vms: int, n_pages: int) -> None:
        del n_pages
        self.caches = [LruCache(0) for _ in range(n_vms)]

    def set_capacity(self, vm: int, pages: int) -> None:
        self.caches[vm].resize(pages)

    def resident(self) -> list[int]:
        return [len(c.pages) for c in self.caches]

    def run(self, vms: Sequence[int], pages: Sequence[int]) -> EpochCounts:
        """Replay one epoch; per VM hits, distinct pages that hit, refaults, activations."""
        n = len(self.caches)
        hits, refaults, activations = [0] * n, [0] * n, [0] * n
        hit_pages: list[set[int]] = [set() for _ in range(n)]
        for v, p in zip(vms, pages, strict=True):
            cache = self.caches[v]
            if p in cache.pages:
                hits[v] += 1
                hit_pages[v].add(p)
            elif p in cache.evicted:
                refaults[v] += 1
                activations[v] += cache.evictions - cache.evicted[p] <= len(cache.pages)
            cache.access(p)
        return EpochCounts(hits, [len(s) for s in hit_pages], refaults, activations)


MASK64 = (1 << 64) - 1
MODULUS = 1 << 24


def hash_key(key: int) -> int:
    """SplitMix64's finalizer of ``key + 0x9E3779B97F4A7C15`` on Python integers (64-bit wrap by masking)."""
    z = (key + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def shards_distances(
    keys: Iterable[int], rate: float = 1.0, size: int | None = None
) -> list[tuple[int, float, float]]:
    """SHARDS by the book, with an explicit LRU stack: per sampled access (index, distance x 1/R or -1 for
    the first access of a key in the sample, weight 1/R). Under ``size`` at most that many keys are held:
    when one more comes, the threshold drops to the largest hash value held and those keys leave."""
    threshold = max(1, min(MODULUS, round(rate * MODULUS)))
    stack: list[int] = []  # most recent last
    held: dict[int, int] = {}  # key → its hash value mod P
    out: list[tuple[int, float, float]] = []
    for i, key in enumerate(keys):
        p = hash_key(key) % MODULUS
        if p >= threshold:
            continue
        scale = MODULUS / threshold
        if key in held:
            j = stack.index(key)
            out.append((i, (len(stack) - 1 - j) * scale, scale))
            del stack[j]
        else:
            out.append((i, -1.0, scale))
            held[key] = p
        stack.append(key)
        if size is not None and len(stack) > size:
            threshold = max(held.values())
            for k in [k for k, v in held.items() if v >= threshold]:
                del held[k]
                stack.remove(k)
    return out
