"""The compiled LRU and stack-distance kernels against their plain-Python twins and libCacheSim's LRU."""

from __future__ import annotations

import numpy as np
import pytest

from vmio.membal import engine, kernels, reference
from vmio.mrc import exact as mrc
from vmio.traces.cloudphysics import read_vscsi_pages

from conftest import CLOUDPHYSICS_SAMPLE

TRACE = CLOUDPHYSICS_SAMPLE


def synthetic(seed: int, n: int = 20_000) -> np.ndarray:
    """A mix of uniform, hot-set and sequential accesses over a few hundred pages."""
    rng = np.random.default_rng(seed)
    parts = [rng.integers(0, 400, n // 2), rng.zipf(1.3, n // 4) % 300, np.arange(n - n // 2 - n // 4) % 250]
    stream = np.concatenate(parts)
    rng.shuffle(stream[: n // 2])
    return stream.astype(np.int64)


def libcachesim_lru_hits(pages: np.ndarray, capacity: int) -> int:
    lcs = pytest.importorskip("libcachesim", reason="libcachesim (dev extra) is not installed")
    cache = lcs.LRU(cache_size=capacity)
    req = lcs.Request()
    req.obj_size = 1
    hits = 0
    for p in pages.tolist():
        req.obj_id = p
        hits += bool(cache.get(req))
    return hits


@pytest.fixture(scope="module")
def trace_pages() -> np.ndarray:
    if not TRACE.exists():
        pytest.skip(f"the shared CloudPhysics trace is not at {TRACE}")
    return read_vscsi_pages(TRACE)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("capacity", [0, 1, 7, 64, 333])
def test_fast_lru_equals_reference_and_libcachesim_on_synthetic(seed: int, capacity: int) -> None:
    pages = synthetic(seed)
    fast = engine.lru_hits(pages, capacity)
    assert fast == reference.lru_hits(pages.tolist(), capacity)
    if capacity > 0:  # libCacheSim has no zero-sized cache
        assert fast == libcachesim_lru_hits(pages, capacity)


@pytest.mark.parametrize("capacity", [1_000, 20_000])
def test_fast_lru_equals_reference_and_libcachesim_on_cloudphysics(
    trace_pages: np.ndarray, capacity: int
) -> None:
    fast = engine.lru_hits(trace_pages, capacity)
    assert fast == reference.lru_hits(trace_pages.tolist(), capacity)
    assert fast == libcachesim_lru_hits(trace_pages, capacity)
    assert 0 < fast < trace_pages.size


def test_exact_mrc_on_cloudphysics_matches_the_simulator(trace_pages: np.ndarray) -> None:
    curve = mrc.hit_curve(mrc.stack_distances(trace_pages), 20_000)
    for capacity in (1, 1_000, 20_000):
        assert curve[capacity] == engine.lru_hits(trace_pages, capacity)


@pytest.mark.parametrize("seed", [4, 5])
def test_stack_distances_equal_the_explicit_stack(seed: int) -> None:
    pages = synthetic(seed, 5_000)  # 5,000 accesses over <= 400 pages: the 1,024 slots are packed often
    assert mrc.stack_distances(pages).tolist() == reference.stack_distances(pages.tolist())


@pytest.mark.parametrize("n_pages", [1, 2, 63, 64, 65, 700])
def test_stack_distances_across_word_edges_and_repacking(n_pages: int) -> None:
    rng = np.random.default_rng(n_pages)
    pages = np.concatenate([np.arange(3_000) % n_pages, rng.integers(0, n_pages, 3_000)]).astype(np.int64)
    assert mrc.stack_distances(pages).tolist() == reference.stack_distances(pages.tolist())


def test_hit_curve_gives_lru_hits_at_every_size() -> None:
    pages = synthetic(6, 4_000)
    curve = mrc.hit_curve(mrc.stack_distances(pages), 420)
    expected = [reference.lru_hits(pages.tolist(), c) for c in range(0, 421, 15)]
    assert curve[::15].tolist() == expected


def test_hit_curve_on_a_grain_samples_the_page_curve() -> None:
    dist = mrc.stack_distances(synthetic(7, 4_000))
    fine = mrc.hit_curve(dist, 400)
    assert mrc.hit_curve(dist, 40, grain=10).tolist() == fine[::10].tolist()


def test_engine_shrink_evicts_least_recent_pages() -> None:
    fast = engine.FastEngine(1, 10)
    ref = reference.ReferenceEngine(1, 10)
    for e in (fast, ref):
        e.set_capacity(0, 5)
    stream = np.array([0, 1, 2, 3, 4, 0, 1], dtype=np.int64)
    vms = np.zeros(stream.size, dtype=np.int64)
    assert fast.run(vms, stream) == ref.run(vms, stream) == ([2], [2], [0], [0])
    for e in (fast, ref):
        e.set_capacity(0, 2)  # keeps 0 and 1, the most recent; evicts 2, 3, 4 (evictions 1, 2, 3)
    # 4 refaults 0 evictions after its own (3): an activation; it evicts 1 (eviction 4). 5 is new and
    # evicts 0 (5). 2 refaults 4 evictions after its own (1), more than the 2 pages cached: not one.
    again = np.array([1, 0, 4, 5, 2], dtype=np.int64)
    assert fast.run(vms[:5], again) == ref.run(vms[:5], again) == ([2], [2], [2], [1])
    assert fast.resident() == ref.resident() == [2]


def test_sampled_distances_estimate_the_exact_curve() -> None:
    rng = np.random.default_rng(8)
    pages = rng.integers(0, 5_000, 200_000)
    exact = mrc.hit_curve(mrc.stack_distances(pages), 5_000).astype(float)
    mask, scaled = mrc.sampled_distances(pages, 0.1)
    assert 0.05 < mask.mean() < 0.15
    est = np.array([(scaled[(scaled >= 0)] < c).sum() for c in (1_000, 2_500, 4_000)]) / 0.1
    assert np.allclose(est, exact[[1_000, 2_500, 4_000]], rtol=0.1)


@pytest.mark.parametrize("ids", [[5, 3, 5, 9], [0], [2**40, 7, 2**40], []])
def test_dense_pages_keeps_order_by_lookup_or_by_sorting(ids: list[int]) -> None:
    pages = np.asarray(ids, dtype=np.int64)
    dense, n = mrc.dense_pages(pages)
    uniq, inverse = np.unique(pages, return_inverse=True)
    assert dense.tolist() == inverse.tolist() and n == uniq.size


@pytest.mark.parametrize("seed", [9, 10])
def test_fast_engine_equals_reference_on_epochs_shorter_and_longer_than_the_lookahead(seed: int) -> None:
    """``lru_run`` fetches rows ``LOOKAHEAD`` accesses ahead; epochs of every length around it, with
    resizes between, must still give exactly the plain-Python engine's counts."""
    rng = np.random.default_rng(seed)
    fast, ref = engine.FastEngine(3, 900), reference.ReferenceEngine(3, 900)
    for length in [*range(0, 2 * kernels.LOOKAHEAD + 2), 5_000]:
        vms = rng.integers(0, 3, length).astype(np.int64)
        pages = (vms * 300 + rng.zipf(1.2, length) % 300).astype(np.int64)
        assert fast.run(vms, pages) == ref.run(vms.tolist(), pages.tolist())
        for vm, capacity in enumerate(rng.integers(0, 200, 3).tolist()):
            fast.set_capacity(vm, capacity)
            ref.set_capacity(vm, capacity)
        assert fast.resident() == ref.resident()
