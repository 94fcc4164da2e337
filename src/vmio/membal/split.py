"""Splitting memory between VMs by their hit curves.

``optimal_split`` is an exact dynamic programme over allocation units: it is right for any curve shape,
cliffs included. ``lookahead_split`` is the utility-based (UCP) lookahead a controller uses online: it gives
memory to the VM with the steepest *average* slope over any extension, which sees past a cliff where a
one-step greedy stalls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


def _padded(curve: npt.ArrayLike, total: int) -> F64:
    h = np.asarray(curve, dtype=np.float64)
    if h.size >= total + 1:
        return h[: total + 1]
    return np.concatenate([h, np.full(total + 1 - h.size, h[-1] if h.size else 0.0)])


def optimal_split(
    curves: Sequence[npt.ArrayLike], total: int, floors: Sequence[int]
) -> tuple[float, list[int]]:
    """Units per VM (summing to ``total``, each at least its floor) maximizing the summed hit curves.

    ``curves[i][u]`` is VM ``i``'s hits with ``u`` units. Returns (best total, allocation).
    Raises ``ValueError`` when the floors do not fit in ``total``.
    """
    if sum(floors) > total:
        raise ValueError(f"floors {list(floors)!r} need more than the {total} units there are")
    m = np.arange(total + 1)[:, None]
    a = np.arange(total + 1)[None, :]
    rest = np.clip(m - a, 0, None)
    best = np.full(total + 1, -np.inf)
    best[0] = 0.0
    choices = []
    for curve, floor in zip(curves, floors, strict=True):
        h = _padded(curve, total)
        cand = np.where((a <= m) & (a >= floor), best[rest] + h[a], -np.inf)
        choice = cand.argmax(axis=1)
        best = cand[np.arange(total + 1), choice]
        choices.append(choice)
    alloc = []
    left = total
    for choice in reversed(choices):
        units = int(choice[left])
        alloc.append(units)
        left -= units
    return float(best[total]), alloc[::-1]


def lookahead_split(curves: Sequence[npt.ArrayLike], total: int, floors: Sequence[int]) -> list[int]:
    """UCP lookahead: repeatedly grant the VM with the highest best-average marginal gain its best run."""
    hs = [_padded(c, total) for c in curves]
    alloc = list(floors)
    left = total - sum(alloc)
    while left > 0:
        best = (0.0, -1, 0)
        for i, h in enumerate(hs):
            a = alloc[i]
            span = min(left, total - a)
            if span <= 0:
                continue
            gains = (h[a + 1 : a + span + 1] - h[a]) / np.arange(1, span + 1)
            k = int(gains.argmax())
            if gains[k] > best[0]:
                best = (float(gains[k]), i, k + 1)
        if best[1] < 0:  # no VM gains anything more: spread the rest evenly
            for j in range(left):
                alloc[j % len(alloc)] += 1
            break
        alloc[best[1]] += best[2]
        left -= best[2]
    return alloc
