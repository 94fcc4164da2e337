"""An RBD image as a target, through fio's ``rbd`` engine (bitisle-dstore-2014's replicated store, measured directly).

fio's rbd engine finds the cluster only through ``CEPH_CONF``; everything else goes in the job file.
For a cluster vmio started (``vmio dstore up``) the device under its folder is sampled too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from vmio.errors import InputError
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe
from vmio.spec import RbdTarget, Target, Workload
from vmio.system import device_facts, rbdimage
from vmio.system.blockdev import device_chain, reported_device
from vmio.system.cephclient import authenticate, client_conf
from vmio.targets import placement
from vmio.targets.base import Endpoint, Env, Facts, Notes, nothing_to_watch
from vmio.targets.kind import Checks
from vmio.targets.qemu import ceph_client
from vmio.targets.traits import RbdTraits


class RbdRig:
    def __init__(self, target: RbdTarget, env: Env, client_conf: Path | None = None) -> None:
        """``client_conf``: the conf fio reads (a per-run copy naming the target's keyring); default its conf."""
        conf = Path(target.conf)
        if not conf.is_file():
            raise InputError(
                f"target {target.name!r}: conf {target.conf!r} is not a file; give the cluster's ceph.conf"
            )
        self.target = target
        self.fio_env = {"CEPH_CONF": str(client_conf or conf.resolve())}
        self.device: str | None = None
        self.probes: list[Probe] = [CpuProbe(env.proc_root)]
        if (conf.parent / "vmio-dstore.json").is_file():  # a local cluster on files: its OSDs' device
            chain = device_chain(conf.parent, env.sys_root, env.proc_root)
            self.device = reported_device(conf.parent, chain)
            self.probes += [DiskProbe(d, env.proc_root) for d in chain]

    def endpoints(self, workload: Workload) -> list[Endpoint]:
        return placement.endpoints(self.target, workload)

    def facts(self) -> Facts:
        t = self.target
        return Facts(device=self.device, host={"storage": [device_facts.rbd_facts(t.pool, t.image, t.conf)]})

    def watch(self, campaign: str, point_key: str) -> contextlib.AbstractContextManager[Notes]:
        return nothing_to_watch()


class RbdKind(RbdTraits):
    """``kind = "rbd"``: a Ceph RBD image written by fio's ``rbd`` engine."""

    def preflight(self, target: Target, checks: Checks) -> None:
        t = _rbd(target)
        client = ceph_client(t)
        authenticate(checks.env.runner, Path(t.conf), client)  # a wrong key: one sentence, exit 2
        if checks.writes:
            rbdimage.check_write(checks.env.runner, t.conf, t.pool, t.image, checks.destroy, client.args())

    @contextlib.contextmanager
    def open(self, target: Target, env: Env) -> Iterator[RbdRig]:
        t = _rbd(target)
        with client_conf(Path(t.conf).resolve(), ceph_client(t)) as conf:
            yield RbdRig(t, env, conf)

    def size(self, target: Target) -> int | None:
        return None

    def label(self, target: Target) -> str:
        return ""


def _rbd(target: Target) -> RbdTarget:
    assert isinstance(target, RbdTarget), target  # found by its kind: the spec built it as this class
    return target


KIND = RbdKind()
