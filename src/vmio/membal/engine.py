"""Page-cache engines: the compiled one and the protocol the plain-Python reference also follows."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from vmio.membal import kernels

I64 = npt.NDArray[np.int64]


class Engine(Protocol):
    """Several VMs' LRU page caches over one dense page space."""

    def set_capacity(self, vm: int, pages: int) -> None: ...

    def resident(self) -> list[int]: ...

    def run(self, vms: I64, pages: I64) -> tuple[list[int], list[int]]: ...


class FastEngine:
    """The numba engine: linked LRU lists in flat arrays, one epoch per call."""

    def __init__(self, n_vms: int, n_pages: int) -> None:
        self._state = (
            np.full(n_pages, -1, dtype=np.int64),  # prev
            np.full(n_pages, -1, dtype=np.int64),  # nxt
            np.zeros(n_pages, dtype=np.bool_),  # resident
            np.full(n_vms, -1, dtype=np.int64),  # head
            np.full(n_vms, -1, dtype=np.int64),  # tail
            np.zeros(n_vms, dtype=np.int64),  # size
            np.zeros(n_vms, dtype=np.int64),  # capacity
            np.zeros(n_pages, dtype=np.int64),  # hit stamp
        )
        self._stamp = 0

    def set_capacity(self, vm: int, pages: int) -> None:
        self._state[6][vm] = pages
        kernels.lru_shrink(vm, self._state)

    def resident(self) -> list[int]:
        return [int(x) for x in self._state[5]]

    def run(self, vms: I64, pages: I64) -> tuple[list[int], list[int]]:
        """Replay one epoch; per VM (hits, distinct pages that hit)."""
        n = self._state[3].shape[0]
        hits = np.zeros(n, dtype=np.int64)
        hit_pages = np.zeros(n, dtype=np.int64)
        self._stamp += 1
        kernels.lru_run(vms, pages, self._state, hits, hit_pages, self._stamp)
        return [int(x) for x in hits], [int(x) for x in hit_pages]


def lru_hits(pages: I64, capacity: int) -> int:
    """Hits of one LRU cache of ``capacity`` pages over ``pages`` (any non-negative page ids)."""
    _, dense = np.unique(pages, return_inverse=True)
    engine = FastEngine(1, int(dense.max()) + 1 if dense.size else 1)
    engine.set_capacity(0, capacity)
    hits, _ = engine.run(np.zeros(dense.size, dtype=np.int64), dense.astype(np.int64))
    return hits[0]
