"""Model error against a local Ceph cluster across block sizes (goal: mean latency within 20 %).

Brings a throwaway 3-OSD cluster up (or uses --dir), measures bitisle-dstore-2014's profile at 4K-1M, fits the model
(a) at every block size and (b) at 4K/64K/1M only (the others held out), and prints each fit's
mean-latency error per block size.
Then it checks two what-if answers against measurement: pool size 2 and RBD striping (64K x 4), both
predicted from the size-3, unstriped fit. Removes the cluster it started.

    .venv/bin/python benchmarks/dstore_model.py [--dir D] [--runtime 5s] [--reps 3] [--no-what-if]

On a shared 2-core machine the measurements move with the other load (the load average is printed);
medians over whole repeated sweeps damp that.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from vmio.dstore import cluster
from vmio.dstore import variants as compare
from vmio.dstore.calibrate import Fit, fit_profile, parse_network, what_if
from vmio.dstore.model import StoreParams
from vmio.dstore.profile import DEFAULT_BS, Criteria, Point, Profile, run_profile, verdict
from vmio.system.process import Runner
from vmio.units import format_size, parse_duration

SUBSET = [4 << 10, 64 << 10, 1 << 20]
WHAT_IF_BS = [4 << 10, 64 << 10, 1 << 20]


def error_table(title: str, measured: Profile, fits: dict[str, Fit], **changes: int) -> list[float]:
    """Print measured vs predicted mean latency per block size; return the first fit's errors."""
    bs_list = [p.bs for p in measured.points]
    preds = {name: what_if(fit, bs_list, **changes) for name, fit in fits.items()}  # type: ignore[arg-type]
    print(f"\n{title}")
    head = "".join(f" {name + ' ms':>16} {'err':>7}" for name in fits)
    print(f"{'bs':>6} {'IOPS':>7} {'meas ms':>9}{head}")
    first: list[float] = []
    for i, point in enumerate(measured.points):
        row = f"{format_size(point.bs):>6} {point.iops:7.0f} {point.mean_lat_ms:9.1f}"
        for j, name in enumerate(fits):
            pred = preds[name][i].mean_lat_ms
            err = pred / point.mean_lat_ms - 1.0
            row += f" {pred:16.1f} {err:+7.1%}"
            if j == 0:
                first.append(err)
        print(row)
    return first


def summary(label: str, errors: list[float]) -> None:
    absolute = [abs(e) for e in errors]
    within = sum(e <= 0.20 for e in absolute)
    print(
        f"{label}: median |error| {statistics.median(absolute):.1%}, max {max(absolute):.1%}, "
        f"within 20 %: {within}/{len(absolute)}"
    )


def measure(ref: cluster.ClusterRef, runtime: float, bs: list[int], runner: Runner, reps: int) -> Profile:
    """The profile repeated ``reps`` times (whole sweeps, so drifting load hits every size); medians."""

    def show(p: Point) -> None:
        print(f"  measured {format_size(p.bs)}: {p.iops:.0f} IOPS, {p.mean_lat_ms:.1f} ms", file=sys.stderr)

    sweeps = [
        run_profile(ref, bs, runtime_s=runtime, ramp_s=1.0, runner=runner, on_point=show) for _ in range(reps)
    ]
    points = []
    for i, bs_i in enumerate(bs):
        runs = [s.points[i] for s in sweeps]
        iops = statistics.median(p.iops for p in runs)
        mean = statistics.median(p.mean_lat_ms for p in runs)
        p99 = statistics.median(p.p99_lat_ms for p in runs)
        spread = (max(p.iops for p in runs) - min(p.iops for p in runs)) / iops
        print(
            f"  {format_size(bs_i)}: median {iops:.0f} IOPS over {reps} runs, spread {spread:.0%}",
            file=sys.stderr,
        )
        points.append(make_point_from(bs_i, iops, mean, p99, sweeps[0].criteria))
    return Profile(points, sweeps[0].criteria, sweeps[0].setup)


def make_point_from(bs: int, iops: float, mean: float, p99: float, criteria: Criteria) -> Point:
    return Point(bs, iops, iops * bs / 1e6, mean, p99, verdict(mean, iops, criteria))


def run(ref: cluster.ClusterRef, runtime: float, with_what_if: bool, reps: int) -> None:
    runner = Runner()
    base = StoreParams(
        replicas=ref.replicas, devices=ref.osds, hosts=ref.osds, net_bw=parse_network("loopback"), rtt_s=5e-5
    )
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    profile = measure(ref, runtime, list(DEFAULT_BS), runner, reps)
    fits = {"fit-all": fit_profile(profile, base), "fit-4k64k1m": fit_profile(profile, base, SUBSET)}
    for name, fit in fits.items():
        p = fit.params
        print(
            f"{name}: device {p.dev_op_s * 1e3:.3f} ms/op, {p.dev_bw / 1e6:.0f} MB/s, "
            f"p99/mean {p.p99_factor:.2f}, rms log-IOPS error {fit.rms_log_error:.1%}"
        )
    errors = error_table("pool size 3, no striping (measured profile)", profile, fits)
    summary("fit-all, mean latency", errors)
    held = [
        e
        for e, p in zip(
            error_table("held-out view", profile, {"fit-4k64k1m": fits["fit-4k64k1m"]}),
            profile.points,
            strict=True,
        )
        if p.bs not in SUBSET
    ]
    summary("fit-4k64k1m, held-out block sizes", held)
    if not with_what_if:
        return
    for kind, change in (("replicas", {"replicas": 2}), ("striping", {"stripe": compare.STRIPE_COUNT})):
        variant = compare.make_variant(runner, ref, kind)
        try:
            other = measure(variant, runtime, WHAT_IF_BS, runner, reps)
        finally:
            compare.remove_variant(runner, ref, variant)
        label = compare.KINDS[kind][0]
        errs = error_table(
            f"what-if {label}: predicted from the size-3 fit", other, {"fit-all": fits["fit-all"]}, **change
        )
        summary(f"what-if {label}, mean latency", errs)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="use this running cluster instead of starting one")
    parser.add_argument("--runtime", default="5s")
    parser.add_argument("--reps", type=int, default=3, help="sweeps per configuration (medians)")
    parser.add_argument("--no-what-if", action="store_true")
    args = parser.parse_args()
    runtime = parse_duration(args.runtime)
    if args.dir is not None:
        run(cluster.load(args.dir), runtime, not args.no_what_if, args.reps)
        return 0
    with tempfile.TemporaryDirectory(prefix="vmio-dstore-bench-") as tmp:
        root = Path(tmp) / "cluster"
        ref = cluster.up(root)
        try:
            run(ref, runtime, not args.no_what_if, args.reps)
        finally:
            cluster.down(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
