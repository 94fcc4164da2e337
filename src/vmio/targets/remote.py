"""Hosts running ``fio --server``: one fio client here drives them all, so they start together.

vmio cannot see a remote host's /proc, so only this host's CPU is sampled; a remote block device cannot
be probed for data either, so writes to a remote ``/dev/...`` path need ``--destroy-data`` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vmio.campaign.measure import measure_with
from vmio.errors import ToolError, UnsafeTargetError
from vmio.fio import jobfile
from vmio.metrics.sampler import CpuProbe, Probe
from vmio.spec import Point, RemoteTarget, Workload
from vmio.store import RunRecord
from vmio.system.ports import free_port, wait_for_port
from vmio.system.process import Supervised

if TYPE_CHECKING:
    from vmio.campaign import Options


def check_remote_writes(target: RemoteTarget, destroy: Sequence[str]) -> None:
    for host, path in zip(target.hosts, target.paths, strict=True):
        if path.startswith("/dev/") and path not in destroy:
            raise UnsafeTargetError(
                f"refusing to write to {path} on {host}: vmio cannot check a remote device for data. "
                f"If its data may be destroyed, pass --destroy-data {path}"
            )


class RemoteExecutor:
    def __init__(self, target: RemoteTarget, options: Options) -> None:
        self.target, self.options = target, options
        self.probes: list[Probe] = [CpuProbe(options.proc_root)]

    def measure(self, point: Point, workload: Workload, rundir: Path, rec: RunRecord) -> None:
        total = workload.numjobs * len(self.target.hosts)
        endpoints: list[tuple[str | None, jobfile.Placement]] = [
            (host, jobfile.Placement(path, self.target.size, numjobs=workload.numjobs, total_jobs=total))
            for host, path in zip(self.target.hosts, self.target.paths, strict=True)
        ]
        measure_with(endpoints, point, workload, rundir, rec, self.probes, self.options)


class LocalFioServer:
    """``fio --server`` on 127.0.0.1 and a free port, for tests and single-host demos of remote targets."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.proc = Supervised(["fio", f"--server=127.0.0.1,{self.port}"], stdout=None, stderr=None)
        if not wait_for_port("127.0.0.1", self.port, 10):
            self.proc.stop()
            raise ToolError(f"fio --server did not listen on 127.0.0.1:{self.port} within 10 s")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> LocalFioServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.stop()
