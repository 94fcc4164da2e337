"""A non-replicated baseline beside the replicated pool (bitisle-dstore-2014, Fig. 2's comparison with a general
service): the same OSDs with one copy (``replicas=1``), or a local file through fio's libaio engine
(``file:PATH``), profiled with the same mix, depth, block sizes and durations: one more target of the
profile's campaign.

A ``replicas=N`` baseline is a pool ``POOL-sizeN`` made beside the cluster's pool on the same CRUSH rule
and removed afterwards. A ``file:PATH`` baseline uses an existing file as it is (its whole size), or
creates a fully written 1 GiB file (the size of vmio's RBD image); a block device is written only when it
holds no data (the same check as every host target).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vmio.dstore.cluster import ClusterRef
from vmio.errors import InputError
from vmio.system.process import Runner
from vmio.system.safety import check_target_write, is_block_device
from vmio.targets.host import prepare_file

DEFAULT_FILE_BYTES = 1 << 30


@dataclass(frozen=True)
class Baseline:
    """What to compare the replicated pool with: ``replicas`` copies on the same OSDs, or a local file."""

    label: str
    replicas: int | None = None
    path: Path | None = None


def parse_baseline(text: str, ref: ClusterRef) -> Baseline:
    """``replicas=N`` (N below the pool's copies) or ``file:PATH``."""
    if text.startswith("file:"):
        path = text.removeprefix("file:")
        if not path:
            raise InputError(
                f"--baseline {text!r}: give a path after 'file:', e.g. file:/var/lib/vmio/base.img"
            )
        return Baseline(text, path=Path(path))
    key, eq, value = text.partition("=")
    if key == "replicas" and eq:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if not 1 <= n < max(2, ref.replicas):
            raise InputError(
                f"--baseline {text!r}: replicas must be a whole number from 1 to {max(1, ref.replicas - 1)} "
                f"(fewer copies than the pool's {ref.replicas})"
            )
        if ref.root is None:
            raise InputError(
                f"--baseline {text!r} makes a pool beside yours; it needs a cluster started by "
                "`vmio dstore up` (--dir), or use --baseline file:PATH"
            )
        return Baseline(f"replicas={n}", replicas=n)
    raise InputError(f"--baseline {text!r} is not a baseline; use replicas=1 or file:PATH")


def prepare_file_baseline(path: Path, runner: Runner) -> int | None:
    """Make ``path`` ready for a ``file:`` baseline: its size (None: a whole block device), the file created
    (fully written, 1 GiB) if absent; refused if it holds data vmio did not put there."""
    check_target_write(str(path), (), runner)
    if is_block_device(str(path)):
        return None
    if path.is_dir():
        raise InputError(f"--baseline file:{path}: is a folder; give a file (it is created if absent)")
    if path.is_file():
        size = path.stat().st_size
        if size < 1 << 20:
            raise InputError(
                f"--baseline file:{path}: the file holds {size} bytes; give one of at least 1 MiB "
                "or a new path (vmio creates 1 GiB)"
            )
        return size
    prepare_file(path, DEFAULT_FILE_BYTES)
    return DEFAULT_FILE_BYTES
