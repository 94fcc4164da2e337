"""How images lie on the shared disk before relocation, in extents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vmio.errors import InputError
from vmio.relocate.heat import check_extents, extents_of


@dataclass(frozen=True)
class Layout:
    """Images ``names`` of ``nextents`` extents each, image ``i`` starting at extent ``base[i]``."""

    names: tuple[str, ...]
    nextents: tuple[int, ...]
    base: tuple[int, ...]
    extent_bytes: int
    disk_extents: int

    def __post_init__(self) -> None:
        check_extents("the disk", self.disk_extents, self.extent_bytes)
        for name, n in zip(self.names, self.nextents, strict=False):
            check_extents(f"image {name!r}", n, self.extent_bytes)

    @classmethod
    def consecutive(
        cls, names: Sequence[str], sizes: Sequence[int], extent_bytes: int, disk_bytes: int | None = None
    ) -> Layout:
        """Images one after another from the start of the disk (``disk_bytes`` defaults to their sum)."""
        if extent_bytes <= 0 or extent_bytes % 512:
            raise InputError(f"extent size {extent_bytes!r} must be a positive multiple of 512 bytes")
        n = [extents_of(s, extent_bytes) for s in sizes]
        base = np.concatenate([[0], np.cumsum(n)[:-1]]).astype(int).tolist() if n else []
        total = sum(n)
        disk = total if disk_bytes is None else disk_bytes // extent_bytes
        if disk < total:
            raise InputError(
                f"images need {total * extent_bytes} bytes but the disk has {disk_bytes}; "
                "use smaller images or a larger disk"
            )
        return cls(tuple(names), tuple(n), tuple(base), extent_bytes, disk)

    def physical_offset(self, image: NDArray[np.int32], offset: NDArray[np.int64]) -> NDArray[np.int64]:
        """Where byte ``offset`` of ``image`` lies on the disk before relocation."""
        base = np.asarray(self.base, dtype=np.int64) * self.extent_bytes
        return base[image] + offset

    def as_dict(self) -> dict[str, object]:
        return {
            "extent_bytes": self.extent_bytes,
            "disk_bytes": self.disk_extents * self.extent_bytes,
            "images": [
                {"name": n, "extents": e, "base_extent": b}
                for n, e, b in zip(self.names, self.nextents, self.base, strict=True)
            ],
        }
