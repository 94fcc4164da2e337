"""The bare host as a target: a file vmio creates and fully writes, or a block device."""

from __future__ import annotations

import os
from pathlib import Path

from vmio.errors import InputError
from vmio.spec import HostTarget
from vmio.system.safety import is_block_device

CHUNK = 4 << 20


def prepare_file(path: str | Path, size: int) -> bool:
    """Make ``path`` a file of ``size`` bytes whose every block is written (no holes, no unwritten
    extents, so reads reach the device). Returns True when it had to write. An existing file of the
    right size or larger is kept as it is."""
    path = Path(path)
    try:
        if path.exists() and path.stat().st_size >= size:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        pattern = os.urandom(CHUNK)
        tmp = path.with_name(path.name + ".vmio-partial")
        with open(tmp, "wb") as out:
            written = 0
            while written < size:
                n = min(CHUNK, size - written)
                out.write(pattern[:n])
                written += n
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(
            f"cannot create the target file {str(path)!r} of {size} bytes: {exc.strerror}"
        ) from exc
    return True


def prepare(target: HostTarget) -> int | None:
    """Ready a host target; return the size fio should use (None: the whole block device)."""
    if is_block_device(target.path):
        return target.size
    if target.size is None:
        if Path(target.path).is_file():
            return Path(target.path).stat().st_size
        raise InputError(
            f'target {target.name!r}: {target.path!r} does not exist; give its size (e.g. size = "1G") '
            "so vmio can create it"
        )
    prepare_file(target.path, target.size)
    return target.size
