"""The live controller's rules on proposals: floors, ceilings, max step, hysteresis, pressure, budget."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmio.errors import InputError
from vmio.membal.governor import Rules, govern

M = 1 << 20


def rules(**kw: object) -> Rules:
    base: dict[str, object] = {
        "budget": 768 * M, "floors": (256 * M, 256 * M), "ceilings": (512 * M, 512 * M),
        "max_step": 64 * M, "min_move": 8 * M, "deflate": 32 * M,
    }  # fmt: skip
    base.update(kw)
    return Rules(**base)  # type: ignore[arg-type]


def test_initial_targets_share_the_budget_within_floors() -> None:
    assert rules().initial() == [384 * M, 384 * M]
    assert rules(budget=1536 * M).initial() == [512 * M, 512 * M]  # capped by the ceilings


def test_a_proposal_below_the_floor_stops_at_the_floor() -> None:
    [a, b] = govern(rules(), [300 * M, 400 * M], [100 * M, 600 * M], [False, False])
    assert (a.new, a.reasons) == (256 * M, ("floor",))
    assert (b.new, b.reasons) == (464 * M, ("ceiling", "max-step"))


def test_max_step_limits_each_move() -> None:
    [a, b] = govern(rules(), [384 * M, 384 * M], [284 * M, 484 * M], [False, False])
    assert (a.new, b.new) == (320 * M, 448 * M)
    assert a.reasons == ("max-step",) and b.reasons == ("max-step",)


def test_hysteresis_holds_small_moves_unless_under_pressure() -> None:
    [a, b] = govern(rules(), [384 * M, 384 * M], [380 * M, 388 * M], [False, False])
    assert (a.new, b.new) == (384 * M, 384 * M)
    assert a.reason == "hysteresis" and b.reason == "hysteresis"
    [c, d] = govern(rules(), [384 * M, 384 * M], [384 * M, 384 * M], [False, False])
    assert c.reason == "hold" and d.reason == "hold"


def test_pressure_deflates_at_the_expense_of_calm_guests() -> None:
    [a, b] = govern(rules(), [384 * M, 384 * M], [384 * M, 384 * M], [True, False])
    assert (a.new, a.reason) == (416 * M, "pressure")
    assert (b.new, b.reason) == (352 * M, "donor")


def test_a_pressured_guest_never_shrinks_even_if_the_policy_says_so() -> None:
    [a, _] = govern(rules(), [384 * M, 384 * M], [300 * M, 468 * M], [True, False])
    assert a.new >= 384 * M


def test_no_donor_above_its_floor_means_no_deflation() -> None:
    r = rules(budget=512 * M + 256 * M)
    [a, b] = govern(r, [512 * M, 256 * M], [512 * M, 256 * M], [False, True])
    assert (a.new, b.new) == (512 * M - 32 * M, 256 * M + 32 * M)  # the calm guest gives
    [c, d] = govern(r, [512 * M, 256 * M], [512 * M, 256 * M], [True, True])
    assert (c.new, d.new) == (512 * M, 256 * M)  # both under pressure, the budget is spent: no move
    assert "budget" in d.reasons


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"floors": (600 * M, 256 * M)}, "at most its memory"),
        ({"budget": 400 * M}, "more than the budget"),
        ({"max_step": 1024}, "at least the grain"),
    ],
)
def test_bad_rules_are_refused(kw: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        rules(**kw)


sizes = st.integers(0, 1024).map(lambda m: m * M)


@given(st.lists(st.tuples(sizes, sizes, st.booleans()), min_size=2, max_size=4))
def test_floors_steps_and_budget_hold_for_any_proposal(vms: list[tuple[int, int, bool]]) -> None:
    n = len(vms)
    r = rules(budget=n * 384 * M, floors=(256 * M,) * n, ceilings=(512 * M,) * n)
    old = [min(max(o, 256 * M), 512 * M) for o, _, _ in vms]
    if sum(old) > r.budget:
        old = r.initial()
    moves = govern(r, old, [p for _, p, _ in vms], [x for _, _, x in vms])
    assert sum(m.new for m in moves) <= r.budget
    for m, (_, _, pressed) in zip(moves, vms, strict=True):
        assert 256 * M <= m.new <= 512 * M
        assert abs(m.new - m.old) <= r.max_step
        assert not pressed or m.new >= m.old


def test_a_balanced_move_stays_balanced_after_rounding_to_the_grain() -> None:
    half = M // 2
    [a, b] = govern(
        rules(), [384 * M, 384 * M], [384 * M + 12 * M + half, 384 * M - 12 * M - half], [False, False]
    )
    assert (a.new, b.new) == (396 * M, 372 * M)
    assert a.reason == "policy" and b.reason == "policy"
