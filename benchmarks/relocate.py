"""Relocation benchmark: replay speed of the disk model, and before/after gains on FFSB-like streams.

Run: .venv/bin/python benchmarks/relocate.py [--requests N] [--seeds K]
Prints requests/s of the compiled replay (FCFS and elevator) and, for 2 and 3 VMs (100 GiB images, 2 GiB
hot each, the seed-003 set-up as vmio models it), the throughput gain of the plan with in-zone order by image
(no ordering), by first access and by co-access sequence, as median and range over seeds.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from vmio.relocate.disk import DRIVE_7200
from vmio.relocate.evaluate import HotChoice, ReplaySetup, evaluate
from vmio.relocate.layout import Layout
from vmio.relocate.replay import Requests, replay
from vmio.relocate.synthetic import FfsbSpec, ffsb_stream, hot_regions

GiB = 1 << 30


def replay_speed(n: int, policy: str, depth: int) -> float:
    rng = np.random.default_rng(1)
    req = Requests(
        (rng.integers(0, DRIVE_7200.capacity_bytes // 4096 - 1, n) * 4096).astype(np.int64),
        np.full(n, 4096, dtype=np.int64),
        rng.integers(0, 3, n).astype(np.int64),
        np.zeros(n),
    )
    replay(DRIVE_7200, Requests(req.offset[:100], req.length[:100], req.stream[:100], req.arrival[:100]))
    start = time.perf_counter()
    replay(DRIVE_7200, req, depth=depth, policy=policy)
    return n / (time.perf_counter() - start)


def gains(vms: int, seed: int, requests: int, policy: str, depth: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    spec = FfsbSpec(
        vms=vms, image_bytes=100 * GiB, hot_bytes=2 * GiB, requests_per_vm=requests, threads=depth
    )
    starts = hot_regions(spec, rng, 1 << 20)
    profile, stream = ffsb_stream(spec, starts, rng), ffsb_stream(spec, starts, rng)
    layout = Layout.consecutive(profile.images, [spec.image_bytes] * vms, 1 << 20, DRIVE_7200.capacity_bytes)
    ev = evaluate(
        layout, profile, stream, ReplaySetup(DRIVE_7200, depth, policy), HotChoice(budget_bytes=2 * GiB)
    )
    return ev.order_gains


def _fmt(values: list[float]) -> str:
    return f"{statistics.median(values):+.1%} [{min(values):+.1%} .. {max(values):+.1%}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=30_000, help="synthetic requests per VM")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--replay-n", type=int, default=2_000_000)
    args = ap.parse_args()
    for policy, depth in (("fcfs", 1), ("elevator", 4)):
        print(
            f"replay speed ({policy}, depth {depth}/stream, 3 streams, {args.replay_n:,} requests): "
            f"{replay_speed(args.replay_n, policy, depth) / 1e6:.2f} M requests/s (goal >= 1 M/s)"
        )
    print(
        f"\nFFSB-like gains, 7200 rpm 1 TB model, median [min .. max] over {args.seeds} seeds; "
        "seed 003 measured +10 % (2 VMs) and +20 % (3 VMs)"
    )
    for policy, depth in (("fcfs", 1), ("elevator", 4)):
        for vms in (2, 3):
            runs = [gains(vms, s, args.requests, policy, depth) for s in range(args.seeds)]
            cols = ", ".join(f"{o}: {_fmt([r[o] for r in runs])}" for o in ("image", "first", "coaccess"))
            print(f"  {vms} VMs, {policy}, {depth} thread(s)/VM -> {cols}")


if __name__ == "__main__":
    main()
