"""Mattson LRU stack distances, compiled (numba).

Each page's latest access holds a mark in a bitset over time slots; the distance of an access is the number
of marks after the page's previous slot. Counting them takes a popcount inside one 64-slot word plus a
Fenwick tree over the words, which is 64 times smaller than a tree over slots and so stays in the CPU's
cache. When the slots run out, the live marks are packed to the front (slots = 2 x pages), so memory is
bounded by the number of distinct pages, not the trace length.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vmio.mrc.compiled import I64, LOOKAHEAD, jit, prefetch

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ONE = np.uint64(1)


@jit
def _popcount(x: Any) -> int:
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return int((x * _H01) >> np.uint64(56))


@jit
def _prefix(tree: Any, i: int) -> int:
    s = 0
    while i > 0:
        s += tree[i]
        i -= i & -i
    return s


@jit
def _add(tree: Any, i: int, delta: int) -> None:
    n = tree.shape[0] - 1
    while i <= n:
        tree[i] += delta
        i += i & -i


@jit
def _rebuild(words: Any, tree: Any, marks: int) -> None:
    """Marks in slots 0..marks-1 and none after; the Fenwick tree over words built in linear time."""
    words[:] = 0
    full = marks // 64
    words[:full] = ~np.uint64(0)
    if marks % 64:
        words[full] = (_ONE << np.uint64(marks % 64)) - _ONE
    n = tree.shape[0] - 1
    tree[:] = 0
    for i in range(1, n + 1):
        tree[i] += _popcount(words[i - 1])
        up = i + (i & -i)
        if up <= n:
            tree[up] += tree[i]


@jit
def _compact(last: I64, words: Any, tree: Any) -> int:
    """Renumber each page's latest slot to 0..L-1, keeping their order; returns L."""
    slots = words.shape[0] * 64
    owner = np.full(slots, -1, dtype=np.int64)
    for p in range(last.shape[0]):
        if last[p] >= 0:
            owner[last[p]] = p
    j = 0
    for pos in range(slots):
        p = owner[pos]
        if p >= 0:
            last[p] = j
            j += 1
    _rebuild(words, tree, j)
    return j


@jit
def stack_distances(pages: I64, n_pages: int) -> I64:
    """Stack distance of every access of ``pages`` (dense ids below ``n_pages``); -1 for a first access.

    The distance is the number of distinct other pages touched since the page's previous access, so an
    LRU cache of ``c`` pages hits exactly the accesses whose distance is below ``c``.
    """
    n = pages.shape[0]
    n_words = max(2 * n_pages // 64 + 1, 16)
    slots = n_words * 64
    out = np.empty(n, dtype=np.int64)
    last = np.full(n_pages, -1, dtype=np.int64)
    words = np.zeros(n_words, dtype=np.uint64)
    tree = np.zeros(n_words + 1, dtype=np.int32)
    live = 0
    t = 0
    for i in range(n):
        if i + LOOKAHEAD < n:
            prefetch(last, pages[i + LOOKAHEAD])
        if t == slots:
            t = _compact(last, words, tree)
        p = pages[i]
        old = last[p]
        if old < 0:
            out[i] = -1
            live += 1
        else:
            w = old >> 6
            bit = np.uint64(old & 63)
            after = _popcount(words[w] >> bit >> _ONE)  # marks later in the same word
            out[i] = live - _prefix(tree, w + 1) + after
            words[w] &= ~(_ONE << bit)
            _add(tree, w + 1, -1)
        wt = t >> 6
        words[wt] |= _ONE << np.uint64(t & 63)
        _add(tree, wt + 1, 1)
        last[p] = t
        t += 1
    return out
