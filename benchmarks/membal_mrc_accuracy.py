"""Mean absolute error of sampled miss-ratio curves against the exact curve of the CloudPhysics sample
(untiled: 1,141,869 page accesses over 269,210 distinct 4 KiB pages), per estimator, at rates 0.01 and
0.001, with the work each one does. Run:
    .venv/bin/python benchmarks/membal_mrc_accuracy.py

The MAE is over every cache size from 1 page to the distinct pages (exact curve at each size, the sampled
curve interpolated), except the row that keeps only the sizes a sample at rate R can resolve (>= 1/R pages).
Work: accesses hashed (every access, once per sample) and accesses sampled (those that touch the stack);
memory: keys held. "HLL" rows scale the sample's misses (and by default its distances too) by a
HyperLogLog count of the distinct pages over the sample's own count. A mean of K seeds is K samples at the same rate with independent hash salts: K times
one sample's work and memory, though each pass samples at the stated rate.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from vmio.mrc import exact as mrc
from vmio.mrc.curve import MissRatioCurve, ReuseHistogram, Sampling, feed_all, stream_curve
from vmio.traces.cloudphysics import read_vscsi_pages

TRACE = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "cloudphysics_vscsi_sample.csv"
RATES = (0.01, 0.001)
SEEDS = (4, 8, 16)
SALTS = 40


def mae(curve: MissRatioCurve, exact: np.ndarray, lowest: int = 1) -> float:
    sizes = np.arange(lowest, exact.size)
    return float(np.abs(curve.at(sizes) - exact[lowest:]).mean())


def unadjusted(pages: np.ndarray, rate: float) -> MissRatioCurve:
    """Plain SHARDS: misses over the sample's own accesses x 1/R instead of the trace's accesses."""
    hist = ReuseHistogram()
    samplers = Sampling(rate).samplers()
    for out in feed_all(samplers, pages):
        hist.add(out.distance, out.weight)
    total = hist.cold + float(hist.bins.sum())
    s = samplers[0][1]
    return hist.curve(round(total), s.sampled, s.keys_held, s.rate, "unadjusted")


def row(label: str, curve: MissRatioCurve, exact: np.ndarray, passes: int, lowest: int = 1) -> None:
    print(
        f"  {label:<52}{mae(curve, exact, lowest):>8.4f}{curve.rate:>10.5f}{passes:>7}"
        f"{curve.sampled:>10,}{curve.keys:>9,}"
    )


def over_salts(
    pages: np.ndarray,
    exact: np.ndarray,
    sampling: Sampling,
    distinct: bool,
    stretch: bool = True,
    n: int = SALTS,
) -> str:
    """One seed's MAE over ``n`` hash salts (the trace's keys XOR a salt): mean and worst."""
    span = (1 << 62) - 1
    salts = np.random.default_rng(7).integers(1, span, n)
    got = [
        mae(stream_curve([pages ^ np.int64(s)], sampling, distinct=distinct, stretch=stretch), exact)
        for s in salts
    ]
    return f"mean {np.mean(got):.4f}, worst {np.max(got):.4f}"


def main() -> None:
    if not TRACE.exists():
        print(f"no trace at {TRACE}")
        return
    pages = read_vscsi_pages(TRACE)
    distinct = int(np.unique(pages).size)
    exact = 1 - mrc.hit_curve(mrc.stack_distances(pages), distinct) / pages.size
    print(
        f"{TRACE.name}: {pages.size:,} page accesses, {distinct:,} distinct pages; MAE against the exact curve"
    )
    print("passes: samples taken, each hashing every access (work and memory scale with it)")
    print(f"  {'estimator':<52}{'MAE':>8}{'rate':>10}{'passes':>7}{'sampled':>10}{'keys':>9}")
    stream_curve([pages[:1000]], Sampling(0.5))  # compile the kernels before timing
    for rate in RATES:
        print(f"rate {rate:g}:")
        adj = stream_curve([pages], Sampling(rate), distinct=False)
        row("SHARDS_adj", adj, exact, 1)
        row("SHARDS, unadjusted", unadjusted(pages, rate), exact, 1)
        row(f"SHARDS_adj, sizes >= 1/R = {round(1 / rate)} pages only", adj, exact, 1, round(1 / rate))
        row(
            "SHARDS_adj + HLL, misses scaled",
            stream_curve([pages], Sampling(rate), stretch=False),
            exact,
            1,
        )
        row(
            "SHARDS_adj + HLL, misses and distances (default)",
            stream_curve([pages], Sampling(rate)),
            exact,
            1,
        )
        size = max(1, round(rate * distinct))
        fixed = Sampling(1.0, size)
        row(f"fixed size s_max = {size:,}", stream_curve([pages], fixed, distinct=False), exact, 1)
        row(
            f"fixed size s_max = {size:,} + HLL, misses scaled",
            stream_curve([pages], fixed, stretch=False),
            exact,
            1,
        )
        row(
            f"fixed size s_max = {size:,} + HLL, misses and distances", stream_curve([pages], fixed), exact, 1
        )
        for k in SEEDS:
            row(
                f"SHARDS_adj + HLL, mean of {k} hash seeds",
                stream_curve([pages], Sampling(rate, seeds=k)),
                exact,
                k,
            )
        one = Sampling(rate)
        print(f"  one seed over {SALTS} salts:")
        print(f"    SHARDS_adj {over_salts(pages, exact, one, False)}")
        print(f"    + HLL, misses scaled {over_salts(pages, exact, one, True, False)}")
        print(f"    + HLL, misses and distances (default) {over_salts(pages, exact, one, True)}")
        print(f"    fixed size {size:,} + HLL, misses and distances {over_salts(pages, exact, fixed, True)}")
        started = time.perf_counter()
        stream_curve([pages], one)
        took = time.perf_counter() - started
        print(
            f"  one pass (sampler and distinct count), in memory: {pages.size / took / 1e6:.0f} M accesses/s"
        )


if __name__ == "__main__":
    main()
