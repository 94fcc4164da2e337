"""Whether an RBD image may be written: an image holds data unless it is empty or carries vmio's mark.

An image holds data when ``rbd du`` reports used space and its metadata lacks ``vmio.scratch`` (set by
``rbd image-meta set`` on every image vmio creates). Writing one needs ``--destroy-data rbd:POOL/IMAGE``.
This applies to ``dstore profile``, ``kind = "rbd"`` targets and QEMU targets' ``rbd:`` backings; the
file/device rule of part 1 decides ``--destroy-data PATH``, this module the ``rbd:`` spellings.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import ClusterError, UnsafeTargetError
from vmio.system.process import Runner

MARK = "vmio.scratch"
PREFIX = "rbd:"
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ImageState:
    exists: bool
    used_bytes: int = 0
    marked: bool = False

    @property
    def holds_data(self) -> bool:
        return self.exists and self.used_bytes > 0 and not self.marked


def name(pool: str, image: str) -> str:
    """The ``--destroy-data`` spelling of an image."""
    return f"{PREFIX}{pool}/{image}"


def _rbd(
    runner: Runner, conf: Path | str, *args: str, check: bool = True, auth: Sequence[str] = ()
) -> tuple[int, str]:
    argv = ["rbd", "-c", str(conf), *auth, *args]
    done = runner.run(argv, timeout=TIMEOUT_S, check=check, error=ClusterError)
    return done.returncode, done.stdout


def state(runner: Runner, conf: Path | str, pool: str, image: str, auth: Sequence[str] = ()) -> ImageState:
    """The image's used bytes (``rbd du``) and whether it carries vmio's mark."""
    code, _ = _rbd(runner, conf, "info", f"{pool}/{image}", check=False, auth=auth)
    if code != 0:
        return ImageState(exists=False)
    _, out = _rbd(runner, conf, "du", "--format", "json", f"{pool}/{image}", auth=auth)
    used = sum(int(i.get("used_size", 0)) for i in json.loads(out).get("images", []))
    _, meta = _rbd(runner, conf, "image-meta", "list", "--format", "json", f"{pool}/{image}", auth=auth)
    marked = MARK in (json.loads(meta) if meta.strip() else {})
    return ImageState(True, used, marked)


def check_write(
    runner: Runner, conf: Path | str, pool: str, image: str, destroy: Sequence[str], auth: Sequence[str] = ()
) -> None:
    """Raise ``UnsafeTargetError`` (exit 3) before any write to an image holding data not named in
    ``destroy``. A missing image is no data (the write fails on it later, or vmio creates it marked)."""
    if name(pool, image) in destroy:
        return
    found = state(runner, conf, pool, image, auth)
    if found.holds_data:
        raise UnsafeTargetError(
            f"refusing to write to RBD image {pool}/{image}: it holds {found.used_bytes} bytes of data and "
            f"vmio did not create it. If its data may be destroyed, pass --destroy-data {name(pool, image)}"
        )


def mark(runner: Runner, conf: Path | str, pool: str, image: str, auth: Sequence[str] = ()) -> None:
    """Mark an image vmio created as its scratch image."""
    _rbd(runner, conf, "image-meta", "set", f"{pool}/{image}", MARK, "1", auth=auth)


def create_scratch(
    runner: Runner, conf: Path | str, pool: str, size_mib: int, *, image: str = "", auth: Sequence[str] = ()
) -> str:
    """Create a new marked image (a fresh name unless given; ``rbd create`` fails on an existing one)."""
    image = image or f"vmio-scratch-{uuid.uuid4().hex[:12]}"
    _rbd(runner, conf, "create", "--size", str(size_mib), f"{pool}/{image}", auth=auth)
    try:
        mark(runner, conf, pool, image, auth)
    except BaseException:
        remove_scratch(runner, conf, pool, image, auth)
        raise
    return image


def remove_scratch(runner: Runner, conf: Path | str, pool: str, image: str, auth: Sequence[str] = ()) -> None:
    """Remove an image, only if it carries vmio's mark."""
    if state(runner, conf, pool, image, auth).marked:
        _rbd(runner, conf, "rm", "--no-progress", f"{pool}/{image}", check=False, auth=auth)
