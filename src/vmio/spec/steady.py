"""A steady-state criterion: ``iops_slope:2%:10s`` (fio's ``steadystate`` criterion and bound, then its window)."""

from __future__ import annotations

from dataclasses import dataclass

from vmio.units import parse_duration

STEADY_KINDS = ("iops", "iops_slope", "bw", "bw_slope")


@dataclass(frozen=True)
class Steady:
    kind: str  # fio's criterion: iops, iops_slope, bw, bw_slope
    bound: str  # as fio reads it: "2%" (of the mean) or an absolute figure
    window_s: float  # fio's ss_dur: the rolling window the criterion holds over

    def __str__(self) -> str:
        return f"{self.kind}:{self.bound}:{self.window_s:g}s"

    def fio_options(self) -> dict[str, str]:
        return {
            "steadystate": f"{self.kind}:{self.bound}",
            "steadystate_duration": f"{round(self.window_s * 1000)}ms",
        }


def parse_steady(text: object) -> Steady:
    """``"iops_slope:2%:10s"`` → ``Steady``; a ``ValueError`` names what is wrong."""
    if not isinstance(text, str) or text.count(":") != 2:
        raise ValueError(
            f"{text!r} is not a steady-state criterion; use KIND:BOUND:WINDOW such as 'iops_slope:2%:10s'"
        )
    kind, bound, window = (p.strip() for p in text.split(":"))
    if kind not in STEADY_KINDS:
        raise ValueError(f"{text!r}: {kind!r} is not one of {', '.join(STEADY_KINDS)}")
    number = bound[:-1] if bound.endswith("%") else bound
    try:
        if float(number) <= 0:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"{text!r}: bound {bound!r} is not a positive figure such as '2%' or '500'"
        ) from None
    try:
        seconds = parse_duration(window)
    except ValueError:
        raise ValueError(f"{text!r}: window {window!r} is not a duration such as '10s'") from None
    if seconds < 1:
        raise ValueError(
            f"{text!r}: the window must be at least 1s (fio measures steady state once a second)"
        )
    return Steady(kind, bound, seconds)
