"""The replay loop compiled with numba: one disk, per-stream outstanding limits, and a queue policy.

Requests are grouped by stream (contiguous, in issue order). A stream holds at most ``depth`` requests
outstanding; a request is issued at ``max(arrival, time a slot of its stream frees)``. The device queue
holds at most ``qmax`` issued requests; the disk serves one at a time, picked by ``policy``: 0 FCFS by issue
time; 1 C-LOOK by cylinder; 2 mq-deadline as modelled (C-LOOK, but a request that has waited longer than
``DEADLINE_S``, Linux's ``read_expire``, goes first, oldest first); 3 bfq as modelled (one stream, the VM's
queue, holds the disk while it has requests pending, for at most ``SLICE_S``, bfq's ``timeout_sync``,
served in C-LOOK order, then the next stream in turn; no idling). Ties go to the lower ``rank`` (the
request's position in the caller's order). ``reference.py`` is the plain-Python twin of this loop.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from vmio.system.jit import njit

INF = math.inf
DEADLINE_S = 0.5  # mq-deadline's read_expire (500 ms)
SLICE_S = 0.125  # bfq's timeout_sync (125 ms)


@njit(cache=True)  # type: ignore[untyped-decorator]
def _seek_s(d: int, sp: NDArray[np.float64]) -> float:  # pragma: no cover - compiled
    if d <= 0:
        return 0.0
    if d < sp[4]:
        return float((sp[0] + sp[1] * math.sqrt(d)) / 1000.0)
    return float((sp[2] + sp[3] * d) / 1000.0)


@njit(cache=True)
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


@njit(cache=True)
def _pick(pool, npool, issue, cyl, rank, head, policy, now, stream_of, state):  # type: ignore[no-untyped-def]  # pragma: no cover
    if policy == 0:
        return _oldest(pool, npool, issue, rank)
    if policy == 2:
        old = _oldest(pool, npool, issue, rank)
        if now - issue[pool[old]] > DEADLINE_S:
            return old
    if policy == 3:
        return _bfq(pool, npool, cyl, rank, head, now, stream_of, state)
    return _clook(pool, npool, cyl, rank, head, -1, stream_of)


@njit(cache=True)
def _oldest(pool, npool, issue, rank):  # type: ignore[no-untyped-def]  # pragma: no cover
    best = 0
    for i in range(1, npool):
        a, b = pool[i], pool[best]
        if issue[a] < issue[b] or (issue[a] == issue[b] and rank[a] < rank[b]):
            best = i
    return best


@njit(cache=True)
def _clook(pool, npool, cyl, rank, head, only, stream_of):  # type: ignore[no-untyped-def]  # pragma: no cover
    ahead, low = -1, -1
    for i in range(npool):
        j = pool[i]
        if only >= 0 and stream_of[j] != only:
            continue
        if cyl[j] >= head and (ahead < 0 or _before(j, pool[ahead], cyl, rank)):
            ahead = i
        if low < 0 or _before(j, pool[low], cyl, rank):
            low = i
    return ahead if ahead >= 0 else low


@njit(cache=True)
def _bfq(pool, npool, cyl, rank, head, now, stream_of, state):  # type: ignore[no-untyped-def]  # pragma: no cover
    active = int(state[0])
    if active >= 0 and now - state[1] < SLICE_S:
        i = _clook(pool, npool, cyl, rank, head, active, stream_of)
        if i >= 0:
            return i
    # the next stream after the active one (in turn) that has a request pending
    best, best_key = -1, 0
    for i in range(npool):
        s = stream_of[pool[i]]
        key = (s - active - 1) % (stream_of.shape[0] + 1) if active >= 0 else s
        if s == active:
            key = stream_of.shape[0] + 1
        if best < 0 or key < best_key:
            best, best_key = i, key
    chosen = stream_of[pool[best]]
    state[0] = chosen
    state[1] = now
    return _clook(pool, npool, cyl, rank, head, chosen, stream_of)


@njit(cache=True)
def _before(a, b, cyl, rank):  # type: ignore[no-untyped-def]  # pragma: no cover
    return cyl[a] < cyl[b] or (cyl[a] == cyl[b] and rank[a] < rank[b])


@njit(cache=True)
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
    state = np.array([-1.0, 0.0])  # bfq: the active stream and when its slice began
    while done < n:
        npool, nxt = _admit(now, arrival, bounds, ptr, slots, slot_of, issue, pool, npool, qmax)
        if npool == 0:
            now = nxt
            continue
        i = _pick(pool, npool, issue, cyl, rank, head, policy, now, stream_of, state)
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
