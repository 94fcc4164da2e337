"""Compiled hot loop (numba) of the multi-VM LRU page caches; stack distances are in
:mod:`vmio.mrc.stackdist`.

Pages are dense integers (0..n_pages-1, each VM owning a disjoint range). Every VM's LRU list is a doubly
linked list threaded through the shared ``prev``/``nxt`` arrays; ``head`` is the most recently used page.
The plain-Python twins of these loops live in :mod:`vmio.membal.reference`; tests hold one to the other.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from vmio.mrc.compiled import I64, LOOKAHEAD, jit, prefetch

NONE = -1
PREV, NEXT, STAMP, RESIDENT = 0, 1, 2, 3  # node columns
NEVER, IN_CACHE, EVICTED = 0, 1, 2  # node[:, RESIDENT]; EVICTED + n: evicted as the VM's n-th eviction
HITS, HIT_PAGES, REFAULTS, ACTIVATIONS = 0, 1, 2, 3  # columns of the per-VM counters


def new_nodes(n_pages: int) -> npt.NDArray[np.int32]:
    """One row per page: prev, next, stamp of the epoch it last hit, residency (never cached, cached,
    or evicted and when); a 16-byte row keeps what an access touches in one cache line."""
    node = np.zeros((n_pages, 4), dtype=np.int32)
    node[:, PREV] = NONE
    node[:, NEXT] = NONE
    return node


@jit
def _evict_tail(v: int, node: Any, head: I64, tail: I64, size: I64, evictions: I64) -> None:
    t = tail[v]
    evictions[v] += 1
    node[t, RESIDENT] = EVICTED + evictions[v]
    a = node[t, PREV]
    tail[v] = a
    if a != NONE:
        node[a, NEXT] = NONE
    else:
        head[v] = NONE
    size[v] -= 1


@jit
def lru_run(
    vms: I64,
    pages: I64,
    state: tuple[Any, I64, I64, I64, I64, I64],
    counts: Any,
    stamp: int,
) -> None:
    """Replay ``pages`` (page ``pages[k]`` requested by VM ``vms[k]``) against the VMs' LRU caches.

    ``state`` is (node, head, tail, size, capacity, evictions). Adds to each VM's row of ``counts``: hits,
    distinct pages that hit for the first time under ``stamp``, refaults (misses on pages evicted before:
    Linux's ``workingset_refault_file``) and activations (refaults evicted fewer evictions ago than the
    cache holds pages, which a cache twice as large would have hit: ``workingset_activate_file``).
    """
    node, head, tail, size, cap, evictions = state
    n = vms.shape[0]
    for k in range(n):
        if k + LOOKAHEAD < n:  # the rows of random pages miss the CPU caches: fetch them ahead
            prefetch(node, pages[k + LOOKAHEAD])
        v = vms[k]
        p = pages[k]
        if node[p, RESIDENT] == IN_CACHE:
            counts[v, HITS] += 1
            if node[p, STAMP] != stamp:
                node[p, STAMP] = stamp
                counts[v, HIT_PAGES] += 1
            h = head[v]
            if h != p:
                a = node[p, PREV]
                b = node[p, NEXT]
                node[a, NEXT] = b
                if b != NONE:
                    node[b, PREV] = a
                else:
                    tail[v] = a
                node[p, PREV] = NONE
                node[p, NEXT] = h
                node[h, PREV] = p
                head[v] = p
            continue
        gone = node[p, RESIDENT]
        if gone > EVICTED:
            counts[v, REFAULTS] += 1
            if evictions[v] - (gone - EVICTED) <= size[v]:
                counts[v, ACTIVATIONS] += 1
        if cap[v] <= 0:
            continue
        if size[v] >= cap[v]:
            _evict_tail(v, node, head, tail, size, evictions)
        h = head[v]
        node[p, PREV] = NONE
        node[p, NEXT] = h
        if h != NONE:
            node[h, PREV] = p
        else:
            tail[v] = p
        head[v] = p
        node[p, RESIDENT] = IN_CACHE
        size[v] += 1


@jit
def lru_shrink(v: int, state: tuple[Any, I64, I64, I64, I64, I64]) -> None:
    """Evict VM ``v``'s least recently used pages until it holds at most its capacity."""
    node, head, tail, size, cap, evictions = state
    while size[v] > cap[v]:
        _evict_tail(v, node, head, tail, size, evictions)
