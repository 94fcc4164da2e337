"""Page-cache engines: the compiled one and the protocol the plain-Python reference also follows."""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from vmio.membal import kernels
from vmio.mrc.exact import dense_pages

I64 = npt.NDArray[np.int64]


class EpochCounts(NamedTuple):
    """Per VM, over one epoch."""

    hits: list[int]
    hit_pages: list[int]  # distinct pages that hit
    refaults: list[int]  # misses on pages that had been evicted
    activations: list[int]  # refaults a cache twice as large would have hit


class Engine(Protocol):
    """Several VMs' LRU page caches over one dense page space."""

    def set_capacity(self, vm: int, pages: int) -> None: ...

    def resident(self) -> list[int]: ...

    def run(self, vms: I64, pages: I64) -> EpochCounts: ...


class FastEngine:
    """The numba engine: linked LRU lists in flat arrays, one epoch per call."""

    def __init__(self, n_vms: int, n_pages: int) -> None:
        self._state = (
            kernels.new_nodes(n_pages),
            np.full(n_vms, -1, dtype=np.int64),  # head
            np.full(n_vms, -1, dtype=np.int64),  # tail
            np.zeros(n_vms, dtype=np.int64),  # size
            np.zeros(n_vms, dtype=np.int64),  # capacity
            np.zeros(n_vms, dtype=np.int64),  # evictions so far
        )
        self._stamp = 0

    def set_capacity(self, vm: int, pages: int) -> None:
        self._state[4][vm] = pages
        kernels.lru_shrink(vm, self._state)

    def resident(self) -> list[int]:
        return [int(x) for x in self._state[3]]

    def run(self, vms: I64, pages: I64) -> EpochCounts:
        """Replay one epoch; per VM hits, distinct pages that hit, refaults, activations."""
        n = self._state[1].shape[0]
        counts = np.zeros((n, 4), dtype=np.int64)
        self._stamp += 1
        kernels.lru_run(vms, pages, self._state, counts, self._stamp)
        return EpochCounts(*(counts[:, k].tolist() for k in range(4)))


def lru_hits(pages: I64, capacity: int) -> int:
    """Hits of one LRU cache of ``capacity`` pages over ``pages`` (any non-negative page ids)."""
    dense, n = dense_pages(pages)
    engine = FastEngine(1, max(n, 1))
    engine.set_capacity(0, capacity)
    return engine.run(np.zeros(dense.size, dtype=np.int64), dense).hits[0]
