"""The profile's job on an RBD image (its defaults: bitisle-dstore-2014's mix), and QEMU arguments for a VM disk on RBD.

fio itself runs the profile's points as a campaign's (``targets.rbd``: fio's ``rbd`` engine, every option in
the job file, ``CEPH_CONF`` naming the cluster); this module only says what a VM needs to reach the image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from vmio.dstore.cluster import ClusterRef
from vmio.dstore.settings import IODEPTH, RWMIXREAD
from vmio.errors import InputError


@dataclass(frozen=True)
class RbdJob:
    """One fio job against ``pool/image``; defaults are bitisle-dstore-2014's mix (30 % read, 50 outstanding I/Os)."""

    bs: int
    runtime_s: float = 10.0
    ramp_s: float = 0.0
    rw: str = "randrw"
    rwmixread: int = RWMIXREAD
    iodepth: int = IODEPTH
    numjobs: int = 1
    clientname: str = "admin"
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.bs <= 0 or self.bs % 512:
            raise InputError(f"block size {self.bs!r} is not a positive multiple of 512 bytes")
        if not 0 <= self.rwmixread <= 100:
            raise InputError(f"rwmixread {self.rwmixread!r} is not a percentage 0..100")
        if self.iodepth < 1 or self.numjobs < 1:
            raise InputError(f"iodepth {self.iodepth!r} and numjobs {self.numjobs!r} must be ≥ 1")
        if self.runtime_s <= 0:
            raise InputError(f"runtime {self.runtime_s!r} s must be positive")


def blockdev_args(
    ref: ClusterRef,
    *,
    node: str = "disk0",
    device: str = "virtio-blk-pci",
    cache_direct: bool = True,
    user: str | None = None,
) -> list[str]:
    """``-blockdev``/``-device`` arguments giving a VM a disk on the RBD image (QEMU's rbd driver), as
    ``user`` (default: ``ref``'s client; its keyring must be named in ``ref.conf``)."""
    spec = {
        "driver": "rbd",
        "node-name": node,
        "pool": ref.pool,
        "image": ref.image,
        "conf": str(ref.conf),
        "user": user or ref.client.id,
        "cache": {"direct": cache_direct, "no-flush": False},
    }
    return ["-blockdev", json.dumps(spec, separators=(",", ":")), "-device", f"{device},drive={node}"]


def drive_args(
    ref: ClusterRef, *, drive_id: str = "disk0", cache: str = "none", interface: str = "virtio"
) -> list[str]:
    """The legacy ``-drive`` form of the same disk, for QEMU command lines that still use it."""
    if cache not in ("none", "writeback", "writethrough", "directsync", "unsafe"):
        raise InputError(
            f"cache {cache!r} is not a QEMU cache mode; use none, writeback, writethrough or directsync"
        )
    for value in (ref.pool, ref.image, str(ref.conf)):
        if any(c in value for c in ":,@"):
            raise InputError(
                f"{value!r} contains ':', ',' or '@', which -drive cannot quote; use blockdev_args"
            )
    file = f"rbd:{ref.pool}/{ref.image}:conf={ref.conf}:id=admin"
    return ["-drive", f"file={file},format=raw,if={interface},id={drive_id},cache={cache}"]


def image_opts(ref: ClusterRef, user: str | None = None) -> str:
    """A ``json:`` filename for ``qemu-img`` reaching the same image as :func:`blockdev_args`."""
    spec = {
        "driver": "raw",
        "file": {
            "driver": "rbd",
            "pool": ref.pool,
            "image": ref.image,
            "conf": str(ref.conf),
            "user": user or ref.client.id,
        },
    }
    return "json:" + json.dumps(spec, separators=(",", ":"))
