"""The plain-Python replay: the specification the compiled kernel is tested against.

Written for clarity, not speed: lists of pending requests, one decision per served request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vmio.relocate.disk import DiskParams
from vmio.relocate.replay_kernel import DEADLINE_S, SLICE_S


@dataclass
class _Stream:
    todo: list[int]
    slot_free: list[float]
    next_index: int = 0

    def candidate(self, arrival: list[float]) -> tuple[float, int] | None:
        if self.next_index >= len(self.todo):
            return None
        slot = min(range(len(self.slot_free)), key=lambda q: (self.slot_free[q], q))
        return max(arrival[self.todo[self.next_index]], self.slot_free[slot]), slot


@dataclass
class ReferenceReplay:
    """Replays requests (cylinder, angle, transfer seconds, arrival, stream) on ``disk``."""

    disk: DiskParams
    depth: int
    qmax: int
    policy: str
    issue: dict[int, float] = field(default_factory=dict)
    start: dict[int, float] = field(default_factory=dict)
    finish: dict[int, float] = field(default_factory=dict)
    dist: dict[int, int] = field(default_factory=dict)
    active: int = -1  # bfq: the stream holding the disk, and since when
    slice_at: float = 0.0

    def seek_s(self, d: int) -> float:
        return self.disk.seek.ms(d) / 1000.0

    def run(
        self, cyl: list[int], angle: list[float], xfer: list[float], arrival: list[float], stream: list[int]
    ) -> None:
        streams = [
            _Stream([j for j in range(len(cyl)) if stream[j] == s], [0.0] * self.depth)
            for s in range(max(stream) + 1 if stream else 0)
        ]
        pending: list[tuple[int, int]] = []  # (request, slot)
        now, head, rev = 0.0, 0, self.disk.revolution_s
        overhead = self.disk.overhead_ms / 1000.0
        while len(self.finish) < len(cyl):
            nxt = self._admit(streams, pending, arrival, now)
            if not pending:
                now = nxt
                continue
            j, slot = self._choose(pending, cyl, head, now, stream)
            pending.remove((j, slot))
            d = abs(cyl[j] - head)
            at = now + overhead + self.seek_s(d)
            turn = at / rev
            rot = ((angle[j] - (turn - math.floor(turn))) % 1.0) * rev
            self.start[j], self.finish[j], self.dist[j] = now, at + rot + xfer[j], d
            head, now = cyl[j], self.finish[j]
            streams[stream[j]].slot_free[slot] = now

    def _admit(
        self, streams: list[_Stream], pending: list[tuple[int, int]], arrival: list[float], now: float
    ) -> float:
        while len(pending) < self.qmax:
            options = [
                (c[0], s, c[1]) for s, st in enumerate(streams) if (c := st.candidate(arrival)) is not None
            ]
            if not options:
                return math.inf
            t, s, slot = min(options)
            if t > now:
                return t
            st = streams[s]
            j = st.todo[st.next_index]
            st.next_index += 1
            st.slot_free[slot] = math.inf
            self.issue[j] = t
            pending.append((j, slot))
        return now

    def _choose(
        self, pending: list[tuple[int, int]], cyl: list[int], head: int, now: float, stream: list[int]
    ) -> tuple[int, int]:
        oldest = min(pending, key=lambda p: (self.issue[p[0]], p[0]))
        if self.policy == "fcfs" or (
            self.policy == "mq-deadline" and now - self.issue[oldest[0]] > DEADLINE_S
        ):
            return oldest
        if self.policy == "bfq":
            mine = [p for p in pending if stream[p[0]] == self.active]
            if not mine or now - self.slice_at >= SLICE_S:
                others = sorted({stream[p[0]] for p in pending if stream[p[0]] != self.active})
                after = [s for s in others if s > self.active]
                nxt = (after or others or [self.active])[0]
                self.active, self.slice_at = nxt, now
                mine = [p for p in pending if stream[p[0]] == nxt]
            pending = mine
        return self._clook(pending, cyl, head)

    @staticmethod
    def _clook(pending: list[tuple[int, int]], cyl: list[int], head: int) -> tuple[int, int]:
        ahead = [p for p in pending if cyl[p[0]] >= head]
        pool = ahead or pending
        return min(pool, key=lambda p: (cyl[p[0]], p[0]))
