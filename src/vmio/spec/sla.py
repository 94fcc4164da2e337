"""A latency bound: ``p99=2ms`` (metric p50, p99, p99.9 or mean; a duration in us, ms or s)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vmio.units import parse_duration

SLA_METRICS = ("p50", "p99", "p99.9", "mean")


@dataclass(frozen=True)
class Sla:
    metric: str
    bound_ms: float

    def __str__(self) -> str:
        return f"{self.metric}<={self.bound_ms:g}ms"


def parse_sla(text: object) -> Sla:
    """``"p99=2ms"`` → ``Sla("p99", 2.0)``; a ``ValueError`` names what is wrong. The bound needs its unit:
    a bare ``p99=2`` is refused (it read as 2 seconds, which nobody writing it meant)."""
    sla = parse_stored_sla(text)
    bound = str(text).partition("=")[2].strip()
    if _BARE.match(bound):
        raise ValueError(
            f"{text!r}: the bound {bound!r} has no unit; write it with one, such as "
            f"'{sla.metric}={bound}ms' or '{sla.metric}={bound}us'"
        )
    return sla


_BARE = re.compile(r"^\d+(\.\d+)?$")


def parse_stored_sla(text: object) -> Sla:
    """A bound as stores written by older vmio may hold it: a bare number there is seconds."""
    if not isinstance(text, str) or "=" not in text:
        raise ValueError(f"{text!r} is not a latency bound; use METRIC=DURATION such as 'p99=2ms'")
    metric, _, bound = (part.strip() for part in text.partition("="))
    if metric not in SLA_METRICS:
        raise ValueError(f"{text!r}: metric {metric!r} is not one of {', '.join(SLA_METRICS)}")
    try:
        seconds = parse_duration(bound)
    except ValueError:
        raise ValueError(f"{text!r}: bound {bound!r} is not a duration such as '2ms' or '500us'") from None
    if seconds <= 0:
        raise ValueError(f"{text!r}: the bound must be above zero")
    return Sla(metric, seconds * 1e3)
