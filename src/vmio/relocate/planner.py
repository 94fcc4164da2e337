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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

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


Moved = tuple[tuple[NDArray[np.int64], NDArray[np.int64]], ...]


@dataclass(frozen=True)
class Plan:
    """A layout before, the extents that move, and the zone.

    An extent not in ``moved`` stays where the layout put it (the mapping starts as the identity), so a plan
    holds its moves, not one entry per extent of the disk: ``moved[i]`` is image ``i``'s logical extents
    that move (ascending) and the physical extent each goes to.
    """

    layout: Layout
    moved: Moved
    zone_start: int
    zone_extents: int
    position: str
    order: str
    placement: str = "given"
    placement_reason: str = ""

    @cached_property
    def mapping(self) -> tuple[NDArray[np.int64], ...]:
        """Every extent's physical extent after the plan, one int64 array per image: only for what walks
        every extent (``apply`` copies each one, the mapping table and dm tables list runs of all of them)."""
        out = []
        for (logical, dst), b, n in zip(self.moved, self.layout.base, self.layout.nextents, strict=True):
            m = np.arange(b, b + n, dtype=np.int64)
            m[logical] = dst
            out.append(m)
        return tuple(out)

    def moves(self) -> list[tuple[int, int, int, int]]:
        """(image, logical extent, from physical extent, to physical extent) for every extent that moves."""
        out: list[tuple[int, int, int, int]] = []
        for i, (logical, dst) in enumerate(self.moved):
            b = self.layout.base[i]
            out.extend((i, k, b + k, p) for k, p in zip(logical.tolist(), dst.tolist(), strict=True))
        return out

    def physical_offset(self, image: NDArray[np.int32], offset: NDArray[np.int64]) -> NDArray[np.int64]:
        """Where byte ``offset`` of ``image`` lies on the disk after the plan."""
        e = self.layout.extent_bytes
        out = np.empty(len(offset), dtype=np.int64)
        for i, (logical, dst) in enumerate(self.moved):
            sel = image == i
            ext = offset[sel] // e
            new = self.layout.base[i] + ext
            if len(logical):
                at = np.minimum(np.searchsorted(logical, ext), len(logical) - 1)
                hit = logical[at] == ext
                new[hit] = dst[at[hit]]
            out[sel] = new * e + offset[sel] % e
        return out

    def validate(self) -> None:
        """Raise ``InputError`` unless each logical extent maps to its own physical extent on the disk.

        Only the moves are checked against the layout (time and memory follow the moves, not the disk):
        the images lie inside the disk and apart, each move's extent is its image's, and no two extents
        share a place: no two moves go to one extent, and none goes onto an extent that stays.
        """
        lay = self.layout
        if len(self.moved) != len(lay.names):
            raise InputError(f"plan maps {len(self.moved)} images but the layout has {len(lay.names)}")
        spans = sorted((b, b + n) for b, n in zip(lay.base, lay.nextents, strict=True) if n > 0)
        if spans and (spans[0][0] < 0 or max(hi for _lo, hi in spans) > lay.disk_extents):
            raise InputError(f"plan maps an extent outside the disk's {lay.disk_extents} extents")
        for (_lo1, hi1), (lo2, _hi2) in zip(spans, spans[1:], strict=False):
            if hi1 > lo2:
                raise InputError(
                    f"plan maps two extents to the same place on the disk (physical extent {lo2})"
                )
        for name, n, (logical, dst) in zip(lay.names, lay.nextents, self.moved, strict=True):
            if len(logical) != len(dst) or np.any(np.diff(logical) <= 0):
                raise InputError(f"image {name!r}: its moves are not one per extent, in order")
            if len(logical) and (logical[0] < 0 or logical[-1] >= n):
                raise InputError(f"image {name!r}: an extent beyond its {n} extents moves")
        src = np.concatenate(
            [np.zeros(0, np.int64)] + [b + m[0] for b, m in zip(lay.base, self.moved, strict=True)]
        )
        dst = np.concatenate([np.zeros(0, np.int64)] + [m[1] for m in self.moved])
        if len(dst) and (dst.min() < 0 or dst.max() >= lay.disk_extents):
            raise InputError(f"plan maps an extent outside the disk's {lay.disk_extents} extents")
        ordered = np.sort(dst)
        twice = ordered[1:][np.diff(ordered) == 0]
        starts = np.array([lo for lo, _hi in spans], dtype=np.int64)
        ends = np.array([hi for _lo, hi in spans], dtype=np.int64)
        j = np.searchsorted(starts, dst, side="right") - 1
        inside = (j >= 0) & (dst < ends[np.maximum(j, 0)]) if len(spans) else np.zeros(len(dst), bool)
        onto_staying = dst[inside & ~np.isin(dst, src)]
        clash = np.concatenate([twice, onto_staying])
        if len(clash):
            raise InputError(
                f"plan maps two extents to the same place on the disk (physical extent {int(clash.min())})"
            )


def moved_extents(layout: Layout, dest: Mapping[tuple[int, int], int]) -> Moved:
    """``Plan.moved`` from ``dest`` ((image, logical extent) -> physical extent); an extent sent where it
    already is does not move."""
    per: list[list[tuple[int, int]]] = [[] for _ in layout.names]
    for (i, k), p in dest.items():
        if p != layout.base[i] + k:
            per[i].append((k, p))
    out = []
    for rows in per:
        pairs = np.array(sorted(rows), dtype=np.int64).reshape(-1, 2)
        out.append((pairs[:, 0].copy(), pairs[:, 1].copy()))
    return tuple(out)


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
    vacated = sorted(layout.base[i] + k for i, k in ordered)
    zone_end = zstart + nhot
    hot_set = set(ordered)
    displaced = [ik for _p, ik in sorted(_owners(layout, zstart, zone_end).items()) if ik not in hot_set]
    holes = [p for p in vacated if not zstart <= p < zone_end]
    holes += _free_slots(layout, zstart, zone_end, len(displaced) - len(holes))
    if len(holes) < len(displaced):
        raise InputError(
            "the disk has no room for the cold extents displaced by the zone; choose another position"
        )
    dest = dict(zip(displaced, sorted(holes[: len(displaced)]), strict=True))
    dest.update((ik, zstart + slot) for slot, ik in enumerate(ordered))
    plan = Plan(layout, moved_extents(layout, dest), zstart, nhot, position, order, placement, reason)
    plan.validate()
    return plan


def _owners(layout: Layout, lo: int, hi: int) -> dict[int, tuple[int, int]]:
    out = {}
    for i, (b, n) in enumerate(zip(layout.base, layout.nextents, strict=True)):
        for p in range(max(lo, b), min(hi, b + n)):
            out[p] = (i, p - b)
    return out


def _free_slots(layout: Layout, zlo: int, zhi: int, want: int) -> list[int]:
    """The lowest ``want`` extents (or all, if fewer) that no image holds, outside the zone: found from the
    gaps between the images' spans, so the work follows ``want`` and the images, not the disk's size."""
    taken = sorted([(b, b + n) for b, n in zip(layout.base, layout.nextents, strict=True)] + [(zlo, zhi)])
    out: list[int] = []
    cursor = 0
    for lo, hi in [*taken, (layout.disk_extents, layout.disk_extents)]:
        if len(out) >= want:
            break
        gap_end = min(lo, layout.disk_extents)
        out.extend(range(cursor, min(gap_end, cursor + want - len(out))))
        cursor = max(cursor, hi)
    return out


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
