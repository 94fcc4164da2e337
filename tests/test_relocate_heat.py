"""Heat per extent and over time, hot-set selection, and the plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.errors import InputError
from vmio.relocate import plots
from vmio.relocate.heat import (
    HotChoice,
    heat_over_time,
    hot_by_budget,
    hot_by_coverage,
    summarize,
    touched_counts,
)
from vmio.relocate.layout import Layout
from vmio.traces.trace import Trace

MiB = 1 << 20


def _trace(image: list[int], offset: list[int]) -> Trace:
    n = len(image)
    return Trace(
        np.linspace(0, 1, n),
        np.array(image, np.int32),
        np.zeros(n, np.uint8),
        np.array(offset, np.int64),
        np.full(n, 4096, np.int64),
        ("a", "b"),
    )


def test_counts_per_extent_and_over_time() -> None:
    tr = _trace([0, 0, 0, 1, 0], [0, MiB + 5, MiB, 3 * MiB, 2 * MiB])
    assert [a.tolist() for a in touched_counts(tr, 0, MiB)] == [[0, 1, 2], [1, 2, 1]]
    assert [a.tolist() for a in touched_counts(tr, 1, MiB, 5)] == [[3], [1]]
    grid, edges, per = heat_over_time(tr, 0, MiB, 3, time_bins=2)
    assert grid.sum(axis=0).tolist() == [1, 2, 1] and len(edges) == 3 and per == 1
    # rows of two extents: [0, 1] and [2]; every access kept
    grid, _, per = heat_over_time(tr, 0, MiB, 3, time_bins=2, rows=2)
    assert grid.sum(axis=0).tolist() == [3, 1] and per == 2
    with pytest.raises(InputError, match="beyond"):
        touched_counts(tr, 0, MiB, 2)


@settings(max_examples=100, deadline=None)
@given(counts=st.lists(st.integers(0, 50), min_size=1, max_size=40), coverage=st.floats(0.01, 1.0))
def test_hot_set_is_the_smallest_covering_set(counts: list[int], coverage: float) -> None:
    c = np.array(counts, dtype=np.int64)
    hot = hot_by_coverage(c, coverage)
    total = c.sum()
    if total == 0:
        assert len(hot) == 0
        return
    assert c[hot].sum() >= coverage * total * (1 - 1e-9)
    best_smaller = np.sort(c)[::-1][: len(hot) - 1].sum()
    assert best_smaller < coverage * total


@settings(max_examples=100, deadline=None)
@given(
    touched=st.lists(st.integers(0, 30), max_size=60),
    size=st.integers(31, 40),
    coverage=st.floats(0.01, 1.0),
    budget=st.integers(0, 8),
)
def test_hot_set_of_the_touched_extents_is_that_of_every_extent(
    touched: list[int], size: int, coverage: float, budget: int
) -> None:
    """The planner's hot sets come from the extents the requests touch; every extent's counts (zeros
    included) give the same sets, ties and all."""
    tr = _trace([0] * len(touched), [e * MiB + 7 for e in touched])
    layout = Layout.consecutive(["a", "b"], [size * MiB, MiB], MiB)
    dense = np.bincount(np.array(touched, dtype=np.int64), minlength=size)  # every extent's, zeros included
    extents, counts = touched_counts(tr, 0, MiB, size)
    assert extents.tolist() == sorted(set(touched)) and counts.tolist() == dense[dense > 0].tolist()
    by_coverage, untouched = HotChoice(coverage=coverage).pick(tr, layout)
    assert by_coverage.tolist() == hot_by_coverage(dense, coverage).tolist() and untouched.tolist() == []
    by_budget = HotChoice(budget_bytes=budget * MiB).pick(tr, layout)[0]
    assert by_budget.tolist() == hot_by_budget(dense, budget).tolist()


def test_budget_and_bad_coverage() -> None:
    c = np.array([5, 0, 9, 1, 0])
    assert hot_by_budget(c, 2).tolist() == [0, 2]
    assert hot_by_budget(c, 10).tolist() == [0, 2, 3]
    with pytest.raises(InputError, match="coverage"):
        hot_by_coverage(c, 1.5)


def test_summary_reports_hot_bytes_per_image() -> None:
    tr = _trace([0] * 9 + [1], [0] * 8 + [5 * MiB, 0])
    a, b = summarize(tr, MiB, 0.8)
    assert (a.accesses, a.hot_extents, a.hot_bytes) == (9, 1, MiB)
    assert a.hot_share == pytest.approx(8 / 9) and b.accesses == 1


def test_plots_are_written(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    before = rng.integers(0, 10**9, 500)
    out = plots.access_distribution(before, before // 2, tmp_path / "d.png", disk_bytes=10**9, title="t")
    grid = rng.integers(0, 5, (10, 20))
    out2 = plots.heat_over_time(grid, np.linspace(0, 1, 11), tmp_path / "h.png", row_bytes=MiB, title="a")
    for p in (out, out2):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
