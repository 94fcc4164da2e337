"""Compiled hot loops (numba): multi-VM LRU page caches and Mattson stack distances.

Pages are dense integers (0..n_pages-1, each VM owning a disjoint range). Every VM's LRU list is a doubly
linked list threaded through the shared ``prev``/``nxt`` arrays; ``head`` is the most recently used page.
The plain-Python twins of these loops live in :mod:`vmio.membal.reference`; tests hold one to the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt

F = TypeVar("F", bound=Callable[..., Any])
I64 = npt.NDArray[np.int64]

NONE = -1


def _jit(fn: F) -> F:
    return cast(F, numba.njit(cache=True, nogil=True)(fn))


@_jit
def _unlink_tail(v: int, prev: I64, nxt: I64, resident: Any, head: I64, tail: I64, size: I64) -> None:
    t = tail[v]
    resident[t] = False
    a = prev[t]
    tail[v] = a
    if a != NONE:
        nxt[a] = NONE
    else:
        head[v] = NONE
    size[v] -= 1


@_jit
def lru_run(
    vms: I64,
    pages: I64,
    state: tuple[I64, I64, Any, I64, I64, I64, I64, I64],
    hits: I64,
    hit_pages: I64,
    stamp: int,
) -> None:
    """Replay ``pages`` (page ``pages[k]`` requested by VM ``vms[k]``) against the VMs' LRU caches.

    ``state`` is (prev, nxt, resident, head, tail, size, capacity, hit_stamp). Adds each VM's hits to
    ``hits`` and the number of distinct pages that hit for the first time under ``stamp`` to ``hit_pages``.
    """
    prev, nxt, resident, head, tail, size, cap, hit_stamp = state
    for k in range(vms.shape[0]):
        v = vms[k]
        p = pages[k]
        if resident[p]:
            hits[v] += 1
            if hit_stamp[p] != stamp:
                hit_stamp[p] = stamp
                hit_pages[v] += 1
            h = head[v]
            if h != p:
                a = prev[p]
                b = nxt[p]
                nxt[a] = b
                if b != NONE:
                    prev[b] = a
                else:
                    tail[v] = a
                prev[p] = NONE
                nxt[p] = h
                prev[h] = p
                head[v] = p
            continue
        if cap[v] <= 0:
            continue
        if size[v] >= cap[v]:
            _unlink_tail(v, prev, nxt, resident, head, tail, size)
        h = head[v]
        prev[p] = NONE
        nxt[p] = h
        if h != NONE:
            prev[h] = p
        else:
            tail[v] = p
        head[v] = p
        resident[p] = True
        size[v] += 1


@_jit
def lru_shrink(v: int, state: tuple[I64, I64, Any, I64, I64, I64, I64, I64]) -> None:
    """Evict VM ``v``'s least recently used pages until it holds at most its capacity."""
    prev, nxt, resident, head, tail, size, cap, _ = state
    while size[v] > cap[v]:
        _unlink_tail(v, prev, nxt, resident, head, tail, size)


@_jit
def stack_distances(pages: I64, n_pages: int) -> I64:
    """Mattson LRU stack distance of every access (-1 for a first access).

    The distance is the number of distinct other pages touched since the page's previous access, so an
    LRU cache of ``c`` pages hits exactly the accesses whose distance is below ``c``. A Fenwick tree over
    access times marks each page's latest access; the distance is the count of marks after it.
    """
    n = pages.shape[0]
    out = np.empty(n, dtype=np.int64)
    last = np.full(n_pages, -1, dtype=np.int64)
    tree = np.zeros(n + 1, dtype=np.int32)
    live = 0
    for i in range(n):
        p = pages[i]
        t = last[p]
        if t < 0:
            out[i] = -1
        else:
            # marks at positions <= t (1-based t+1); distance = live marks after t
            s = 0
            j = t + 1
            while j > 0:
                s += tree[j]
                j -= j & -j
            out[i] = live - s
            j = t + 1
            while j <= n:
                tree[j] -= 1
                j += j & -j
            live -= 1
        j = i + 1
        while j <= n:
            tree[j] += 1
            j += j & -j
        live += 1
        last[p] = i
    return out
