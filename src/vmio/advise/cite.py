"""A figure a verdict cites, with the comparison the verdict's sentence rests on.

Each cited figure states one comparison: ``value op threshold`` (``vm.iothreads >= 1``,
``measured.qemu_iothread_cpu_pct < 90``), a fact (``vm.bus == "virtio-blk"``) or an unknown
(``measured.dev_queue is null``). ``holds`` is that comparison evaluated; a verdict cites only what holds,
so a reader (or a test) can check every sentence against its numbers.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


@dataclass(frozen=True)
class Cite:
    figure: str
    value: Any
    op: str
    threshold: Any

    @property
    def holds(self) -> bool:
        if self.op == "is":
            return self.value is None and self.threshold is None
        if self.value is None or self.threshold is None:
            return False
        try:
            return bool(OPS[self.op](self.value, self.threshold))
        except TypeError:
            return False

    def to_dict(self) -> CiteJson:
        return {
            "figure": self.figure,
            "value": self.value,
            "threshold": self.threshold,
            "op": self.op,
            "holds": self.holds,
        }


class CiteJson(TypedDict):
    """A cited figure in a verdict's JSON (``diagnose --json``'s ``steps[].evidence``)."""

    figure: str
    value: object
    threshold: object
    op: str
    holds: bool


def fact(figure: str, value: Any) -> Cite:
    """``figure == value`` (``figure is null`` when unknown): a figure the answer used as it is."""
    return Cite(figure, value, "is", None) if value is None else Cite(figure, value, "==", value)


def against(figure: str, value: float | None, threshold: float, *, strict_above: bool = False) -> Cite:
    """``value`` beside ``threshold``, with the operator that holds (``>=`` or ``<``; ``>``/``<=`` when
    ``strict_above``); ``is null`` when unknown."""
    if value is None:
        return Cite(figure, None, "is", None)
    if strict_above:
        return Cite(figure, value, ">" if value > threshold else "<=", threshold)
    return Cite(figure, value, ">=" if value >= threshold else "<", threshold)
