"""Relocation plans: gather every image's hot extents into one zone of the shared disk.

The disk is a row of extents. Before the plan, image ``i`` occupies ``base[i] .. base[i] + n[i] - 1``,
the rest is free. A plan picks a zone of ``H`` extents (H = all hot extents), puts the hot extents there
in a chosen order, and leaves every cold extent where it was, except cold extents that sat inside the
zone: those go, in their order, to the slots the hot extents left (then to free slots). Every logical
extent is mapped to exactly one physical extent and no two share one.

Where the zone goes by default (``auto``): where kogakuin-relocate-2011's figures show it (Figs. 5 and 7: near 250 GB of
the 1 TB disk, beyond the images' hot regions; vmio keeps that as a quarter of the disk), unless the access
distribution says otherwise: the accesses left outside the zone pull the head away from it and back, and
when the figures' place costs more than ``ACCESS_OVERRIDE`` (5 %) of a request's base time (controller
overhead + half a turn) in extra seeking, compared with the place nearest those accesses (their weighted
median), the zone goes there instead. The plan records which rule it followed and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vmio.errors import InputError
from vmio.relocate.disk import DRIVE_7200, DiskParams
from vmio.relocate.layout import Layout
from vmio.relocate.order import zone_order
from vmio.traces.trace import Trace

POSITIONS = ("auto", "seed", "median", "after", "start", "center")
SEED_ZONE_FRACTION = 0.25  # kogakuin-relocate-2011, Figs. 5 and 7: the hot zone near 250 GB of a 1 TB disk
ACCESS_OVERRIDE = 0.05


@dataclass(frozen=True)
class Plan:
    """A layout before, the per-image mapping after, and the zone."""

    layout: Layout
    mapping: tuple[NDArray[np.int64], ...]
    zone_start: int
    zone_extents: int
    position: str
    order: str
    placement: str = "given"
    placement_reason: str = ""

    def moves(self) -> list[tuple[int, int, int, int]]:
        """(image, logical extent, from physical extent, to physical extent) for every extent that moves."""
        out: list[tuple[int, int, int, int]] = []
        for i, new in enumerate(self.mapping):
            old = self.layout.base[i] + np.arange(len(new))
            out.extend((i, k, int(old[k]), int(new[k])) for k in np.flatnonzero(new != old).tolist())
        return out

    def physical_offset(self, image: NDArray[np.int32], offset: NDArray[np.int64]) -> NDArray[np.int64]:
        """Where byte ``offset`` of ``image`` lies on the disk after the plan."""
        e = self.layout.extent_bytes
        out = np.empty(len(offset), dtype=np.int64)
        for i, new in enumerate(self.mapping):
            sel = image == i
            out[sel] = new[offset[sel] // e] * e + offset[sel] % e
        return out

    def validate(self) -> None:
        """Raise ``InputError`` unless each logical extent maps to its own physical extent on the disk."""
        lay = self.layout
        if len(self.mapping) != len(lay.names):
            raise InputError(f"plan maps {len(self.mapping)} images but the layout has {len(lay.names)}")
        allp = np.concatenate(self.mapping) if self.mapping else np.zeros(0, dtype=np.int64)
        for i, m in enumerate(self.mapping):
            if len(m) != lay.nextents[i]:
                raise InputError(
                    f"image {lay.names[i]!r}: {len(m)} extents mapped, expected {lay.nextents[i]}"
                )
        if len(allp) and (allp.min() < 0 or allp.max() >= lay.disk_extents):
            raise InputError(f"plan maps an extent outside the disk's {lay.disk_extents} extents")
        uniq, counts = np.unique(allp, return_counts=True)
        if len(uniq) != len(allp):
            twice = int(uniq[np.argmax(counts > 1)])
            raise InputError(f"plan maps two extents to the same place on the disk (physical extent {twice})")


def build_plan(
    layout: Layout,
    hot: Sequence[NDArray[np.int64]],
    *,
    position: str = "auto",
    order: str = "image",
    trace: Trace | None = None,
    disk: DiskParams | None = None,
) -> Plan:
    """Place the hot extents (``hot[i]``: logical extents of image ``i``) in one zone.

    ``disk`` (default: the 7,200 rpm model) only prices seeks when ``auto`` weighs the seed's place
    against the accesses' own.
    """
    if position not in POSITIONS and not (position.isascii() and position.isdigit() and len(position) < 19):
        raise InputError(f"unknown zone position {position!r}; use one of {POSITIONS} or an extent number")
    hot_pairs = [(i, int(k)) for i, ks in enumerate(hot) for k in np.unique(ks).tolist()]
    for i, k in hot_pairs:
        if not 0 <= k < layout.nextents[i]:
            raise InputError(
                f"hot extent {k} of image {layout.names[i]!r} is beyond its {layout.nextents[i]} extents"
            )
    ordered = zone_order(hot_pairs, order, trace, layout.extent_bytes)
    nhot = len(ordered)
    placement, reason = "given", f"--zone {position}"
    resolved = position
    if position in ("auto", "seed", "median"):
        placement, resolved, reason = _choose_position(layout, hot_pairs, trace, disk or DRIVE_7200, position)
    zstart = _zone_start(layout, nhot, resolved)
    mapping = [layout.base[i] + np.arange(n, dtype=np.int64) for i, n in enumerate(layout.nextents)]
    vacated = sorted(int(mapping[i][k]) for i, k in ordered)
    zone_end = zstart + nhot
    hot_set = set(ordered)
    displaced = [ik for _p, ik in sorted(_owners(layout, zstart, zone_end).items()) if ik not in hot_set]
    holes = [p for p in vacated if not zstart <= p < zone_end] + _free_slots(layout, zstart, zone_end)
    if len(holes) < len(displaced):
        raise InputError(
            "the disk has no room for the cold extents displaced by the zone; choose another position"
        )
    for (i, k), p in zip(displaced, sorted(holes[: len(displaced)]), strict=True):
        mapping[i][k] = p
    for slot, (i, k) in enumerate(ordered):
        mapping[i][k] = zstart + slot
    plan = Plan(layout, tuple(mapping), zstart, nhot, position, order, placement, reason)
    plan.validate()
    return plan


def _owners(layout: Layout, lo: int, hi: int) -> dict[int, tuple[int, int]]:
    out = {}
    for i, (b, n) in enumerate(zip(layout.base, layout.nextents, strict=True)):
        for p in range(max(lo, b), min(hi, b + n)):
            out[p] = (i, p - b)
    return out


def _free_slots(layout: Layout, zlo: int, zhi: int) -> list[int]:
    used = np.zeros(layout.disk_extents, dtype=bool)
    for b, n in zip(layout.base, layout.nextents, strict=True):
        used[b : b + n] = True
    used[zlo:zhi] = True
    return np.flatnonzero(~used).tolist()


def _zone_start(layout: Layout, nhot: int, position: str) -> int:
    end_of_images = max((b + n for b, n in zip(layout.base, layout.nextents, strict=True)), default=0)
    if position == "start":
        return 0
    if position == "after":
        if end_of_images + nhot > layout.disk_extents:
            raise InputError(
                f"no free space after the images for a {nhot}-extent zone; use --zone start or center"
            )
        return end_of_images
    if position == "center":
        return max(0, min(end_of_images // 2 - nhot // 2, layout.disk_extents - nhot))
    return max(0, min(int(position), layout.disk_extents - nhot))


def _cold_extents(layout: Layout, hot_pairs: list[tuple[int, int]], trace: Trace | None) -> NDArray[np.int64]:
    """Physical extents (before the plan) of the accesses outside the hot set."""
    if trace is None or not len(trace):
        return np.zeros(0, dtype=np.int64)
    hot = set(hot_pairs)
    ext = trace.offset // layout.extent_bytes
    cold = np.array([(i, k) not in hot for i, k in zip(trace.image.tolist(), ext.tolist(), strict=True)])
    phys: NDArray[np.int64] = np.asarray(layout.base, dtype=np.int64)[trace.image[cold]] + ext[cold]
    return phys


def _seek_cost_ms(layout: Layout, cold: NDArray[np.int64], at: int, disk: DiskParams) -> float:
    """Mean out-and-back seek time from a zone at extent ``at`` to the cold accesses (cylinders pro rata)."""
    per_cyl = layout.disk_extents / disk.cylinders
    dist = np.abs(cold - at) / per_cyl
    return 2.0 * float(np.mean([disk.seek.ms(int(d)) for d in dist])) if len(dist) else 0.0


def _choose_position(
    layout: Layout, hot_pairs: list[tuple[int, int]], trace: Trace | None, disk: DiskParams, rule: str
) -> tuple[str, str, str]:
    """(placement, position, reason): the seed's figure unless the cold accesses make it cost too much."""
    nhot = len(hot_pairs)
    seed_at = max(0, min(int(layout.disk_extents * SEED_ZONE_FRACTION), layout.disk_extents - nhot))
    of_disk = f"{SEED_ZONE_FRACTION:.0%} of the disk"
    seed_why = f"kogakuin-relocate-2011 Figs. 5 and 7 put the zone near 250 GB of 1 TB ({of_disk})"
    cold = _cold_extents(layout, hot_pairs, trace)
    total = len(trace) if trace is not None else 0
    if not len(cold):
        return "seed-figure", str(seed_at), seed_why + "; no access lies outside the hot set"
    median_at = max(0, int(np.median(cold)) - nhot // 2)
    share = len(cold) / total
    sample = cold[:: max(1, len(cold) // 2000)]
    extra = share * (
        _seek_cost_ms(layout, sample, seed_at + nhot // 2, disk)
        - _seek_cost_ms(layout, sample, median_at + nhot // 2, disk)
    )
    base = disk.overhead_ms + 500.0 * disk.revolution_s
    cost = (
        f"{share:.1%} of accesses outside the hot set; the figure's place costs {extra:.2f} ms/request "
        f"more seeking than their median's ({extra / base:.1%} of {base:.2f} ms)"
    )
    if rule == "median" or (rule == "auto" and extra > ACCESS_OVERRIDE * base):
        return "access-median", str(median_at), cost + " -> nearest the cold accesses"
    return "seed-figure", str(seed_at), seed_why + "; " + cost
