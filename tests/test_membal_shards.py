"""SHARDS sampled stack distances: the compiled sampler against its plain-Python twin and the exact kernel."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.membal import reference
from vmio.mrc import exact as mrc
from vmio.mrc import shards
from vmio.mrc.curve import ReuseHistogram, Sampling, stream_curve


def synthetic(seed: int, n: int = 30_000) -> np.ndarray:
    """Uniform, hot-set and sequential accesses over a few thousand keys, some of them large."""
    rng = np.random.default_rng(seed)
    parts = [rng.integers(0, 3_000, n // 2), rng.zipf(1.2, n // 4) % 5_000, np.arange(n - n // 2 - n // 4)]
    return (np.concatenate(parts) * 7_919 + (1 << 40)).astype(np.int64)


def fed(keys: np.ndarray, sampling: Sampling, pieces: int) -> list[tuple[int, float, float]]:
    """Every sampled access as (index in the whole stream, scaled distance, weight), fed in ``pieces``."""
    sampler = sampling.sampler()
    out, offset = [], 0
    for chunk in np.array_split(keys, pieces):
        got = sampler.feed(chunk)
        out += [
            (int(i) + offset, float(d), float(w))
            for i, d, w in zip(got.index, got.distance, got.weight, strict=True)
        ]
        offset += chunk.size
    return out


def test_the_hash_is_splitmix64_and_the_same_in_both_twins() -> None:
    keys = np.array([0, 1, 2**40, 2**63 - 1], dtype=np.int64)
    assert int(shards.key_hash(keys)[0]) == 0xE220A8397B1DCDAF  # SplitMix64's first output from seed 0
    assert shards.key_hash(keys).tolist() == [reference.hash_key(int(k)) for k in keys]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    "sampling",
    [Sampling(1.0), Sampling(0.1), Sampling(0.01), Sampling(1.0, 500), Sampling(0.3, 64), Sampling(1.0, 1)],
)
def test_compiled_sampler_equals_the_plain_python_one(seed: int, sampling: Sampling) -> None:
    keys = synthetic(seed)
    expected = reference.shards_distances(keys.tolist(), sampling.rate, sampling.size)
    assert fed(keys, sampling, 9) == expected
    assert len(expected) > 10


def test_rate_one_gives_exact_stack_distances() -> None:
    keys = synthetic(3, 60_000)
    got = Sampling().sampler().feed(keys)
    assert got.index.tolist() == list(range(keys.size))
    assert np.array_equal(got.distance, mrc.stack_distances(keys))
    assert (got.weight == 1.0).all()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 2**62), min_size=1, max_size=30).flatmap(
        lambda pool: st.lists(st.sampled_from(pool), min_size=1, max_size=400)
    ),
    st.integers(1, 50),
)
def test_rate_one_curve_equals_the_exact_curve_on_random_traces(keys: list[int], chunk: int) -> None:
    pages = np.asarray(keys, dtype=np.int64)
    curve = stream_curve((pages[i : i + chunk] for i in range(0, pages.size, chunk)), Sampling(1.0))
    exact = mrc.hit_curve(mrc.stack_distances(pages), len(set(keys)) + 1)
    sizes = np.arange(exact.size)
    assert np.allclose(curve.at(sizes), 1 - exact / pages.size)
    assert curve.keys == len(set(keys)) and curve.sampled == curve.accesses == pages.size


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 300), min_size=1, max_size=600),
    st.sampled_from([0.05, 0.3, 1.0]),
    st.one_of(st.none(), st.integers(1, 40)),
    st.integers(1, 8),
)
def test_any_chunking_gives_the_reference_result(
    keys: list[int], rate: float, size: int | None, pieces: int
) -> None:
    expected = reference.shards_distances(keys, rate, size)
    assert fed(np.asarray(keys, dtype=np.int64), Sampling(rate, size), pieces) == expected


def test_fixed_size_holds_at_most_its_keys_and_lowers_the_rate() -> None:
    sampler = shards.ShardsSampler(1.0, size=300)
    rng = np.random.default_rng(4)
    for _ in range(20):
        sampler.feed(rng.integers(0, 1 << 30, 5_000))
        assert sampler.keys_held <= 300
    assert sampler.keys_held == 300
    assert 0 < sampler.rate < 300 / 50_000 * 2  # about size / distinct keys
    assert sampler._state[0].shape[0] <= 1024  # its hash table never grew past the bound


def test_fixed_rate_samples_about_its_share_of_keys() -> None:
    keys = np.arange(200_000, dtype=np.int64)
    got = shards.ShardsSampler(0.01).feed(keys)
    assert 1_700 < got.index.size < 2_300
    assert np.allclose(got.weight, 1 / shards.ShardsSampler(0.01).rate)


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5])
def test_rates_outside_zero_one_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="not in"):
        Sampling(bad)


def test_negative_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        shards.ShardsSampler().feed(np.array([3, -1]))


def test_histogram_merges_bins_when_distances_outgrow_it() -> None:
    hist = ReuseHistogram(max_bins=8)
    hist.add(np.array([0.0, 3.0, 7.0, -1.0]), np.ones(4))
    assert hist.grain == 1 and hist.bins.tolist() == [1, 0, 0, 1, 0, 0, 0, 1] and hist.cold == 1
    hist.add(np.array([20.0]), np.ones(1))  # needs bin 20: grain 4 (bins of 4 pages)
    assert hist.grain == 4 and hist.bins.tolist() == [2, 1, 0, 0, 0, 1]
    curve = hist.curve(accesses=5, sampled=5, keys=1, rate=1.0, method="exact")
    assert curve.sizes.tolist() == [0, 4, 8, 12, 16, 20, 24]
    assert curve.miss_ratio.tolist() == pytest.approx([1.0, 0.6, 0.4, 0.4, 0.4, 0.4, 0.2])


def test_the_sampled_bound_stays_near_the_exact_bound_with_a_hot_key() -> None:
    """uniform-vs-skewed: the skewed VM's hottest pages are in or out of a sample by the hash. Without
    SHARDS_adj per epoch the estimated hits exceeded the accesses (optimal 0.966 against the exact 0.595)."""
    from pathlib import Path

    from vmio.membal.bounds import exact_curves, sampled_curves
    from vmio.membal.outcome import run_scenario
    from vmio.membal.scenario import load_scenario
    from vmio.membal.simulator import build_streams

    scenario = load_scenario(Path(__file__).parents[1] / "examples" / "membal" / "uniform-vs-skewed.toml")
    scenario = dataclasses.replace(scenario, policies=("equal",))
    streams = build_streams(scenario, np.random.default_rng(scenario.seed))
    exact = exact_curves(scenario, streams)
    for sampling in (Sampling(0.1), Sampling(0.1, seeds=2)):
        sampled = sampled_curves(scenario, streams, sampling)
        for s, e, pos in zip(sampled, exact, streams.position, strict=True):
            accesses = np.bincount(pos // scenario.epoch, minlength=e.shape[0])
            assert (s[:, -1] <= accesses + 1e-6).all()  # per epoch: no more hits than accesses
            assert abs(float(s[:, -1].sum()) / float(e[:, -1].sum()) - 1) < 0.05
        bound = run_scenario(scenario, curves=sampling).optimal.hit_ratio
        assert abs(bound - run_scenario(scenario).optimal.hit_ratio) < 0.03  # measured: 0.608, 0.607 vs 0.595
