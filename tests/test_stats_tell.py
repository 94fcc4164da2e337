"""The one rule for "can these repetitions tell" (vmio.stats.tell), held to scipy's own intervals."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sp

from vmio.stats.tell import change, interval, settled, side

finite = st.floats(min_value=1.0, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=2, max_size=12))
def test_interval_is_scipys_student_interval(values: list[float]) -> None:
    ci = interval(values)
    mean = sum(values) / len(values)
    sem = sp.sem(values)
    if sem == 0:
        assert ci.lo == pytest.approx(mean) and ci.hi == pytest.approx(mean)
        return
    lo, hi = sp.t.interval(0.95, len(values) - 1, loc=mean, scale=sem)
    assert ci.lo == pytest.approx(lo, rel=1e-9, abs=1e-9)
    assert ci.hi == pytest.approx(hi, rel=1e-9, abs=1e-9)


def test_one_value_cannot_tell() -> None:
    assert interval([5.0]).lo is None
    assert side([5.0], 1.0) == "inconclusive"
    assert change([5.0], [1.0], 0.1) == "inconclusive"
    assert not settled([5.0], 0.5)


def test_side_by_the_interval_not_the_mean() -> None:
    # mean 10.5 > 10, but the interval (t_0.975,3 = 3.182 × 1.29/2 = 2.05 half) contains 10
    assert side([9.0, 10.0, 11.0, 12.0], 10.0) == "inconclusive"
    assert side([19.0, 20.0, 21.0], 10.0) == "above"
    assert side([1.0, 2.0, 3.0], 10.0) == "below"


def test_change_needs_an_interval_narrower_than_the_size() -> None:
    before = [100.0, 101.0]
    # a 41 % drop measured with a wide spread: the interval of the difference spans -size .. +size
    assert change(before, [40.0, 78.0], 0.05) == "inconclusive"
    assert change([100.0, 101.0, 99.0], [59.0, 60.0, 61.0], 0.05) == "lower"
    assert change([100.0, 101.0, 99.0], [139.0, 140.0, 141.0], 0.05) == "higher"
    assert change([100.0, 101.0, 99.0], [100.5, 99.5, 100.0], 0.05) == "unchanged"
    # a small, certain change is not a change of the size asked about, and cannot be ruled one out either
    assert change([100.0, 100.1, 99.9], [103.9, 104.0, 104.1], 0.05) == "unchanged"
    assert change([100.0, 100.1, 99.9], [104.0, 106.0, 105.0], 0.05) == "inconclusive"


def test_settled_by_half_width() -> None:
    assert settled([100.0, 101.0, 99.0, 100.0], 0.05)
    assert not settled([100.0, 140.0, 60.0], 0.05)
