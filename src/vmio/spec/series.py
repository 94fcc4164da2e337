"""A campaign's place in a series and its repeat-until-stable rule: ``[campaign] series``, ``until_spread`` and
``max_repetitions``.

``until_spread = "5%"`` keeps running whole passes over the campaign's points while some point's IOPS spread
exceeds 5 % (``vmio.stats.tell.settled``: the half-width of the 95 % interval of the mean, as a fraction of the
mean), up to ``max_repetitions`` passes (default ``DEFAULT_MAX_REPETITIONS``).
"""

from __future__ import annotations

from dataclasses import dataclass

from vmio.spec import fields as f

DEFAULT_MAX_REPETITIONS = 10
MAX_SERIES = 200  # characters


def series_name(value: object) -> str:
    """A series name: one word of letters, digits and ``_.:-`` (it becomes a Prometheus label value)."""
    text = f.string(value)
    if len(text) > MAX_SERIES or not all(c.isascii() and (c.isalnum() or c in "_.:-") for c in text):
        raise ValueError(
            f"use letters, digits and _.:- (at most {MAX_SERIES} characters), such as 'nightly-nvme0'"
        )
    return text


def spread_bound(value: object) -> float:
    """``"5%"`` (or the number 5) as the fraction 0.05; between 0 and 100 % exclusive."""
    text = str(value).strip() if isinstance(value, str | int | float) and not isinstance(value, bool) else ""
    try:
        pct = float(text.removesuffix("%"))
    except ValueError:
        raise ValueError("is not a percentage; write it as '5%'") from None
    if not 0 < pct < 100:
        raise ValueError("must lie between 0% and 100%, such as '5%'")
    return pct / 100


@dataclass(frozen=True)
class UntilStable:
    """Passes continue while some point's IOPS spread exceeds ``bound`` (a fraction), up to ``max_repetitions``."""

    bound: float
    max_repetitions: int


def until_stable(head: f.Fields, repetitions: int) -> UntilStable | None:
    """``until_spread`` with ``max_repetitions`` (at least ``repetitions``); one without the other's rule is
    an error."""
    bound: float | None = head.take("until_spread", spread_bound, None)
    most: int | None = head.take("max_repetitions", f.integer(2, 1000), None)
    if bound is None:
        if most is not None:
            raise head.error(
                "max_repetitions",
                f"campaign.max_repetitions = {most} bounds repeat-until-stable; set until_spread = '5%' too",
            )
        return None
    most = DEFAULT_MAX_REPETITIONS if most is None else most
    if most < repetitions:
        raise head.error(
            "max_repetitions",
            f"campaign.max_repetitions = {most} is below campaign.repetitions = {repetitions}; "
            "the passes until stable come after the repetitions",
        )
    return UntilStable(bound, most)
