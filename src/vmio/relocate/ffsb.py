"""A request stream built from FFSB's own profile, for kogakuin-relocate-2011's experiment (the calibrated default).

kogakuin-relocate-2011 ran FFSB in each VM but does not print the profile. FFSB ships one example profile
(``examples/profile_everything`` in FFSB 6.0-rc2, the same file in LTP's ``utils/ffsb-6.0-rc2`` and in
FFSB-Prime), and its source says what each operation does. Each assumption below names its source:

- threads per VM: ``num_threads = 4`` (profile_everything's benchmark threadgroup); each thread issues
  synchronous calls, so it has one request outstanding (``ffsb_thread.c``: one operation after another);
- think time: ``op_delay = 0`` (profile_everything); a thread issues its next request when one completes;
- operation mix: the weights of profile_everything, all 1: append, append_fsync, stat, create,
  create_fsync, delete, readall, writeall, writeall_fsync, open_close (``read``/``write`` are commented
  out there);
- file sizes: profile_everything's ``size_weight`` table (4k 33, 8k 21, 16k 13, 32k 10, 64k 8, 128k 5,
  256k 4, 512k 3, 8m 2, 32m 1);
- sequential runs inside files: ``readall``/``writeall`` read or overwrite the whole file from its start
  in ``read_blocksize``/``write_blocksize`` calls (``fileops.c``); ``append`` writes ``write_size = 40k``
  at the file's end; ``create`` writes a whole new file; the file is chosen uniformly
  (``filelist.c: choose_file``);
- what reaches the disk: ``directio = 0`` in profile_everything, so the guest's page cache merges a
  sequential run into larger requests; the seed's VMs ran on Xen, whose block front-end carries at most
  11 pages per request (``BLKIF_MAX_SEGMENTS_PER_REQUEST = 11`` in Xen's ``io/blkif.h``), so a run reaches
  the host as requests of at most 44 KiB (``max_request``); ``stat`` and ``open_close`` touch only cached inodes (no request);
  ``delete`` writes one 4 KiB metadata block next to the file; every ``*_fsync`` adds one 4 KiB journal
  write (ext3 ``data=ordered``), the journal lying at the start of the file area;
- where: the seed moved 2 GB of hot data per VM, so each VM's files fill one 2 GB region (the file area);
  its place inside the 100 GB image is drawn uniformly (the seed's figures show it differs per VM).

One quantity is neither in FFSB's profile nor in the seed: the share of a VM's requests that fall outside
its file area (the guest's own metadata, logs, swap, other files), spread uniformly over the image. That is
``cold_share``; vmio fits it once on the seed's 2-VM result and predicts the 3-VM one with it (see
``SEED_FIT``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vmio.errors import InputError
from vmio.traces.trace import READ, WRITE, Trace

KiB = 1024
OPS = (
    "append",
    "append_fsync",
    "stat",
    "create",
    "create_fsync",
    "delete",
    "readall",
    "writeall",
    "writeall_fsync",
    "open_close",
)
SIZE_WEIGHTS = (
    (4 * KiB, 33),
    (8 * KiB, 21),
    (16 * KiB, 13),
    (32 * KiB, 10),
    (64 * KiB, 8),
    (128 * KiB, 5),
    (256 * KiB, 4),
    (512 * KiB, 3),
    (8 * KiB * KiB, 2),
    (32 * KiB * KiB, 1),
)


@dataclass(frozen=True)
class SeedFit:
    """The one parameter fitted on kogakuin-relocate-2011's 2-VM result, and how (``benchmarks/relocate.py --fit``)."""

    cold_share: float
    target_gain_2vm: float = 0.10
    fitted_gain_2vm: float = 0.0
    method: str = ""

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


SEED_FIT = SeedFit(
    cold_share=0.01,
    fitted_gain_2vm=0.108,
    method="grid 0, 0.005, 0.01, 0.02, 0.03, 0.05; 2 VMs, seeds 0-9, 12,000 requests per VM; the median "
    "nearest +10 % (vmio.relocate.calibration.fit_cold_share, benchmarks/relocate.py --fit)",
)


@dataclass(frozen=True)
class FfsbProfile:
    """FFSB's profile_everything as it reaches one VM's disk, plus the fitted ``cold_share``."""

    vms: int = 2
    image_bytes: int = 100 * 10**9
    hot_bytes: int = 2 * 10**9
    threads: int = 4
    op_weights: tuple[int, ...] = (1,) * len(OPS)
    size_weights: tuple[tuple[int, int], ...] = SIZE_WEIGHTS
    write_size: int = 40 * KiB
    max_request: int = 44 * KiB
    block: int = 4 * KiB
    cold_share: float = 0.0
    requests_per_vm: int = 20_000

    def check(self) -> None:
        if self.vms < 1 or self.threads < 1 or self.requests_per_vm < self.threads:
            raise InputError(
                f"vms and threads must be at least 1 and requests per VM at least the threads: {self!r}"
            )
        if not 0 < self.hot_bytes <= self.image_bytes:
            raise InputError(
                f"hot size {self.hot_bytes!r} must be within the image size {self.image_bytes!r}"
            )
        if not 0.0 <= self.cold_share < 1.0:
            raise InputError(f"cold share {self.cold_share!r} must be in [0, 1)")
        if len(self.op_weights) != len(OPS) or sum(self.op_weights) <= 0:
            raise InputError(f"op weights {self.op_weights!r} must give {len(OPS)} weights, not all zero")


@dataclass(frozen=True)
class FfsbStream:
    """The trace, and the FFSB thread (replay stream) of each request: ``vm * threads + thread``."""

    trace: Trace
    thread: NDArray[np.int64]


def file_area(profile: FfsbProfile, rng: np.random.Generator) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Files laid one after another in the file area: (start offset inside the area, size) per file."""
    sizes = np.array([s for s, _ in profile.size_weights], dtype=np.int64)
    weights = np.array([w for _, w in profile.size_weights], dtype=np.float64)
    journal = 32 * profile.max_request
    mean = float((sizes * weights).sum() / weights.sum())
    n = int((profile.hot_bytes - journal) / mean * 1.2) + 8
    drawn = rng.choice(sizes, size=n, p=weights / weights.sum())
    start = journal + np.concatenate([[0], np.cumsum(drawn)[:-1]])
    keep = start + drawn <= profile.hot_bytes
    return start[keep], drawn[keep]


def _op_requests(
    profile: FfsbProfile, op: str, f_start: int, f_size: int, journal_slot: int
) -> list[tuple[int, int, int]]:
    """(offset in the file area, length, READ/WRITE) of one operation on one file."""
    out: list[tuple[int, int, int]] = []
    if op in ("readall", "writeall", "writeall_fsync", "create", "create_fsync"):
        kind = READ if op == "readall" else WRITE
        step = profile.max_request
        out.extend((f_start + pos, min(step, f_size - pos), kind) for pos in range(0, f_size, step))
    elif op in ("append", "append_fsync"):
        out.append((f_start + max(0, f_size - profile.block), profile.write_size, WRITE))
    elif op == "delete":
        out.append((f_start, profile.block, WRITE))
    if op.endswith("_fsync"):
        out.append((journal_slot * profile.block, profile.block, WRITE))
    return out


def _thread_requests(
    profile: FfsbProfile, files: tuple[NDArray[np.int64], NDArray[np.int64]], n: int, rng: np.random.Generator
) -> tuple[list[int], list[int], list[int]]:
    starts, sizes = files
    p = np.asarray(profile.op_weights, dtype=np.float64)
    p /= p.sum()
    offs: list[int] = []
    lens: list[int] = []
    kinds: list[int] = []
    journal_slots = 32 * profile.max_request // profile.block
    while len(offs) < n:
        ops = rng.choice(len(OPS), size=64, p=p)
        picks = rng.integers(0, len(starts), size=64)
        for o, k in zip(ops.tolist(), picks.tolist(), strict=True):
            jslot = int(rng.integers(0, journal_slots))
            for off, ln, kind in _op_requests(profile, OPS[o], int(starts[k]), int(sizes[k]), jslot):
                offs.append(off)
                lens.append(ln)
                kinds.append(kind)
    return offs[:n], lens[:n], kinds[:n]


@dataclass(frozen=True)
class FfsbLayout:
    """Per VM: where its file area starts in the image, and its files (start inside the area, size)."""

    hot_start: NDArray[np.int64]
    files: tuple[tuple[NDArray[np.int64], NDArray[np.int64]], ...]


def ffsb_layout(profile: FfsbProfile, rng: np.random.Generator, extent_bytes: int) -> FfsbLayout:
    """Each VM's file area at an extent-aligned place drawn uniformly inside its image, and its files."""
    profile.check()
    slots = (profile.image_bytes - profile.hot_bytes) // extent_bytes
    starts = rng.integers(0, slots + 1, size=profile.vms).astype(np.int64) * extent_bytes
    return FfsbLayout(starts, tuple(file_area(profile, rng) for _ in range(profile.vms)))


def _create_phase(
    profile: FfsbProfile, lay: FfsbLayout, v: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """FFSB's fileset creation (one thread per filesystem): every file written once, front to back."""
    offs: list[int] = []
    lens: list[int] = []
    for f_start, f_size in zip(*lay.files[v], strict=True):
        for off, ln, _k in _op_requests(profile, "create", int(f_start), int(f_size), 0):
            offs.append(off)
            lens.append(ln)
    return np.asarray(offs, dtype=np.int64) + int(lay.hot_start[v]), np.asarray(lens, dtype=np.int64)


def ffsb_profile_stream(
    profile: FfsbProfile, lay: FfsbLayout, rng: np.random.Generator, *, create_phase: bool = False
) -> FfsbStream:
    """``requests_per_vm`` requests per VM from ``threads`` FFSB threads, each a closed loop of depth 1.

    With ``create_phase`` the stream starts with FFSB's fileset creation (as a trace taken over a whole
    FFSB run shows it: every file of the area is written once before the benchmark phase), on a stream of
    its own per VM.
    """
    profile.check()
    per_thread = profile.requests_per_vm // profile.threads
    streams = profile.vms * profile.threads
    img: list[NDArray[np.int64]] = []
    thr: list[NDArray[np.int64]] = []
    off: list[NDArray[np.int64]] = []
    ln: list[NDArray[np.int64]] = []
    op: list[NDArray[np.int64]] = []
    for v in range(profile.vms):
        if create_phase:
            c_off, c_len = _create_phase(profile, lay, v)
            img.append(np.full(len(c_off), v, dtype=np.int64))
            thr.append(np.full(len(c_off), streams + v, dtype=np.int64))
            off.append(c_off)
            ln.append(c_len)
            op.append(np.full(len(c_off), WRITE, dtype=np.int64))
        for t in range(profile.threads):
            o, n_, k = _thread_requests(profile, lay.files[v], per_thread, rng)
            o_a = np.asarray(o, dtype=np.int64) + int(lay.hot_start[v])
            n_a = np.asarray(n_, dtype=np.int64)
            k_a = np.asarray(k, dtype=np.int64)
            cold = rng.random(per_thread) < profile.cold_share
            nc = int(cold.sum())
            o_a[cold] = rng.integers(0, profile.image_bytes // profile.block, size=nc) * profile.block
            n_a[cold] = profile.block
            k_a[cold] = rng.integers(0, 2, size=nc)
            img.append(np.full(per_thread, v, dtype=np.int64))
            thr.append(np.full(per_thread, v * profile.threads + t, dtype=np.int64))
            off.append(o_a)
            ln.append(n_a)
            op.append(k_a)
    image = np.concatenate(img)
    trace = Trace(
        time=np.zeros(len(image)),
        image=image.astype(np.int32),
        op=np.concatenate(op).astype(np.uint8),
        offset=np.concatenate(off),
        length=np.concatenate(ln),
        images=tuple(f"vm{i + 1}" for i in range(profile.vms)),
        time_unit=None,
    )
    return FfsbStream(trace, np.concatenate(thr))
