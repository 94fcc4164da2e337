"""Planner invariants (Hypothesis): each block mapped exactly once, hot extents in one zone, cold in order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.errors import InputError
from vmio.relocate.layout import Layout
from vmio.relocate.order import order_quality, zone_order
from vmio.relocate.plan_io import mapping_runs, plan_from_dict, plan_to_dict
from vmio.relocate.planner import Plan, build_plan, moved_extents
from vmio.traces.trace import Trace

E = 4096


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Layout, list[np.ndarray], str, str, Trace]:
    n = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 25), min_size=n, max_size=n))
    hot = [np.array(sorted(draw(st.sets(st.integers(0, s - 1), max_size=s))), dtype=np.int64) for s in sizes]
    free = draw(st.integers(0, 30))
    if sum(len(h) for h in hot) > free:
        free = sum(len(h) for h in hot) if draw(st.booleans()) else free
    layout = Layout.consecutive(
        [f"vm{i}" for i in range(n)], [s * E for s in sizes], E, (sum(sizes) + free) * E
    )
    k = draw(st.integers(1, 40))
    img = np.array(draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k)), dtype=np.int32)
    ext = np.array([draw(st.integers(0, sizes[i] - 1)) for i in img], dtype=np.int64)
    trace = Trace(
        np.arange(k, dtype=np.float64),
        img,
        np.zeros(k, np.uint8),
        ext * E,
        np.full(k, 512, np.int64),
        tuple(layout.names),
    )
    nhot = sum(len(h) for h in hot)
    positions = ["auto", "start", "center", str(draw(st.integers(0, layout.disk_extents)))]
    if nhot <= free:
        positions.append("after")
    return (
        layout,
        hot,
        draw(st.sampled_from(positions)),
        draw(st.sampled_from(["image", "first", "coaccess"])),
        trace,
    )


def _check(plan: Plan, hot: list[np.ndarray]) -> None:
    lay = plan.layout
    allp = np.concatenate(plan.mapping)
    assert len(allp) == sum(lay.nextents) and len(set(allp.tolist())) == len(allp)
    assert allp.min() >= 0 and allp.max() < lay.disk_extents
    zone = set(range(plan.zone_start, plan.zone_start + plan.zone_extents))
    hot_phys = {int(plan.mapping[i][k]) for i, ks in enumerate(hot) for k in ks.tolist()}
    assert hot_phys == zone and plan.zone_extents == sum(len(h) for h in hot)
    moved_cold = []
    for i, m in enumerate(plan.mapping):
        for k in range(len(m)):
            if k in set(hot[i].tolist()):
                continue
            old = lay.base[i] + k
            if int(m[k]) != old:
                assert old in zone  # only cold extents the zone covered move
                moved_cold.append((old, int(m[k])))
    assert [new for _, new in sorted(moved_cold)] == sorted(
        new for _, new in moved_cold
    )  # they keep their order


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_every_block_is_mapped_exactly_once(case: tuple[Layout, list[np.ndarray], str, str, Trace]) -> None:
    layout, hot, position, order, trace = case
    plan = build_plan(layout, hot, position=position, order=order, trace=trace)
    _check(plan, hot)
    again = plan_from_dict(plan_to_dict(plan))
    assert all(np.array_equal(a, b) for a, b in zip(again.mapping, plan.mapping, strict=True))
    runs = mapping_runs(plan)
    assert sum(r[2] for r in runs) == sum(layout.nextents)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_validate_refuses_exactly_the_mappings_that_are_not_one_to_one(data: st.DataObject) -> None:
    """A plan holds its moves only; its check (moves against the layout) agrees with the whole mapping
    built here extent by extent: each extent on the disk, no two in one place."""
    sizes = data.draw(st.lists(st.integers(1, 8), min_size=1, max_size=3))
    disk = sum(sizes) + data.draw(st.integers(0, 6))
    layout = Layout.consecutive([f"vm{i}" for i in range(len(sizes))], [s * E for s in sizes], E, disk * E)
    extents = [(i, k) for i, s in enumerate(sizes) for k in range(s)]
    movers = data.draw(st.lists(st.sampled_from(extents), unique=True, max_size=6))
    dest = {ik: data.draw(st.integers(0, disk)) for ik in movers}  # ``disk``: one past the end
    whole = [dest.get((i, k), layout.base[i] + k) for i, k in extents]
    plan = Plan(layout, moved_extents(layout, dest), 0, 0, "start", "image")
    if max(whole) >= disk:
        with pytest.raises(InputError, match="outside the disk"):
            plan.validate()
    elif len(set(whole)) < len(whole):
        twice = min(p for p in whole if whole.count(p) > 1)
        with pytest.raises(InputError, match=f"same place on the disk \\(physical extent {twice}\\)"):
            plan.validate()
    else:
        plan.validate()
        assert [m.tolist() for m in plan.mapping] == [
            whole[sum(sizes[:i]) : sum(sizes[: i + 1])] for i in range(len(sizes))
        ]


def test_after_position_needs_free_space() -> None:
    layout = Layout.consecutive(["a"], [4 * E], E)
    with pytest.raises(InputError, match="no free space after the images"):
        build_plan(layout, [np.array([1, 2])], position="after")
    with pytest.raises(InputError, match="unknown zone position"):
        build_plan(layout, [np.array([1])], position="middle")
    with pytest.raises(InputError, match="beyond its 4 extents"):
        build_plan(layout, [np.array([9])], position="start")


def test_seed_like_plan_moves_only_hot_extents_to_free_space() -> None:
    layout = Layout.consecutive(["vm1", "vm2"], [10 * E, 10 * E], E, 30 * E)
    plan = build_plan(layout, [np.array([7, 8]), np.array([6])], position="after", order="image")
    assert plan.zone_start == 20
    assert plan.moves() == [(0, 7, 7, 20), (0, 8, 8, 21), (1, 6, 16, 22)]


def test_coaccess_order_chains_extents_used_one_after_another() -> None:
    # Accesses alternate vm0:5 -> vm1:2 -> vm0:9 -> vm1:2 ... ; by image the zone is [0:5, 0:9, 1:2].
    seq = [(0, 5), (1, 2), (0, 9), (1, 2)] * 5
    img = np.array([p[0] for p in seq], dtype=np.int32)
    off = np.array([p[1] for p in seq], dtype=np.int64) * E
    trace = Trace(
        np.arange(len(seq), dtype=np.float64),
        img,
        np.zeros(len(seq), np.uint8),
        off,
        np.full(len(seq), 512, np.int64),
        ("vm0", "vm1"),
    )
    hot = [(0, 5), (0, 9), (1, 2)]
    by_image = zone_order(hot, "image", trace, E)
    chained = zone_order(hot, "coaccess", trace, E)
    assert by_image == [(0, 5), (0, 9), (1, 2)]
    assert chained[1] == (1, 2)
    assert order_quality(chained, seq) < order_quality(by_image, seq)
    with pytest.raises(InputError, match="unknown in-zone order"):
        zone_order(hot, "random", trace, E)


def test_plan_json_rejects_tampered_moves() -> None:
    layout = Layout.consecutive(["vm1"], [4 * E], E, 8 * E)
    data = plan_to_dict(build_plan(layout, [np.array([1])], position="after"))
    data["moves"][0][2] = 3
    with pytest.raises(InputError, match="does not start where the extent is"):
        plan_from_dict(data)
    data = plan_to_dict(build_plan(layout, [np.array([1, 2])], position="after"))
    data["moves"][1][3] = data["moves"][0][3]
    with pytest.raises(InputError, match="same place"):
        plan_from_dict(data)
    with pytest.raises(InputError, match="not a vmio-relocation-plan"):
        plan_from_dict({"format": "x"})
