"""Access streams of one VM, as page numbers ``0..footprint-1``; all randomness from the Generator given.

hitachi-membal-2014's use cases: ``web-normal`` (requests for files spread over content larger than any cache: low
locality), ``web-burst`` (the same, plus bursts in which a small hot part of the content is requested
``factor`` times as often as the rest: medium locality), ``nfs-images`` (VMs booting from a few images,
each boot reading the image's narrow boot range: high locality).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from vmio.traces.cloudphysics import read_vscsi_pages

I64 = npt.NDArray[np.int64]


class Workload(Protocol):
    @property
    def footprint(self) -> int: ...

    def generate(self, n: int, rng: np.random.Generator) -> I64: ...


def _files(choose: I64, file_pages: int) -> I64:
    """Each chosen file read whole, its pages in order."""
    return (choose[:, None] * file_pages + np.arange(file_pages)[None, :]).reshape(-1)


@dataclass(frozen=True)
class Uniform:
    pages: int

    @property
    def footprint(self) -> int:
        return self.pages

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        return rng.integers(0, self.pages, n, dtype=np.int64)


@dataclass(frozen=True)
class Zipf:
    pages: int
    alpha: float

    @property
    def footprint(self) -> int:
        return self.pages

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        weights = np.arange(1, self.pages + 1, dtype=np.float64) ** -self.alpha
        cdf = np.cumsum(weights)
        picks = np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right")
        out: I64 = np.minimum(picks, self.pages - 1).astype(np.int64)
        return out


@dataclass(frozen=True)
class Scan:
    """Sequential runs of ``run`` pages from random offsets (streaming reads)."""

    pages: int
    run: int = 64

    @property
    def footprint(self) -> int:
        return self.pages

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        starts = rng.integers(0, self.pages, -(-n // self.run), dtype=np.int64)
        return ((starts[:, None] + np.arange(self.run)[None, :]) % self.pages).reshape(-1)[:n]


@dataclass(frozen=True)
class Loop:
    """The same ``pages`` pages over and over in order: LRU's cliff."""

    pages: int

    @property
    def footprint(self) -> int:
        return self.pages

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        return np.arange(n, dtype=np.int64) % self.pages


@dataclass(frozen=True)
class Phases:
    """Sub-workloads in turn, ``length`` accesses each, repeating; they share the VM's pages."""

    phases: tuple[tuple[Workload, int], ...]

    @property
    def footprint(self) -> int:
        return max(w.footprint for w, _ in self.phases)

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        parts: list[I64] = []
        done = 0
        i = 0
        while done < n:
            workload, length = self.phases[i % len(self.phases)]
            take = min(length, n - done)
            parts.append(workload.generate(take, rng))
            done += take
            i += 1
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Trace:
    """A recorded trace, pages renumbered densely, replayed from the start and wrapped if too short."""

    path: str
    format: str = "cloudphysics-csv"
    stream: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False, repr=False)

    @classmethod
    def load(cls, path: str, format: str = "cloudphysics-csv", page: int = 4096) -> Trace:
        raw = read_vscsi_pages(path, page)
        _, dense = np.unique(raw, return_inverse=True)
        return cls(path, format, dense.astype(np.int64).reshape(-1))

    @property
    def footprint(self) -> int:
        return int(self.stream.max()) + 1 if self.stream.size else 1

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        return np.resize(self.stream, n).astype(np.int64)


@dataclass(frozen=True)
class WebNormal:
    """Requests for whole files chosen uniformly over ``content_pages`` of content; with ``common_pages``,
    a share ``common_share`` of the requests go to the site's common part (its first ``common_pages``:
    front pages, style sheets, images every visitor's page view fetches) and the rest to the whole."""

    content_pages: int
    file_pages: int = 8
    common_pages: int = 0
    common_share: float = 0.0

    @property
    def footprint(self) -> int:
        return self.content_pages

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        files = max(self.content_pages // self.file_pages, 1)
        n_req = -(-n // self.file_pages)
        choose = rng.integers(0, files, n_req, dtype=np.int64)
        if self.common_pages and self.common_share > 0.0:
            common = min(max(self.common_pages // self.file_pages, 1), files)
            to_common = rng.random(n_req) < self.common_share
            choose = np.where(to_common, rng.integers(0, common, n_req, dtype=np.int64), choose)
        return _files(choose, self.file_pages)[:n]


@dataclass(frozen=True)
class WebBurst:
    """Web-normal access plus bursts: during a burst the first ``hot_pages`` get ``factor``× the rate."""

    content_pages: int
    hot_pages: int
    factor: float = 100.0
    burst_every: int = 4000
    burst_length: int = 2000
    file_pages: int = 8

    @property
    def footprint(self) -> int:
        return self.content_pages

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        files = max(self.content_pages // self.file_pages, 1)
        hot = min(max(self.hot_pages // self.file_pages, 1), files)
        n_req = -(-n // self.file_pages)
        in_burst = (np.arange(n_req) % self.burst_every) < self.burst_length
        p_hot = self.factor * hot / (self.factor * hot + (files - hot))
        to_hot = in_burst & (rng.random(n_req) < p_hot)
        choose = np.where(
            to_hot, rng.integers(0, hot, n_req, dtype=np.int64), rng.integers(0, files, n_req, dtype=np.int64)
        )
        return _files(choose, self.file_pages)[:n]


@dataclass(frozen=True)
class NfsImages:
    """VM images on an NFS server being booted: each boot reads one image's first ``boot_pages`` in order."""

    images: int
    boot_pages: int

    @property
    def footprint(self) -> int:
        return self.images * self.boot_pages

    def generate(self, n: int, rng: np.random.Generator) -> I64:
        boots = rng.integers(0, self.images, -(-n // self.boot_pages), dtype=np.int64)
        return _files(boots, self.boot_pages)[:n]
