"""A hard-disk model: zoned geometry, a two-piece seek curve, rotation, transfer, controller overhead.

The seek curve follows Ruemmler & Wilkes (1994): ``a + b*sqrt(d)`` ms for short seeks of ``d`` cylinders,
``c + e*d`` ms beyond a break point; no seek for ``d == 0``. Sectors of a track are at evenly spaced
angles (no skew); a transfer runs at the rate of the zone the request starts in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vmio.errors import InputError


@dataclass(frozen=True)
class SeekCurve:
    """Seek time in ms: ``short_a + short_b*sqrt(d)`` below ``break_cyl``, ``long_c + long_e*d`` from it."""

    short_a: float
    short_b: float
    long_c: float
    long_e: float
    break_cyl: int

    def ms(self, distance: int) -> float:
        if distance <= 0:
            return 0.0
        if distance < self.break_cyl:
            return self.short_a + self.short_b * math.sqrt(distance)
        return self.long_c + self.long_e * distance


@dataclass(frozen=True)
class DiskParams:
    """A drive: ``zones`` is a list of (cylinders, sectors per track) from the outer edge inwards."""

    name: str
    rpm: float
    heads: int
    zones: tuple[tuple[int, int], ...]
    seek: SeekCurve
    overhead_ms: float
    sector_bytes: int = 512
    note: str = ""

    @property
    def cylinders(self) -> int:
        return sum(c for c, _ in self.zones)

    @property
    def capacity_bytes(self) -> int:
        return sum(c * spt for c, spt in self.zones) * self.heads * self.sector_bytes

    @property
    def revolution_s(self) -> float:
        return 60.0 / self.rpm


HP97560 = DiskParams(
    name="hp97560",
    rpm=4002.0,
    heads=19,
    zones=((1962, 72),),
    seek=SeekCurve(3.24, 0.400, 8.00, 0.008, 383),
    overhead_ms=2.2,
    note="HP 97560 as in Ruemmler & Wilkes, 'An introduction to disk drive modeling' (1994): 1962 cylinders, "
    "19 heads, 72 sectors/track, 4002 rpm; seek 3.24+0.400*sqrt(d) ms below 383 cylinders, 8.00+0.008*d "
    "beyond. The controller overhead (2.2 ms) is an assumption of vmio, not a figure checked against "
    "the paper.",
)


def _drive_7200() -> DiskParams:
    # A representative 1 TB 7,200 rpm drive: 4 heads, 8 zones from 1,900 down to 1,000 sectors per track.
    # Seek: 0.8 ms to the next track, 8.5 ms at one third of the stroke, 16 ms full stroke
    # (datasheet-typical values).
    spts = [1900 - i * 128 for i in range(8)]
    per_zone_sectors = 1_000_000_000_000 // 512 // 8
    zones = tuple((math.ceil(per_zone_sectors / (4 * spt)), spt) for spt in spts)
    cyl = sum(c for c, _ in zones)
    brk = cyl // 3
    b = (8.5 - 0.8) / math.sqrt(brk)
    e = (16.0 - 8.5) / (cyl - brk)
    return DiskParams(
        name="7200",
        rpm=7200.0,
        heads=4,
        zones=zones,
        seek=SeekCurve(0.8, b, 8.5 - e * brk, e, brk),
        overhead_ms=0.2,
        note="A representative 1 TB, 7,200 rpm drive (8 zones, 1900..1004 sectors/track, "
        "0.8 ms track-to-track, "
        "8.5 ms one-third-stroke and 16 ms full-stroke seek, 0.2 ms controller overhead).",
    )


DRIVE_7200 = _drive_7200()
BUILTIN = {"7200": DRIVE_7200, "hp97560": HP97560}


def builtin_disk(name: str) -> DiskParams:
    """A built-in parameter set by name (``7200`` or ``hp97560``)."""
    try:
        return BUILTIN[name]
    except KeyError:
        raise InputError(f"unknown disk model {name!r}; use one of {sorted(BUILTIN)}") from None


@dataclass(frozen=True)
class Geometry:
    """Lookup tables derived from ``DiskParams`` for mapping sectors to (cylinder, angle, rate)."""

    zone_first_sector: NDArray[np.int64]
    zone_first_cyl: NDArray[np.int64]
    zone_spt: NDArray[np.int64]
    heads: int

    @classmethod
    def of(cls, params: DiskParams) -> Geometry:
        spt = np.array([s for _, s in params.zones], dtype=np.int64)
        cyls = np.array([c for c, _ in params.zones], dtype=np.int64)
        sectors = cyls * spt * params.heads
        first_sector = np.concatenate([[0], np.cumsum(sectors)[:-1]]).astype(np.int64)
        first_cyl = np.concatenate([[0], np.cumsum(cyls)[:-1]]).astype(np.int64)
        return cls(first_sector, first_cyl, spt, params.heads)

    def locate(
        self, sector: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
        """Per sector: cylinder, angular position (fraction of a turn) and sectors per track of its zone."""
        zone = np.searchsorted(self.zone_first_sector, sector, side="right") - 1
        rel = sector - self.zone_first_sector[zone]
        spt = self.zone_spt[zone]
        per_cyl = spt * self.heads
        cyl = self.zone_first_cyl[zone] + rel // per_cyl
        angle = (rel % spt).astype(np.float64) / spt
        return cyl.astype(np.int64), angle, spt.astype(np.int64)
