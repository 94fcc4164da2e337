"""Second configurations for a side-by-side profile: pool size 2 vs 3, RBD striping on vs off.

Each comparison makes a variant next to the cluster's pool/image (a pool ``POOL-size2`` or an image
``IMAGE-striped``), profiles both, and removes the variant afterwards.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

from vmio.dstore.cluster import ClusterRef, ceph, pg_summary, wait_clean
from vmio.errors import ClusterError, InputError
from vmio.system.process import Runner

KINDS = {
    "replicas": ("pool size 2", "pool size 3"),
    "striping": ("striping on (64K × 4)", "striping off"),
}
STRIPE_UNIT = 64 << 10
STRIPE_COUNT = 4


def check_kind(kind: str) -> tuple[str, str]:
    """The two labels of comparison ``kind``."""
    if kind not in KINDS:
        raise InputError(f"--compare {kind!r} is not a comparison; use one of {', '.join(KINDS)}")
    return KINDS[kind]


def variant_ref(ref: ClusterRef, kind: str) -> ClusterRef:
    """How the variant of ``kind`` beside ``ref`` is reached (its names follow from ``ref``'s)."""
    check_kind(kind)
    return sized_ref(ref, 2) if kind == "replicas" else replace(ref, image=f"{ref.image}-striped")


def sized_ref(ref: ClusterRef, size: int) -> ClusterRef:
    """The pool ``POOL-sizeN`` of ``size`` copies beside ``ref``'s, with an image of the same name."""
    return replace(ref, pool=f"{ref.pool}-size{size}", replicas=size)


def make_variant(runner: Runner, ref: ClusterRef, kind: str, image_mib: int = 1024) -> ClusterRef:
    """Create the variant configuration of ``kind`` beside ``ref``; return how to reach it."""
    check_kind(kind)
    if kind == "replicas":
        return make_sized_pool(runner, ref, 2, image_mib)
    image = variant_ref(ref, kind).image
    _rbd(
        runner,
        ref,
        "create",
        "--size",
        str(image_mib),
        "--stripe-unit",
        str(STRIPE_UNIT),
        "--stripe-count",
        str(STRIPE_COUNT),
        f"{ref.pool}/{image}",
    )
    return replace(ref, image=image)


def make_sized_pool(runner: Runner, ref: ClusterRef, size: int, image_mib: int = 1024) -> ClusterRef:
    """A pool ``POOL-sizeN`` of ``size`` copies on the same OSDs and CRUSH rule as ``ref``'s pool, with an
    image of the same name; remove it with :func:`remove_variant`. Size 1 needs the mon's
    ``mon allow pool size one`` (set by ``vmio dstore up``)."""
    if not 1 <= size <= ref.osds:
        raise InputError(f"a pool of {size!r} copies needs 1 to {ref.osds} copies on {ref.osds} OSDs")
    pool = sized_ref(ref, size).pool
    rule = json.loads(
        ceph(runner, ref.conf, "osd", "pool", "get", ref.pool, "crush_rule", "--format", "json")
    )["crush_rule"]
    before, _ = pg_summary(runner, ref.conf)
    ceph(runner, ref.conf, "osd", "pool", "create", pool, "32", "32", "replicated", str(rule))
    try:
        ceph(runner, ref.conf, "osd", "pool", "set", pool, "size", str(size), "--yes-i-really-mean-it")
        ceph(runner, ref.conf, "osd", "pool", "set", pool, "min_size", "1")
        ceph(runner, ref.conf, "osd", "pool", "application", "enable", pool, "rbd")
        wait_clean(runner, ref.conf, time.monotonic() + 120.0, expected=before + 32)
        _rbd(runner, ref, "create", "--size", str(image_mib), f"{pool}/{ref.image}")
    except BaseException:
        _remove_pool(runner, ref, pool)
        raise
    return sized_ref(ref, size)


def remove_variant(runner: Runner, base: ClusterRef, variant: ClusterRef) -> None:
    """Remove what :func:`make_variant` created."""
    _rbd(runner, base, "rm", "--no-progress", f"{variant.pool}/{variant.image}")
    if variant.pool != base.pool:
        _remove_pool(runner, base, variant.pool)


def _remove_pool(runner: Runner, base: ClusterRef, pool: str) -> None:
    ceph(runner, base.conf, "osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it")


def _rbd(runner: Runner, ref: ClusterRef, *args: str) -> None:
    runner.run(["rbd", "-c", str(ref.conf), *args], timeout=120.0, error=ClusterError)
