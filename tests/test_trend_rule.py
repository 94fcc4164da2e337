"""The series rule of docs/trend.md on fixed numbers: the window, the robust spread, acceptance, and the verdicts
of ``vmio.stats.tell.change`` held against Welch's interval worked by hand (the t quantiles from a table)."""

from __future__ import annotations

import math
import statistics

import pytest

from vmio.report.trend import judge, robust


def test_a_drop_beyond_the_size_is_lower_and_its_window_is_the_nights_before() -> None:
    nights = [("n1", [100.0, 100.4]), ("n2", [100.2, 100.0]), ("n3", [80.0, 81.0])]
    entries = judge(nights, set(), 0.05)
    assert [e.verdict for e in entries] == ["first", "unchanged", "lower"]
    assert entries[2].window == ("n1", "n2")
    before = [100.0, 100.4, 100.2, 100.0]
    assert entries[2].size == pytest.approx(statistics.fmean([80.0, 81.0]) / statistics.fmean(before) - 1)
    # by hand: Welch's difference 80.5 - 100.15, its interval within it +- t * se, all below -5 %
    qa, qb = statistics.variance(before) / 4, statistics.variance([80.0, 81.0]) / 2
    df = (qa + qb) ** 2 / (qa**2 / 3 + qb**2 / 1)
    assert 1 < df < 2  # fewer than 2 dof: t above the table's 4.303 but below 12.706 (1 dof)
    assert 80.5 - 100.15 + 12.706 * math.sqrt(qa + qb) < -0.05 * 100.15


def test_a_regression_stays_one_until_accepted_then_the_window_starts_there() -> None:
    nights = [("n1", [100.0, 100.3]), ("n2", [100.2, 100.1]), ("n3", [50.0, 50.2]), ("n4", [50.1, 50.0])]
    entries = judge(nights, set(), 0.05)
    assert [e.verdict for e in entries] == ["first", "unchanged", "lower", "lower"]
    assert entries[3].window == ("n1", "n2")  # n3, found changed, left out
    accepted = judge(nights, {"n3"}, 0.05)
    assert [e.verdict for e in accepted] == ["first", "unchanged", "lower", "unchanged"]
    assert accepted[2].accepted and accepted[3].window == ("n3",)


def test_one_repetition_or_a_wide_interval_is_inconclusive() -> None:
    assert judge([("a", [100.0, 101.0]), ("b", [70.0])], set(), 0.05)[1].verdict == "inconclusive"
    wide = judge([("a", [100.0, 140.0]), ("b", [60.0, 110.0])], set(), 0.05)
    assert wide[1].verdict == "inconclusive"


def test_the_robust_spread_leaves_an_odd_night_out_of_the_window() -> None:
    # median 100, MAD 1 -> 1.4826; 30 lies 70 from the median, far beyond 3 robust spreads; 103 within
    assert robust([0, 1, 2, 3], [100.0, 101.0, 99.0, 30.0]) == [0, 1, 2]
    assert robust([0, 1, 2, 3], [100.0, 101.0, 99.0, 103.0]) == [0, 1, 2, 3]
    assert robust([0, 1], [100.0, 30.0]) == [0, 1]  # fewer than 3: nothing to be robust against
    nights = [("n1", [100.0, 100.5]), ("n2", [30.0, 30.5]), ("n3", [101.0, 99.5]), ("n4", [100.0, 99.0]),
              ("n5", [100.5, 100.0])]  # fmt: skip
    entries = judge(nights, set(), 0.05)
    assert entries[1].verdict == "lower"  # n2 is a change, so it is out of later windows anyway
    assert entries[4].window == ("n1", "n3", "n4") and entries[4].verdict == "unchanged"
