"""Replay a request stream on a disk model and summarize it.

``replay`` takes physical byte offsets (where the requests land on the disk), lengths, a stream number per
request (one per VM image) and arrival times. With ``depth`` (closed loop) each stream keeps at most that
many requests outstanding and issues the next one as soon as one completes, as a benchmark like FFSB does;
without it requests are issued at their arrival times (open loop).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vmio.errors import InputError
from vmio.relocate.disk import DiskParams, Geometry
from vmio.relocate.reference import ReferenceReplay
from vmio.relocate.replay_kernel import run_kernel

POLICIES = ("fcfs", "elevator", "mq-deadline", "bfq")
OPEN_LOOP_DEPTH = 64


@dataclass(frozen=True)
class Requests:
    """What the disk sees: physical offset and length in bytes, stream (image) and arrival in seconds."""

    offset: NDArray[np.int64]
    length: NDArray[np.int64]
    stream: NDArray[np.int64]
    arrival: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.offset.shape[0])


@dataclass(frozen=True)
class ReplayResult:
    """Per-request times (seconds) and seek distances (cylinders), in the order of the input requests."""

    issue: NDArray[np.float64]
    start: NDArray[np.float64]
    finish: NDArray[np.float64]
    seek_cylinders: NDArray[np.int64]

    def summary(self) -> dict[str, float]:
        """The replay's figures by name (``requests`` a count, times in ms, seeks in cylinders)."""
        service = (self.finish - self.start) * 1000.0
        response = (self.finish - self.issue) * 1000.0
        span = float(self.finish.max() - self.issue.min()) if len(service) else 0.0
        return {
            "requests": int(len(service)),
            "throughput_iops": len(service) / span if span > 0 else 0.0,
            "mean_service_ms": float(service.mean()) if len(service) else 0.0,
            "p99_service_ms": float(np.percentile(service, 99)) if len(service) else 0.0,
            "mean_response_ms": float(response.mean()) if len(service) else 0.0,
            "p99_response_ms": float(np.percentile(response, 99)) if len(service) else 0.0,
            "mean_seek_cylinders": float(self.seek_cylinders.mean()) if len(service) else 0.0,
            "zero_seek_fraction": float((self.seek_cylinders == 0).mean()) if len(service) else 0.0,
            "p99_seek_cylinders": float(np.percentile(self.seek_cylinders, 99)) if len(service) else 0.0,
        }


def _prepare(
    disk: DiskParams, req: Requests
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    if len(req) and int((req.offset + req.length).max()) > disk.capacity_bytes:
        raise InputError(
            f"a request ends at byte {int((req.offset + req.length).max())}, beyond the {disk.name!r} disk's "
            f"{disk.capacity_bytes} bytes; use a larger disk model or smaller images"
        )
    cyl, angle, spt = Geometry.of(disk).locate(req.offset // disk.sector_bytes)
    sectors = -(-req.length // disk.sector_bytes)
    xfer = sectors / spt * disk.revolution_s
    return cyl, angle, xfer.astype(np.float64)


def replay(
    disk: DiskParams,
    req: Requests,
    *,
    depth: int | None = None,
    policy: str = "fcfs",
    queue: int = 32,
    engine: str = "compiled",
) -> ReplayResult:
    """Serve ``req`` on ``disk``; ``engine`` is ``compiled`` (numba) or ``python`` (the reference)."""
    if policy not in POLICIES:
        raise InputError(f"unknown queue policy {policy!r}; use one of {POLICIES}")
    if depth is not None and depth < 1 or queue < 1:
        raise InputError(f"depth {depth!r} and queue {queue!r} must be at least 1")
    cyl, angle, xfer = _prepare(disk, req)
    slots = depth if depth is not None else OPEN_LOOP_DEPTH
    if engine == "python":
        return _replay_python(disk, req, cyl, angle, xfer, slots, queue, policy)
    order = np.argsort(req.stream, kind="stable")
    stream = req.stream[order]
    nstreams = int(stream.max()) + 1 if len(req) else 0
    bounds = np.searchsorted(stream, np.arange(nstreams + 1)).astype(np.int64)
    s = disk.seek
    seek = np.array([s.short_a, s.short_b, s.long_c, s.long_e, float(s.break_cyl)])
    issue, start, finish, dist = run_kernel(
        cyl[order],
        angle[order],
        xfer[order],
        req.arrival[order].astype(np.float64),
        stream.astype(np.int64),
        order.astype(np.int64),
        bounds,
        slots,
        queue,
        POLICIES.index(policy),
        seek,
        disk.overhead_ms / 1000.0,
        disk.revolution_s,
    )
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return ReplayResult(issue[back], start[back], finish[back], dist[back])


def _replay_python(
    disk: DiskParams,
    req: Requests,
    cyl: NDArray[np.int64],
    angle: NDArray[np.float64],
    xfer: NDArray[np.float64],
    depth: int,
    queue: int,
    policy: str,
) -> ReplayResult:
    ref = ReferenceReplay(disk, depth, queue, policy)
    ref.run(cyl.tolist(), angle.tolist(), xfer.tolist(), req.arrival.tolist(), req.stream.tolist())
    n = len(req)
    return ReplayResult(
        np.array([ref.issue[j] for j in range(n)]),
        np.array([ref.start[j] for j in range(n)]),
        np.array([ref.finish[j] for j in range(n)]),
        np.array([ref.dist[j] for j in range(n)], dtype=np.int64),
    )
