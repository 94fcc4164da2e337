"""Where each I/O's time goes: per-layer latency histograms of one point and the figures ``show`` prints.

A layer is a span of an I/O's life measured by its own events (docs/layers.md): ``app`` (fio's latency, as
vmio stores it), ``guest_block`` (the guest kernel's block layer), ``qemu`` (QEMU, virtqueue to completion),
``host_block`` (the host's block layer on the disks the I/O lands on, issue to completion). Each is kept per
direction as fio's log-linear histogram (``stats.histogram``: bucket value in ns → count) with the exact sum
of its latencies, so its mean is exact and its percentiles are fio's rule over the buckets.

``show --json`` prints a point's ``layers`` as ``{layer: {"read": FIGURES, "write": FIGURES}}`` with
``FIGURES`` = ``{mean_us, p50_us, p99_us, ios}`` (null: no I/O of that direction was seen); a layer that
could not be traced has ``read``/``write`` null and ``why``; a ``host_block`` traced from insertion too
(points stored before issue 45's cost cut) adds ``insert_mean_us`` to its directions, the mean from
insertion in the scheduler's queue (iostat's await counts from earlier still: the request's start, which
only the iostat check traces).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from vmio.stats import histogram

# outermost first: on direct I/O each nests in the one before
LAYERS = ("app", "guest_block", "qemu", "host_block")
DIRECTIONS = ("read", "write")


@dataclass
class Spans:
    """One layer's latencies over a window: per (direction, span) the histogram and the sum in ns."""

    hist: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    sum_ns: dict[tuple[str, str], int] = field(default_factory=dict)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # spans kept as a count and sum only

    def add(self, ddir: str, span: str, bins: Mapping[int, int], total_ns: int) -> None:
        """Add counts by bucket value (ns) and their latencies' sum."""
        mine = self.hist.setdefault((ddir, span), {})
        for bucket, count in bins.items():
            mine[bucket] = mine.get(bucket, 0) + count
        self.sum_ns[(ddir, span)] = self.sum_ns.get((ddir, span), 0) + total_ns

    def ios(self, ddir: str, span: str = "issue") -> int:
        if (ddir, span) in self.counts:
            return self.counts[(ddir, span)]
        return sum(self.hist.get((ddir, span), {}).values())


def figures(bins: Mapping[int, int], total_ns: float) -> dict[str, float | int | None] | None:
    """``{mean_us, p50_us, p99_us, ios}`` of a histogram and its sum (None: no I/O)."""
    ios = sum(bins.values())
    if not ios:
        return None
    pcts = histogram.percentiles(bins, (50.0, 99.0))
    return {
        "mean_us": round(total_ns / ios / 1000, 3),
        "p50_us": round((pcts[50.0] or 0) / 1000, 3),
        "p99_us": round((pcts[99.0] or 0) / 1000, 3),
        "ios": ios,
    }


def traced(spans: Spans, *, insert: bool = False) -> dict[str, object]:
    """A traced layer as ``show --json`` prints it (``insert``: with ``insert_mean_us``)."""
    out: dict[str, object] = {}
    for ddir in DIRECTIONS:
        shown = figures(spans.hist.get((ddir, "issue"), {}), spans.sum_ns.get((ddir, "issue"), 0))
        if shown is not None and insert:
            queued = spans.ios(ddir, "insert")
            shown["insert_mean_us"] = (
                round(spans.sum_ns.get((ddir, "insert"), 0) / queued / 1000, 3) if queued else None
            )
        out[ddir] = shown
    return out


def untraced(why: str) -> dict[str, object]:
    """A layer that could not be traced, and why (the point still measured)."""
    return {"read": None, "write": None, "why": why}


class Result(Protocol):
    """One fio job's figures for one direction, as ``fio.output.JobResult`` has them."""

    @property
    def role(self) -> str: ...
    @property
    def ddir(self) -> str: ...
    @property
    def total_ios(self) -> int: ...
    @property
    def lat_ns(self) -> Mapping[str, float | None]: ...
    @property
    def bins(self) -> Mapping[int, int]: ...


def app(results: Sequence[Result]) -> dict[str, object]:
    """The ``app`` layer: fio's latency (submission to completion) over the measured jobs, as ``show``
    prints the point's: percentiles of the merged histograms, the mean weighted by operations."""
    out: dict[str, object] = {}
    for ddir in DIRECTIONS:
        mine = [r for r in results if r.role == "measure" and r.ddir == ddir and r.total_ios]
        total = sum((r.lat_ns.get("mean") or 0.0) * r.total_ios for r in mine)
        bins = histogram.merge(r.bins for r in mine)
        shown = figures(bins, total)
        if shown is not None:  # fio's own counts and mean (its bins may have been cut at a limit)
            ios = sum(r.total_ios for r in mine)
            shown["ios"], shown["mean_us"] = ios, round(total / ios / 1000, 3)
        out[ddir] = shown
    return out


def rows(layers: Mapping[str, Spans]) -> list[tuple[str, str, str, int, dict[int, int]]]:
    """The histograms a point stores (table ``layer_hist``): layer, direction, span, sum (ns), bins."""
    return [
        (layer, ddir, span, spans.sum_ns.get((ddir, span), 0), bins)
        for layer, spans in layers.items()
        for (ddir, span), bins in sorted(spans.hist.items())
        if bins
    ]


def shown(stored: Mapping[str, Any], order: Iterable[str] = LAYERS) -> dict[str, object]:
    """``layers`` in the layers' order (outermost first)."""
    return {name: stored[name] for name in order if name in stored}


def mean_us(layers: Mapping[str, Any] | None, layer: str, ddir: str) -> float | None:
    """A stored point's mean latency (µs) in ``layer`` for ``ddir`` (None: not traced, or no such I/O)."""
    entry = (layers or {}).get(layer)
    figures = entry.get(ddir) if isinstance(entry, dict) else None
    value = figures.get("mean_us") if isinstance(figures, dict) else None
    return float(value) if isinstance(value, int | float) else None
