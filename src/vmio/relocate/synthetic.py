"""FFSB-like multi-VM request streams, derived from what kogakuin-relocate-2011 describes and nothing more.

kogakuin-relocate-2011: several VMs on one host (Xen), each with a 100 GB virtual disk image on a 1 TB HDD, each running
FFSB; the images' accesses concentrate in hot regions (Fig. 4-7), and moving 2 GB of hot data per VM
captured them. The seed does not give FFSB's profile, so vmio assumes, and says so in every result:

- the images lie one after another from the start of the 1 TB disk;
- each image's hot region is one contiguous 2 GB run at a position drawn uniformly inside the image;
- a share ``hot_fraction`` (default 0.9: "most accesses") of requests falls uniformly in the hot region,
  the rest uniformly over the whole image (metadata, journal, other files);
- requests are 4 KiB, aligned, half reads; each VM runs ``threads`` FFSB threads (default 1), each with
  one synchronous request outstanding (a closed loop without think time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vmio.errors import InputError
from vmio.traces.trace import Trace


@dataclass(frozen=True)
class FfsbSpec:
    """Parameters of the FFSB-like stream; defaults as described in the module docstring."""

    vms: int = 2
    image_bytes: int = 100 * 10**9
    hot_bytes: int = 2 * 10**9
    hot_fraction: float = 0.9
    io_bytes: int = 4096
    read_fraction: float = 0.5
    requests_per_vm: int = 50_000
    threads: int = 1

    def check(self) -> None:
        if self.vms < 1 or self.requests_per_vm < 1 or self.threads < 1:
            raise InputError(f"vms, requests and threads must be at least 1: {self!r}")
        if not 0 < self.hot_bytes <= self.image_bytes:
            raise InputError(
                f"hot size {self.hot_bytes!r} must be within the image size {self.image_bytes!r}"
            )
        if not 0.0 <= self.hot_fraction <= 1.0:
            raise InputError(f"hot fraction {self.hot_fraction!r} must be between 0 and 1")


def hot_regions(spec: FfsbSpec, rng: np.random.Generator, extent_bytes: int) -> np.ndarray:
    """The byte offset of each VM's hot region (extent aligned)."""
    slots = (spec.image_bytes - spec.hot_bytes) // extent_bytes
    return rng.integers(0, slots + 1, size=spec.vms) * extent_bytes


def ffsb_stream(spec: FfsbSpec, hot_start: np.ndarray, rng: np.random.Generator) -> Trace:
    """``requests_per_vm`` requests per VM, interleaved in a global order (time 0: a closed loop)."""
    spec.check()
    n = spec.requests_per_vm * spec.vms
    image = np.repeat(np.arange(spec.vms, dtype=np.int32), spec.requests_per_vm)
    io = spec.io_bytes
    is_hot = rng.random(n) < spec.hot_fraction
    hot_off = hot_start[image] + rng.integers(0, spec.hot_bytes // io, size=n) * io
    cold_off = rng.integers(0, spec.image_bytes // io, size=n) * io
    offset = np.where(is_hot, hot_off, cold_off).astype(np.int64)
    op = (rng.random(n) >= spec.read_fraction).astype(np.uint8)
    order = np.argsort(np.tile(np.arange(spec.requests_per_vm), spec.vms), kind="stable")
    return Trace(
        time=np.zeros(n),
        image=image[order],
        op=op[order],
        offset=offset[order],
        length=np.full(n, io, dtype=np.int64),
        images=tuple(f"vm{i + 1}" for i in range(spec.vms)),
        time_unit=None,
    )
