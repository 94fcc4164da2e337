"""How each kind of target measures one point. Every executor fills a ``RunRecord`` in place.

All of them share ``measure_with``: render job files, start the samplers, run fio (locally or as a client
of fio servers), stop the samplers, average the measured window (ramp excluded).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from vmio.errors import InputError
from vmio.fio import jobfile
from vmio.fio import run as fiorun
from vmio.fio.output import FioOutput
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe, Sampler, window_means
from vmio.spec import HostTarget, Point, QemuTarget, RbdTarget, RemoteTarget, Target, Workload
from vmio.store import RunRecord
from vmio.system.blockdev import device_chain, reported_device
from vmio.targets import host

if TYPE_CHECKING:
    from vmio.campaign.runner import Options

FIO_GRACE_S = 60.0


class Executor(Protocol):
    def measure(self, point: Point, workload: Workload, rundir: Path, rec: RunRecord) -> None: ...


def measure_with(
    endpoints: Sequence[tuple[str | None, jobfile.Placement]],
    point: Point,
    workload: Workload,
    rundir: Path,
    rec: RunRecord,
    probes: Sequence[Probe],
    options: Options,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run one point's fio on ``endpoints`` (server or None for local, and where its I/O goes)."""
    files = []
    texts = []
    for i, (server, where) in enumerate(endpoints):
        place = dataclasses.replace(where, lat_log_prefix=str(rundir / f"ops-{i}"))
        text = jobfile.render(
            workload,
            bs=point.bs,
            offered_iops=point.offered_iops,
            load_processes=point.load_processes,
            place=place,
        )
        path = rundir / f"job{i}.fio"
        path.write_text(text)
        files.append(fiorun.Endpoint(server, path))
        texts.append(f"# {server or 'local'}\n{text}" if len(endpoints) > 1 else text)
    rec.job_file = "\n".join(texts)
    timeout = (jobfile.OPS_TIME_LIMIT_S if workload.ops else workload.runtime) + workload.ramp + FIO_GRACE_S
    sampler = Sampler(probes, options.interval)
    with sampler:
        result = fiorun.run(files, timeout=timeout, runner=options.runner, cwd=rundir, env=env)
        end = sampler.elapsed()
    start, end = measured_window(result, workload, sampler.wall0, end)
    rec.results = result.results
    rec.fio_version = result.version or rec.fio_version
    rec.log = result.text or None
    rec.samples = sampler.samples
    rec.metrics = window_means(sampler.samples, start, end)
    if workload.ops:
        rec.oplat = fiorun.op_latencies(rundir, [server for server, _ in endpoints])


def measured_window(
    result: FioOutput, workload: Workload, wall0: float, exited: float
) -> tuple[float, float]:
    """fio's measured window on the sampler's clock: it ends when fio wrote its results (its own
    timestamp, before process teardown) and lasts the jobs' runtime (ramp excluded)."""
    end = exited
    if result.timestamp_ms is not None:
        end = min(exited, max(0.0, result.timestamp_ms / 1000 - wall0))
    if workload.ops:
        return 0.0, end
    runtime = max((r.runtime_ms for r in result.results), default=0) / 1000 or workload.runtime
    return max(0.0, end - runtime), end


class HostExecutor:
    """fio on this host against a file (created and written by vmio) or a block device."""

    def __init__(self, target: HostTarget, options: Options) -> None:
        self.target, self.options = target, options
        self.size = host.prepare(target)
        chain = device_chain(target.path, options.sys_root, options.proc_root)
        self.device = reported_device(target.path, chain)
        self.probes: list[Probe] = [DiskProbe(d, options.proc_root) for d in chain]
        self.probes.append(CpuProbe(options.proc_root))

    def measure(self, point: Point, workload: Workload, rundir: Path, rec: RunRecord) -> None:
        rec.device = self.device
        place = jobfile.Placement(
            self.target.path,
            self.size,
            numjobs=workload.numjobs,
            total_jobs=workload.numjobs,
        )
        measure_with([(None, place)], point, workload, rundir, rec, self.probes, self.options)


@contextlib.contextmanager
def executor_for(target: Target, options: Options) -> Iterator[Executor]:
    from vmio.targets.qemu import qemu_executor
    from vmio.targets.rbd import RbdExecutor
    from vmio.targets.remote import RemoteExecutor

    if isinstance(target, RbdTarget):
        yield RbdExecutor(target, options)
        return
    if isinstance(target, QemuTarget):
        with qemu_executor(target, options) as executor:
            yield executor
        return
    if isinstance(target, HostTarget):
        yield HostExecutor(target, options)
        return
    if isinstance(target, RemoteTarget):
        yield RemoteExecutor(target, options)
        return
    raise InputError(f"target {target.name!r}: kind {target.kind!r} is not supported")
