"""The replay loop compiled with numba: one disk, per-stream outstanding limits, FCFS or C-LOOK elevator.

Requests are grouped by stream (contiguous, in issue order). A stream holds at most ``depth`` requests
outstanding; a request is issued at ``max(arrival, time a slot of its stream frees)``. The device queue
holds at most ``qmax`` issued requests; the disk serves one at a time, picked by ``policy`` (0 FCFS by issue
time, 1 C-LOOK by cylinder); ties go to the lower ``rank`` (the request's
position in the caller's order). ``reference.py`` is the plain-Python twin of this loop.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

INF = math.inf


@numba.njit(cache=True)
def _seek_s(d: int, sp: NDArray[np.float64]) -> float:  # pragma: no cover - compiled
    if d <= 0:
        return 0.0
    if d < sp[4]:
        return float((sp[0] + sp[1] * math.sqrt(d)) / 1000.0)
    return float((sp[2] + sp[3] * d) / 1000.0)


@numba.njit(cache=True)
def _admit(now, arrival, bounds, ptr, slots, slot_of, issue, pool, npool, qmax):  # type: ignore[no-untyped-def]  # pragma: no cover
    nstreams = bounds.shape[0] - 1
    depth = slots.shape[1]
    while npool < qmax:
        best_s, best_t, best_k = -1, INF, -1
        for s in range(nstreams):
            if ptr[s] >= bounds[s + 1]:
                continue
            k, kt = 0, slots[s, 0]
            for q in range(1, depth):
                if slots[s, q] < kt:
                    k, kt = q, slots[s, q]
            t = max(arrival[ptr[s]], kt)
            if t < best_t:
                best_s, best_t, best_k = s, t, k
        if best_s < 0 or best_t > now:
            return npool, best_t
        j = ptr[best_s]
        ptr[best_s] += 1
        issue[j] = best_t
        slots[best_s, best_k] = INF
        slot_of[j] = best_k
        pool[npool] = j
        npool += 1
    return npool, now


@numba.njit(cache=True)
def _pick(pool, npool, issue, cyl, rank, head, policy):  # type: ignore[no-untyped-def]  # pragma: no cover
    best = 0
    if policy == 0:
        for i in range(1, npool):
            a, b = pool[i], pool[best]
            if issue[a] < issue[b] or (issue[a] == issue[b] and rank[a] < rank[b]):
                best = i
        return best
    ahead, low = -1, 0
    for i in range(npool):
        j = pool[i]
        if cyl[j] >= head and (ahead < 0 or _before(j, pool[ahead], cyl, rank)):
            ahead = i
        if _before(j, pool[low], cyl, rank):
            low = i
    return ahead if ahead >= 0 else low


@numba.njit(cache=True)
def _before(a, b, cyl, rank):  # type: ignore[no-untyped-def]  # pragma: no cover
    return cyl[a] < cyl[b] or (cyl[a] == cyl[b] and rank[a] < rank[b])


@numba.njit(cache=True)
def run_kernel(cyl, angle, xfer, arrival, stream_of, rank, bounds, depth, qmax, policy, seek, overhead, rev):  # type: ignore[no-untyped-def]  # pragma: no cover
    n = cyl.shape[0]
    nstreams = bounds.shape[0] - 1
    issue = np.zeros(n)
    start = np.zeros(n)
    finish = np.zeros(n)
    dist = np.zeros(n, dtype=np.int64)
    slots = np.zeros((nstreams, depth))
    slot_of = np.zeros(n, dtype=np.int64)
    ptr = bounds[:-1].copy()
    pool = np.zeros(qmax, dtype=np.int64)
    npool, now, head, done = 0, 0.0, 0, 0
    while done < n:
        npool, nxt = _admit(now, arrival, bounds, ptr, slots, slot_of, issue, pool, npool, qmax)
        if npool == 0:
            now = nxt
            continue
        i = _pick(pool, npool, issue, cyl, rank, head, policy)
        j = pool[i]
        npool -= 1
        pool[i] = pool[npool]
        d = abs(cyl[j] - head)
        at = now + overhead + _seek_s(d, seek)
        turn = at / rev
        rot = ((angle[j] - (turn - math.floor(turn))) % 1.0) * rev
        start[j] = now
        finish[j] = at + rot + xfer[j]
        dist[j] = d
        head = cyl[j]
        now = finish[j]
        slots[stream_of[j], slot_of[j]] = now
        done += 1
    return issue, start, finish, dist
