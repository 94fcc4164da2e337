"""Accesses per second, on one core, of membal's LRU simulator, exact miss-ratio curves (in memory, and
streamed in chunks) and SHARDS-sampled curves (rate 0.01, and 8,000 keys), beside libCacheSim's LRU on the
same page stream (the CloudPhysics sample expanded to 4 KiB pages; one cache size per run).
libCacheSim (GPL) is a referee here only, never a run-time dependency.

Goals: >= 20 M accesses/s for the simulator, >= 5 M/s for exact curves. Run:
    .venv/bin/python benchmarks/membal_speed.py
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vmio.membal.engine import FastEngine
from vmio.membal.outcome import run_scenario
from vmio.membal.reference import lru_hits as reference_lru_hits
from vmio.membal.scenario import load_scenario
from vmio.mrc import exact as mrc
from vmio.mrc.curve import Sampling, stream_curve
from vmio.traces.cloudphysics import iter_vscsi_pages, read_vscsi_pages

CASE1 = Path(__file__).resolve().parents[1] / "examples" / "membal" / "case1-web-burst.toml"
TRACE = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "cloudphysics_vscsi_sample.csv"
EPOCH = 100_000
CHUNK = 1 << 20
SAMPLINGS = (Sampling(1.0), Sampling(0.01), Sampling(1.0, 8_000))


def best_of(n: int, fn: Callable[[], object]) -> float:
    """The fastest of ``n`` runs in CPU seconds of this process (after a warm-up run that also compiles).

    CPU time, not wall time: the figure is per core, and the machine may be shared."""
    fn()
    times = []
    for _ in range(n):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def simulate(vms: np.ndarray, pages: np.ndarray, n_pages: int, capacity: int) -> None:
    """The simulator's inner loop as the simulator drives it: one kernel call per epoch, resizes between."""
    n_vms = int(vms.max()) + 1
    engine = FastEngine(n_vms, n_pages)
    for v in range(n_vms):
        engine.set_capacity(v, capacity)
    for e, lo in enumerate(range(0, pages.size, EPOCH)):
        engine.run(vms[lo : lo + EPOCH], pages[lo : lo + EPOCH])
        engine.set_capacity(e % n_vms, capacity - 1000 * (e % 3))


def curve_rates(label: str, pages: np.ndarray, repeats: int) -> None:
    """The streamed curve at every sampling, fed ``CHUNK`` pages at a time."""
    chunks = [pages[lo : lo + CHUNK] for lo in range(0, pages.size, CHUNK)]
    for sampling in SAMPLINGS:
        name = "exact curve, streamed" if sampling.exact else f"curve, {sampling.describe()}"
        report(f"{name}, {label}", pages.size, best_of(repeats, lambda s=sampling: stream_curve(chunks, s)))


def libcachesim_rate(pages: np.ndarray, capacity: int) -> tuple[float, int] | None:
    """libCacheSim's LRU over ``pages``: (accesses/s, hits). Its python binding (0.3.5) has no SHARDS
    sampler ("SHARDS_SAMPLER is not added") and crashed with its spatial one, so it is timed unsampled."""
    try:
        import libcachesim as lcs
    except ImportError:
        return None
    rec = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pages.oracleGeneral.bin"
        data = np.zeros(pages.size, dtype=rec)
        data["time"], data["id"], data["size"], data["next"] = 1, pages + 1, 1, -1
        data.tofile(path)
        result: list[float] = []

        def run() -> None:  # hashpower 20: a table sized for the trace's ~270k pages, not the default 2^24
            reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
            result.append(lcs.LRU(cache_size=capacity, hashpower=20).process_trace(reader)[0])

        seconds = best_of(3, run)
    return pages.size / seconds, round((1 - result[-1]) * pages.size)


def report(label: str, accesses: int, seconds: float, goal: float | None = None) -> None:
    rate = accesses / seconds / 1e6
    mark = (
        "" if goal is None else ("  (goal {:.0f} M/s: {})".format(goal, "met" if rate >= goal else "MISSED"))
    )
    print(f"{label:<58}{rate:8.1f} M accesses/s{mark}")


def main() -> None:
    rng = np.random.default_rng(1)
    n = 10_000_000
    vms = rng.integers(0, 3, n).astype(np.int64)
    local = np.where(vms == 0, rng.integers(0, 400_000, n), rng.zipf(1.2, n) % 1_000_000)
    pages = (vms * 1_000_000 + local).astype(np.int64)
    print(f"numba kernels, 1 thread; synthetic: 3 VMs, {n:,} accesses; trace: {TRACE.name}")
    report(
        "simulator, 3 VMs x 100k-page LRU, synthetic",
        n,
        best_of(3, lambda: simulate(vms, pages, 3_000_000, 100_000)),
        20,
    )
    report(
        "exact MRC (Mattson stack distances), synthetic", n, best_of(2, lambda: mrc.stack_distances(pages)), 5
    )
    curve_rates("synthetic", pages, 2)
    case1 = load_scenario(CASE1)
    runs = len(case1.policies)
    seconds = best_of(1, lambda: run_scenario(case1))
    report(f"end to end: {CASE1.name}, {runs} policies + bounds", case1.accesses * runs, seconds)
    if not TRACE.exists():
        print(f"(no trace at {TRACE}: skipping the trace figures)")
        return
    trace = read_vscsi_pages(TRACE)
    dense, n_pages = mrc.dense_pages(trace)
    zeros = np.zeros(dense.size, dtype=np.int64)
    cap = 20_000
    report(
        "simulator, 1 VM x 20k-page LRU, CloudPhysics pages",
        dense.size,
        best_of(5, lambda: simulate(zeros, dense, n_pages, cap)),
        20,
    )
    report("exact MRC, CloudPhysics pages", dense.size, best_of(5, lambda: mrc.stack_distances(dense)), 5)
    curve_rates("CloudPhysics", trace, 5)
    report(
        "CSV reader, streamed in chunks (pages/s), CloudPhysics",
        trace.size,
        best_of(2, lambda: sum(c.size for c in iter_vscsi_pages(TRACE, chunk=CHUNK))),
    )
    t = time.process_time()
    ref_hits = reference_lru_hits(dense[:200_000].tolist(), cap)
    report("plain-Python reference LRU (first 200k pages)", 200_000, time.process_time() - t)
    lcs = libcachesim_rate(dense, cap)
    if lcs is None:
        print("libcachesim is not installed (pip install '.[dev]'): no comparison")
    else:
        rate, hits = lcs
        engine = FastEngine(1, n_pages)
        engine.set_capacity(0, cap)
        ours = engine.run(zeros, dense).hits[0]
        label = "libCacheSim LRU (process_trace, C reader), CloudPhysics pages"
        print(f"{label:<58}{rate / 1e6:8.1f} M accesses/s  (hits {hits}, ours {ours})")
        print(f"(plain-Python reference hits on the first 200k pages: {ref_hits})")


if __name__ == "__main__":
    main()
