"""Repeat until stable (``[campaign] until_spread``, ``max_repetitions``): whole passes over the campaign's points
continue while some point's IOPS spread exceeds the bound, up to the maximum.

A point's spread is ``vmio.stats.tell``'s: the half-width of the 95 % Student's t interval of the mean of its
repetitions' IOPS (read + write), as a fraction of the mean; a point has settled when that is within the bound
(``tell.settled``; a point needs 2 done repetitions before it can settle). Every pass is one more repetition of
every point, as ``repetitions`` makes them, so a settled point is measured again while another has not
settled: points of one pass stay comparable. After each pass each point's repetitions taken, whether it settled,
and its spread are stored (``Store.set_settle``). A resumed campaign starts from the repetitions its store
already holds and goes on by the same rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from vmio.stats import tell
from vmio.store import Store

if TYPE_CHECKING:
    from vmio.spec import Campaign

T = TypeVar("T")  # what one pass yields (the runner's ``Outcome``)


def point_of(key: str) -> str:
    """A point's key without its repetition: ``t/w/bs=4k/offered=max/load=0/rep=2`` → ``t/w/bs=4k/offered=max/load=0``."""
    head, sep, _ = key.rpartition("/rep=")
    return head if sep else key


def spread(values: Sequence[float]) -> float | None:
    """The half-width of the interval of the mean as a fraction of the mean (None: under 2 values or mean 0)."""
    ci = tell.interval(values)
    if ci.half_width is None or ci.mean == 0:
        return None
    return ci.half_width / abs(ci.mean)


def point_iops(store: Store, campaign: str) -> dict[str, list[float]]:
    """Each point's IOPS (read + write) per done repetition, in repetition order."""
    by: dict[str, list[tuple[int, float]]] = {}
    for r in store.runs(campaign):
        if r["status"] == "done":
            iops = float(r["read_iops"] or 0) + float(r["write_iops"] or 0)
            by.setdefault(point_of(r["point_key"]), []).append((int(r["repetition"]), iops))
    return {k: [v for _, v in sorted(reps)] for k, reps in by.items()}


def unsettled(values: Mapping[str, Sequence[float]], bound: float) -> list[str]:
    """The points whose IOPS have not settled within ``bound``."""
    return [k for k, v in values.items() if not tell.settled(v, bound)]


def stored_passes(store: Store, campaign: str) -> int:
    """The most repetitions any point of the stored campaign holds (0: none)."""
    row = store.db.execute(
        "SELECT MAX(repetition) FROM run JOIN campaign c ON c.id = run.campaign_id WHERE c.name = ?",
        (campaign,),
    ).fetchone()
    return int(row[0] or 0)


def run_passes(
    campaign: Campaign,
    store: Store,
    force: bool,
    one_pass: Callable[[Campaign, bool], T],
    failed: Callable[[T], bool],
    add: Callable[[T, T], T],
) -> T:
    """Run ``campaign``'s repetitions, then one more pass at a time while a point is unsettled, up to the
    maximum; a pass in which a point failed ends the passes (its failure is the news)."""
    assert campaign.until is not None
    bound, most = campaign.until.bound, campaign.until.max_repetitions
    reps = (
        campaign.repetitions
        if force
        else max(campaign.repetitions, min(stored_passes(store, campaign.name), most))
    )
    outcome = one_pass(dataclasses.replace(campaign, repetitions=reps), force)
    while True:
        values = point_iops(store, campaign.name)
        _record(store, campaign.name, values, bound)
        if reps >= most or not unsettled(values, bound) or failed(outcome):
            return outcome
        reps += 1
        more = one_pass(dataclasses.replace(campaign, repetitions=reps), False)
        outcome = add(outcome, more)


def _record(store: Store, campaign: str, values: Mapping[str, Sequence[float]], bound: float) -> None:
    for point, iops in values.items():
        store.set_settle(campaign, point, len(iops), tell.settled(iops, bound), spread(iops))
