"""vmio's own Student t quantile (Welch's interval without scipy), held to scipy and to closed forms."""

import math

import pytest
from scipy.stats import t as scipy_t
from scipy.stats import ttest_ind

from vmio.stats.spread import welch
from vmio.stats.student import incomplete_beta, t_quantile

DFS = [1, 1.3, 2, 2.5, 3, 4, 5, 7.7, 10, 17.25, 30, 100, 1000, 1e5]
PS = [0.6, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995, 0.025, 0.1]


@pytest.mark.parametrize("df", DFS)
def test_quantile_matches_scipy(df: float) -> None:
    for p in PS:
        assert t_quantile(p, df) == pytest.approx(float(scipy_t.ppf(p, df)), rel=1e-9), (p, df)


@pytest.mark.parametrize("p", [0.5000001, 0.7, 0.975, 0.9995, 0.99999])
def test_quantile_closed_forms(p: float) -> None:
    # df = 1 is Cauchy; df = 2 has F^-1(p) = (2p - 1) / sqrt(2 p (1 - p))
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)


def test_quantile_is_odd_and_zero_at_the_median() -> None:
    assert t_quantile(0.5, 3.3) == 0.0
    assert t_quantile(0.025, 6.5) == -t_quantile(0.975, 6.5)


def test_incomplete_beta_matches_closed_form() -> None:
    # I_x(a, 1) = x^a and I_x(1, b) = 1 - (1 - x)^b
    for x in (1e-6, 0.1, 0.5, 0.93):
        assert incomplete_beta(x, 2.7, 1) == pytest.approx(x**2.7, rel=1e-12)
        assert incomplete_beta(x, 1, 3.1) == pytest.approx(1 - (1 - x) ** 3.1, rel=1e-12)


def test_bad_arguments_say_so() -> None:
    with pytest.raises(ValueError, match="df=0"):
        t_quantile(0.975, 0)
    with pytest.raises(ValueError, match="p=1"):
        t_quantile(1, 3)


def test_welch_interval_matches_scipy() -> None:
    before, after = [101.0, 99.5, 100.2, 98.7], [103.1, 104.9, 102.2]
    d = welch(before, after)
    assert d is not None and d.lo is not None and d.hi is not None
    res = ttest_ind(after, before, equal_var=False)
    lo, hi = res.confidence_interval(0.95)
    assert (d.lo, d.hi) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))
