"""An RBD image as a target, through fio's ``rbd`` engine (seed 002's replicated store, measured directly).

fio's rbd engine finds the cluster only through ``CEPH_CONF``; everything else goes in the job file.
For a cluster vmio started (``vmio dstore up``) the device under its folder is sampled too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vmio.campaign.measure import measure_with
from vmio.errors import InputError
from vmio.fio import jobfile
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe
from vmio.spec import Point, RbdTarget, Workload
from vmio.store import RunRecord
from vmio.system.blockdev import device_chain, reported_device

if TYPE_CHECKING:
    from vmio.campaign import Options


class RbdExecutor:
    def __init__(self, target: RbdTarget, options: Options) -> None:
        conf = Path(target.conf)
        if not conf.is_file():
            raise InputError(
                f"target {target.name!r}: conf {target.conf!r} is not a file; give the cluster's ceph.conf"
            )
        self.target, self.options = target, options
        self.env = {"CEPH_CONF": str(conf.resolve())}
        self.device: str | None = None
        self.probes: list[Probe] = [CpuProbe(options.proc_root)]
        if (conf.parent / "vmio-dstore.json").is_file():  # a local cluster on files: its OSDs' device
            chain = device_chain(conf.parent, options.sys_root, options.proc_root)
            self.device = reported_device(conf.parent, chain)
            self.probes += [DiskProbe(d, options.proc_root) for d in chain]

    def measure(self, point: Point, workload: Workload, rundir: Path, rec: RunRecord) -> None:
        rec.device = self.device
        engine = {"ioengine": "rbd", "clientname": self.target.clientname, "pool": self.target.pool,
                  "rbdname": self.target.image}  # fmt: skip
        place = jobfile.Placement(
            None, numjobs=workload.numjobs, total_jobs=workload.numjobs, engine_options=engine
        )
        measure_with([(None, place)], point, workload, rundir, rec, self.probes, self.options, env=self.env)
