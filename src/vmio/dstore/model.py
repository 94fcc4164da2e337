"""A queueing model of a replicated block store under a closed load of N outstanding I/Os.

Each I/O of ``b`` bytes is split into ``k = min(stripe, ceil(b / stripe_unit))`` pieces; a read touches one
copy, a write touches every replica of every piece. Device pieces cost ``op + piece / bw`` (writes absorbed
by the write cache cost ``cache_op + piece / cache_bw``). Network links carry the bytes: the client sends one
copy to the primary, which forwards ``R - 1`` (primary-copy, like Ceph), or the client sends all ``R``
itself (client fan-out, like vSAN). Network RTTs and client overhead are a pure delay.

The solution is Schweitzer's approximate mean-value analysis, with one change for parallel pieces: the I/O
waits for the slowest of its ``m`` pieces (fork-join), taken as ``H_m`` times one piece's residence time
(the mean of the maximum of ``m`` exponentials). Throughput follows from Little's law, ``X = N / R``.
All quantities are numpy arrays so a calibration can solve many parameter sets at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from vmio.dstore.settings import WRITE_PATHS
from vmio.errors import InputError

Array = NDArray[np.float64]


@dataclass(frozen=True)
class StoreParams:
    """Topology and per-device figures; times in seconds, bandwidths in bytes per second."""

    replicas: int = 3
    devices: int = 3
    hosts: int = 3
    write_path: str = "primary"
    dev_op_s: float = 2e-4
    dev_bw: float = 500e6
    net_bw: float = 1.25e9
    rtt_s: float = 1e-4
    client_s: float = 5e-5
    stripe: int = 1
    stripe_unit: int = 64 << 10
    cache_share: float = 0.0
    cache_op_s: float = 2e-5
    cache_bw: float = 2e9
    p99_factor: float = 3.0

    def __post_init__(self) -> None:
        if self.write_path not in WRITE_PATHS:
            raise InputError(f"write path {self.write_path!r} is not one of {', '.join(WRITE_PATHS)}")
        for name in ("replicas", "devices", "hosts", "stripe", "stripe_unit"):
            if getattr(self, name) < 1:
                raise InputError(f"{name} = {getattr(self, name)!r} must be at least 1")
        if self.replicas > self.devices:
            raise InputError(f"replicas {self.replicas!r} exceed the {self.devices} devices")
        if not 0.0 <= self.cache_share <= 1.0:
            raise InputError(f"cache share {self.cache_share!r} is not a fraction 0..1")
        for name in ("dev_op_s", "dev_bw", "net_bw", "cache_bw", "p99_factor"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name} = {getattr(self, name)!r} must be positive")

    def with_(self, **changes: object) -> StoreParams:
        """A copy with ``changes`` applied (and validated)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Prediction:
    """The model's answer at one block size."""

    bs: int
    iops: float
    mb_s: float
    mean_lat_ms: float
    p99_lat_ms: float


def harmonic(m: int) -> float:
    """H_m = 1 + 1/2 + ... + 1/m: the mean of the maximum of m unit exponentials."""
    return sum(1.0 / i for i in range(1, m + 1))


def pieces(p: StoreParams, bs: int) -> int:
    """How many stripe pieces one I/O of ``bs`` bytes touches."""
    return max(1, min(p.stripe, math.ceil(bs / p.stripe_unit)))


def solve(
    p: StoreParams,
    bs: int,
    outstanding: int,
    read_frac: float,
    dev_op_s: Array | None = None,
    dev_bw: Array | None = None,
) -> tuple[Array, Array]:
    """(IOPS, mean latency in s) for ``outstanding`` I/Os; ``dev_op_s``/``dev_bw`` may be arrays."""
    op = np.atleast_1d(np.asarray(p.dev_op_s if dev_op_s is None else dev_op_s, dtype=np.float64))
    bw = np.atleast_1d(np.asarray(p.dev_bw if dev_bw is None else dev_bw, dtype=np.float64))
    op, bw = np.broadcast_arrays(op, bw)
    r, w, big_r = read_frac, 1.0 - read_frac, p.replicas
    k = pieces(p, bs)
    piece = bs / k
    s_read = op + piece / bw
    s_write = (1 - p.cache_share) * s_read + p.cache_share * (p.cache_op_s + piece / p.cache_bw)
    reads_per_io, writes_per_io = r * k, w * big_r * k
    dev_demand = (reads_per_io * s_read + writes_per_io * s_write) / p.devices
    s_mean = (reads_per_io * s_read + writes_per_io * s_write) / (reads_per_io + writes_per_io)
    net = _network_demands(p, bs, r, w)
    delay = p.client_s + p.rtt_s * (r + w * (2 if p.write_path == "primary" and big_r > 1 else 1))
    h_read, h_write = harmonic(k), harmonic(big_r * k)
    n = float(outstanding)
    q_dev = np.zeros_like(op)
    q_net = [np.zeros_like(op) for _ in net]
    x = np.zeros_like(op)
    for _ in range(400):
        seen = (n - 1.0) / n
        wait = q_dev * seen * s_mean
        dev_time = r * h_read * (s_read + wait) + w * h_write * (s_write + wait)
        net_time = [d * (1.0 + q * seen) for d, q in zip(net, q_net, strict=True)]
        resp = delay + dev_time + sum(net_time, np.zeros_like(op))
        x_new = n / resp
        q_dev_new = x_new * dev_demand * (1.0 + q_dev * seen)
        q_net = [0.5 * q + 0.5 * x_new * t for q, t in zip(q_net, net_time, strict=True)]
        done = bool(np.all(np.abs(x_new - x) <= 1e-7 * x_new))
        x, q_dev = x_new, 0.5 * q_dev + 0.5 * q_dev_new
        if done:
            break
    return x, n / x


def _network_demands(p: StoreParams, bs: int, r: float, w: float) -> list[float]:
    """Per-I/O demand (s) at each link: client tx, client rx, then one tx and one rx per host."""
    copies_from_client = 1 if p.write_path == "primary" else p.replicas
    forwarded = p.replicas - 1 if p.write_path == "primary" else 0
    client_tx = w * bs * copies_from_client / p.net_bw
    client_rx = r * bs / p.net_bw
    host_rx = w * bs * p.replicas / p.net_bw / p.hosts
    host_tx = (r * bs + w * bs * forwarded) / p.net_bw / p.hosts
    return [client_tx, client_rx] + [host_tx, host_rx] * p.hosts


def predict(
    p: StoreParams, bs_list: list[int], outstanding: int = 50, read_frac: float = 0.3
) -> list[Prediction]:
    """The model's IOPS, MB/s, mean and p99 latency at each block size."""
    out = []
    for bs in bs_list:
        x, resp = solve(p, bs, outstanding, read_frac)
        iops, mean_s = float(x[0]), float(resp[0])
        out.append(Prediction(bs, iops, iops * bs / 1e6, mean_s * 1e3, mean_s * 1e3 * p.p99_factor))
    return out
