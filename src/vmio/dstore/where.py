"""Which cluster and RBD image a ``vmio dstore`` command works on: a cluster of ``vmio dstore up``
(``--dir``), or an existing cluster's ``ceph.conf`` with a pool and an image, as a named client."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from vmio.dstore import cluster
from vmio.errors import InputError
from vmio.system import rbdimage
from vmio.system.cephclient import CephClient, authenticate
from vmio.system.process import Runner

SCRATCH_MIB = 1024  # the image `dstore profile` makes for itself on an existing cluster (as `dstore up`)


@dataclass(frozen=True)
class Where:
    """The cluster as the command line names it (``--dir``, or ``--conf``/``--pool``/``--image``/
    ``--replicas``), and the client to connect as (``--client``/``--keyring``)."""

    dir: Path | None = None
    conf: Path | None = None
    pool: str | None = None
    image: str | None = None
    replicas: int = 3  # the pool size of an existing cluster
    client: str | None = None
    keyring: Path | None = None


def ceph_client(where: Where) -> CephClient:
    """The named client, its keyring checked (a keyring needs a client name)."""
    if where.keyring is not None and where.client is None:
        raise InputError(
            f"--keyring {str(where.keyring)!r} needs --client NAME, the client it holds a key for"
        )
    client = CephClient(where.client, where.keyring.absolute() if where.keyring else None)
    client.check()
    return client


def target(where: Where, runner: Runner | None = None) -> cluster.ClusterRef:
    """The cluster named by --dir, or by --conf/--pool/--image, as --client (its key checked first)."""
    ref = _target(where)
    authenticate(cluster.client_runner(ref, runner), ref.conf, ref.client)
    return ref


def _target(where: Where) -> cluster.ClusterRef:
    if where.dir is not None and where.conf is not None:
        raise InputError("give either --dir or --conf, not both")
    if where.dir is not None:
        return replace(cluster.load(where.dir), client=ceph_client(where))
    if where.conf is None:
        raise InputError(
            "no cluster given; use --dir DIR (from `vmio dstore up`) or --conf FILE --pool P --image I"
        )
    if not where.pool or not where.image:
        raise InputError(f"--conf {str(where.conf)!r} needs --pool and --image naming the RBD image to use")
    return cluster.existing(where.conf, where.pool, where.image, where.replicas, ceph_client(where))


@contextlib.contextmanager
def writable_target(
    where: Where, runner: Runner, destroy_data: tuple[str, ...] = ()
) -> Iterator[cluster.ClusterRef]:
    """The image a profile writes. On an existing cluster without --image: a new image marked as vmio's,
    removed after. Otherwise the named one, refused (exit 3) if it holds data not named in ``destroy_data``
    (``--destroy-data rbd:POOL/IMAGE``)."""
    if where.conf is not None and where.dir is None and not where.image:
        if not where.pool:
            raise InputError(f"--conf {str(where.conf)!r} needs --pool (vmio makes its own image there)")
        base = cluster.existing(where.conf, where.pool, "-", where.replicas, ceph_client(where))
        authenticate(runner, base.conf, base.client)
        image = rbdimage.create_scratch(runner, base.conf, base.pool, SCRATCH_MIB, auth=base.auth())
        try:
            yield replace(base, image=image)
        finally:
            rbdimage.remove_scratch(runner, base.conf, base.pool, image, base.auth())
        return
    ref = target(where, runner)
    runner = cluster.client_runner(ref, runner)
    rbdimage.check_write(runner, ref.conf, ref.pool, ref.image, destroy_data, ref.auth())
    yield ref
