"""An RBD image as a target, through fio's ``rbd`` engine (seed 002's replicated store, measured directly).

fio's rbd engine finds the cluster only through ``CEPH_CONF``; everything else goes in the job file.
For a cluster vmio started (``vmio dstore up``) the device under its folder is sampled too.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from vmio.errors import InputError
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe
from vmio.spec import RbdTarget, Workload
from vmio.system import device_facts
from vmio.system.blockdev import device_chain, reported_device
from vmio.targets import placement
from vmio.targets.base import Endpoint, Env, Facts, Notes, nothing_to_watch


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
