"""The order of hot extents inside the zone: by image, by first access, or by co-access sequence.

``coaccess`` chains extents greedily: start with the extent accessed first, then repeatedly follow the
strongest unused transition (how often one extent's access was directly followed by the other's in the
multi-VM stream); when none is left, continue with the earliest-accessed extent not yet placed. Extents that
are used one after another then lie one after another, as in block-level replica placement by access order.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from vmio.errors import InputError
from vmio.traces.trace import Trace

ORDERS = ("image", "first", "coaccess")
Pair = tuple[int, int]


def zone_order(hot: list[Pair], order: str, trace: Trace | None, extent_bytes: int) -> list[Pair]:
    """``hot`` (image, logical extent) pairs in the order they take in the zone."""
    if order not in ORDERS:
        raise InputError(f"unknown in-zone order {order!r}; use one of {ORDERS}")
    by_image = sorted(set(hot))
    if order == "image" or trace is None or not len(trace):
        return by_image
    seq = _hot_sequence(trace, set(by_image), extent_bytes)
    first = _first_access(seq, by_image)
    if order == "first":
        return first
    return _chain(seq, first)


def _hot_sequence(trace: Trace, hot: set[Pair], extent_bytes: int) -> list[Pair]:
    ext = (trace.offset // extent_bytes).tolist()
    pairs = zip(trace.image.tolist(), ext, strict=True)
    return [p for p in pairs if p in hot]


def _first_access(seq: list[Pair], every: list[Pair]) -> list[Pair]:
    seen: dict[Pair, None] = {}
    for p in seq:
        seen.setdefault(p, None)
    rest = [p for p in every if p not in seen]
    return list(seen) + rest


def _chain(seq: list[Pair], first: list[Pair]) -> list[Pair]:
    nbrs: defaultdict[Pair, Counter[Pair]] = defaultdict(Counter)
    for a, b in zip(seq, seq[1:], strict=False):
        if a != b:
            nbrs[a][b] += 1
            nbrs[b][a] += 1
    placed: set[Pair] = set()
    out: list[Pair] = []
    rank = {p: i for i, p in enumerate(first)}
    cursor = 0
    current: Pair | None = None
    while len(out) < len(first):
        nxt = None
        if current is not None:
            options = [(-c, rank[p], p) for p, c in nbrs[current].items() if p not in placed]
            nxt = min(options)[2] if options else None
        if nxt is None:
            while first[cursor] in placed:
                cursor += 1
            nxt = first[cursor]
        placed.add(nxt)
        out.append(nxt)
        current = nxt
    return out


def order_quality(zone: list[Pair], seq: list[Pair]) -> float:
    """Mean zone-slot distance between consecutive hot accesses (lower is better)."""
    slot = {p: i for i, p in enumerate(zone)}
    s = np.array([slot[p] for p in seq if p in slot])
    return float(np.abs(np.diff(s)).mean()) if len(s) > 1 else 0.0
