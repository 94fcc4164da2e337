"""The measurement of one point, and the one place its ``RunRecord`` is filled in.

Render one job file per fio endpoint, start the samplers, run fio (locally or as a client of fio
servers), stop the samplers, average the measured window (ramp excluded). A point that fails is recorded
``failed`` with its error and the tail of what the tools printed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vmio.campaign import facts
from vmio.campaign import timeline as tl
from vmio.campaign.layers import tracing
from vmio.errors import InputError, ToolError, UnsafeTargetError, VmioError
from vmio.fio import iolog, jobfile
from vmio.fio import run as fiorun
from vmio.fio.output import FioOutput
from vmio.metrics.sampler import Sampler, window_means
from vmio.spec import Campaign, Point, Workload
from vmio.store.records import Precondition, RunRecord, Steady
from vmio.system.process import Runner
from vmio.targets import Rig
from vmio.targets.base import RunsFio

FIO_GRACE_S = 60.0
PRECONDITION_TIMEOUT_S = 6 * 3600.0


def measure_point(
    campaign: Campaign,
    point: Point,
    rig: Rig | VmioError,
    rundir: Path,
    *,
    interval: float,
    runner: Runner,
    proc_root: str = "/proc",
    sys_root: str = "/sys",
    preconditioned: Precondition | None = None,
    offsets: Sequence[int] | None = None,
    live: Callable[[Sampler], None] | None = None,
    timeline: tl.Timeline | None = None,
    logs: ServerLogs | None = None,
    last: bool = True,
) -> RunRecord:
    """Measure ``point`` on ``rig`` (or record the error that kept its target from starting); each step's
    span goes on ``timeline``. The seeded I/O logs a fio server replays are put there once for the points
    that share ``logs`` (the target's), and removed after its ``last`` point or a failed one; without
    ``logs``, put and removed around this point."""
    steps = timeline if timeline is not None else tl.Timeline()
    facts_at = steps.now()
    workload = swept_workload(campaign.workload(point.workload), point)
    target = campaign.target(point.target)
    rec = RunRecord(
        campaign=campaign.name,
        point_key=point.key,
        target=target.name,
        target_kind=target.kind,
        workload=workload.name,
        bs=point.bs,
        offered_iops=point.offered_iops,
        load_processes=point.load_processes,
        repetition=point.repetition,
        status="done",
        started=time.time(),
        ended=0.0,
        host=facts.collect(proc_root, runner),
        precondition=preconditioned,
        iodepth=workload.iodepth,
        offered_pct=point.offered_pct,
        arrivals=workload.arrivals if point.offered_iops is not None else None,
    )
    fio_version = rec.host.get("fio_version")
    rec.fio_version = fio_version if isinstance(fio_version, str) else None
    if workload.fio_file is not None:
        rec.fio_job = {
            "file": workload.fio_file,
            "section": workload.name.rpartition(":")[2],
            "replaced": list(workload.fio_replaced),
        }
    try:
        if isinstance(rig, VmioError):
            raise rig
        replay = _replay(campaign, workload, point, offsets)
        if replay is not None:  # the operations replayed the offsets stored with the campaign
            rec.ops_seed = campaign.seed
        layers = sys_root if campaign.layers else None
        mine = logs if logs is not None else ServerLogs(rundir, runner, rig.fio_env)
        try:
            _measure(
                point,
                workload,
                rig,
                rundir,
                rec,
                interval,
                runner,
                replay,
                mine,
                live,
                layers,
                steps,
                facts_at,
            )
        finally:
            if logs is None or last:
                _dropped(mine, rec)
    except (UnsafeTargetError, InputError):
        raise
    except VmioError as exc:
        rec.status = "failed"
        rec.error = str(exc).splitlines()[0]
        rec.log = (
            (rec.log or "") + str(exc) + (("\n" + exc.output[-8000:]) if isinstance(exc, ToolError) else "")
        )
    if logs is not None and rec.status != "done":  # the runner starts the target afresh: its logs go first
        _dropped(logs, rec)
    rec.ended = time.time()
    return rec


@dataclass
class ServerLogs:
    """The seeded I/O logs put on one target's fio servers (``iolog.put_job``), by server and text: a log
    is put once and replayed by every later point of the target that replays the same operations (the
    points of a campaign differ by offered load and load processes, not by their log), then removed by one
    fio run (``drop``). Each log is in this vmio's private folder on the server (``iolog.private_path``)."""

    folder: Path  # where the removing jobs are written and run
    runner: Runner
    env: Mapping[str, str] | None = None
    paths: dict[tuple[str | None, str], str] = field(
        default_factory=dict
    )  # (server, log text) -> its path there
    drops: list[fiorun.Endpoint] = field(default_factory=list)

    def drop(self) -> str | None:
        """Remove every log put so far (one fio run over the servers); why not, or None."""
        drops, self.drops = self.drops, []
        self.paths.clear()
        if not drops:
            return None
        (self.folder / "drop").mkdir(parents=True, exist_ok=True)
        try:
            fiorun.run(
                drops, timeout=PUT_TIMEOUT_S, runner=self.runner, cwd=self.folder / "drop", env=self.env
            )
        except VmioError as exc:  # a log left behind is no reason to lose the point's figures
            return f"the seeded I/O logs were not removed from the fio servers: {exc}"
        return None


def _dropped(logs: ServerLogs, rec: RunRecord) -> None:
    why = logs.drop()
    if why is not None:
        rec.log = (rec.log or "") + "\n" + why


def _replay(
    campaign: Campaign, workload: Workload, point: Point, offsets: Sequence[int] | None
) -> str | None:
    """The I/O log every measured process of ``point`` replays: the campaign's seeded offsets (None: the
    workload draws its own)."""
    if offsets is None or campaign.seed is None or not workload.ops:
        return None
    mine = list(offsets[: workload.ops])
    return iolog.render(mine, iolog.directions(campaign.seed, len(mine), workload.read_pct), point.bs)


def _measure(
    point: Point,
    workload: Workload,
    rig: Rig,
    rundir: Path,
    rec: RunRecord,
    interval: float,
    runner: Runner,
    replay: str | None,
    logs: ServerLogs,
    live: Callable[[Sampler], None] | None = None,
    layers: str | None = None,
    steps: tl.Timeline | None = None,
    facts_at: float = 0.0,
) -> None:
    steps = steps if steps is not None else tl.Timeline()
    found = rig.facts()
    rec.device, rec.accel = found.device, found.accel
    rec.qemu_version, rec.qemu_argv = found.qemu_version, found.qemu_argv
    rec.host.update(found.host)
    steps.add(tl.FACTS, facts_at, steps.now())
    jobs_at = steps.now()
    endpoints = rig.endpoints(workload)
    files, texts, puts = [], [], []
    put: dict[tuple[str | None, str], str] = {}  # the logs this point puts: (server, text) -> path there
    for i, ep in enumerate(endpoints):
        rec.numjobs = swept_place(ep.place, point).numjobs
        place = dataclasses.replace(
            swept_place(ep.place, point),
            lat_log_prefix=str(rundir / f"ops-{i}"),
            hist_log_prefix=str(rundir / f"hist-{i}"),
            lat_log_offsets=ep.server is None,
        )
        if replay is not None and ep.server is None:  # fio runs here: the log is a file beside the job
            (rundir / f"ops-{i}.iolog").write_text(replay)
            place = dataclasses.replace(place, iolog=str(rundir / f"ops-{i}.iolog"))
        elif replay is not None:  # a fio server reads its log where it runs: a fio job of its own puts it
            key = (ep.server, replay)
            log = logs.paths.get(key) or put.get(key)  # put for an earlier point, or for another endpoint
            if log is None:
                log = iolog.private_path(i)  # in a folder new and private for this run (fio makes it 0700)
                job = rundir / f"put-iolog-{i}.fio"
                job.write_text(iolog.put_job(replay, log))
                puts.append(fiorun.Endpoint(ep.server, job))
                put[key] = log
            place = dataclasses.replace(place, iolog=log)
        text = point_job(workload, point, place)
        path = rundir / f"job{i}.fio"
        path.write_text(text)
        files.append(fiorun.Endpoint(ep.server, path))
        texts.append(f"# {ep.server or 'local'}\n{text}" if len(endpoints) > 1 else text)
    rec.job_file = "\n".join(texts)
    timeout = (jobfile.OPS_TIME_LIMIT_S if workload.ops else workload.runtime) + workload.ramp + FIO_GRACE_S
    if puts:  # before the measured run, which only reads (fio's --readonly)
        fiorun.run(puts, timeout=PUT_TIMEOUT_S, runner=runner, cwd=rundir, env=rig.fio_env, what=PUT_WHAT)
        for (server, text), log in put.items():  # removed with the target's logs, whatever its points do
            drop = logs.folder / f"drop-iolog-{len(logs.drops)}.fio"
            drop.write_text(iolog.drop_job(log, len(text.encode())))
            logs.drops.append(fiorun.Endpoint(server, drop))
            logs.paths[server, text] = log
    steps.add(tl.JOBS, jobs_at, steps.now())
    _run_point(workload, rig, files, timeout, runner, rundir, rec, interval, live, layers, steps)


def _run_point(
    workload: Workload,
    rig: Rig,
    files: list[fiorun.Endpoint],
    timeout: float,
    runner: Runner,
    rundir: Path,
    rec: RunRecord,
    interval: float,
    live: Callable[[Sampler], None] | None,
    layers: str | None = None,
    steps: tl.Timeline | None = None,
) -> None:
    """fio's run of one point with the samplers (and, with ``layers``, the sys root: the layers' tracers)
    around it; its steps go on ``steps``."""
    steps = steps if steps is not None else tl.Timeline()
    notes = None
    try:
        with (
            rig.watch(rec.campaign, rec.point_key) as notes,
            tracing(
                layers is not None,
                rig,
                runner,
                layers or "/sys",
                timeout,
                workload.ramp + workload.runtime,
                min(workload.bs, default=512),
            ) as traced,
        ):
            sampler = Sampler(rig.probes, interval)
            with steps.step(tl.SAMPLER_START):
                sampler.start()
            try:
                if live is not None:  # the run's progress reads the device's IOPS while fio runs
                    live(sampler)
                offset = steps.now() - sampler.elapsed()  # the sampler's clock on the point's
                launched = sampler.elapsed()
                result = _run_fio(rig, files, timeout, runner, rundir, workload.read_pct)
                exited = sampler.elapsed()
            finally:
                with steps.step(tl.SAMPLER_STOP):
                    sampler.stop()
            start, end = measured_window(result, workload, sampler.wall0, exited)
            window = (sampler.t0 + start, sampler.t0 + end)
            fio_steps(steps, offset, launched, start - (0.0 if workload.ops else workload.ramp), end, exited)
            rec.results = result.results
            rec.fio_version = result.version or rec.fio_version
            _fio_disks(rec.host.get("storage"), result)
            rec.log = result.text or None
            rec.samples = sampler.samples
            rec.metrics = window_means(sampler.samples, start, end)
            if workload.steady is not None:
                rec.steady = steady_outcome(result, str(workload.steady))
            # the samples' clock on the wall (Unix seconds at t = 0) and the window the means cover, so
            # the samples line up with anything else logged meanwhile (iostat, Ceph, a guest's log)
            rec.samples_t0 = round(sampler.wall0, 6)
            rec.measured_window = (round(start, 6), round(end, 6))
            with steps.step(tl.LOGS):
                if workload.ops:
                    rec.oplat = fiorun.op_latencies(rundir, [ep.server for ep in files])
                else:
                    rec.hist_log = fiorun.hist_logs(rundir, [ep.server for ep in files])
    except VmioError:
        rec.log = (rec.log or "") + (notes.log if notes else "") or None
        raise
    if traced is not None:  # stopped: its last slice is in
        traced.finish(rec, result.results, window)
    rec.host.update(notes.host)
    if notes.log:
        rec.log = (rec.log or "") + notes.log


def fio_steps(
    steps: tl.Timeline, offset: float, launched: float, began: float, end: float, exited: float
) -> None:
    """fio's run as three steps on the point's clock (``offset``: the sampler's clock to it): from its
    launch to the start of the ramp (client and servers starting, the jobs sent), the ramp and runtime, and
    from the runtime's end to the client's exit."""
    began = min(max(launched, began), exited)
    end = min(max(began, end), exited)
    steps.add(tl.FIO_START, offset + launched, offset + began)
    steps.add(tl.MEASURING, offset + began, offset + end)
    steps.add(tl.FIO_END, offset + end, offset + exited)


def _fio_disks(storage: object, result: FioOutput) -> None:
    """A remote path's storage (its ``fio_disks`` left open by the rig): the disks fio's ``disk_util`` names
    on that host, or "unknown" when it names none there."""
    remote = (
        [e for e in storage if isinstance(e, dict) and "fio_disks" in e] if isinstance(storage, list) else []
    )
    for entry in remote:
        host = str(entry.get("host", "")).rsplit(":", 1)[0]
        mine = [d for d in result.disk_util if d.get("hostname") == host]
        if not mine and len(remote) == 1:  # one server: fio names its host as it calls itself
            mine = list(result.disk_util)
        entry["fio_disks"] = sorted({str(d.get("name")) for d in mine}) or "unknown"


PUT_TIMEOUT_S = 120.0
PUT_WHAT = "the fio job putting the seeded I/O logs on the fio servers"


def point_job(workload: Workload, point: Point, place: jobfile.Placement) -> str:
    """The fio job file one process of ``point`` runs at ``place`` (what ``run --dry-run`` shows, too)."""
    return jobfile.render(
        workload,
        bs=point.bs,
        offered_iops=point.offered_iops,
        load_processes=point.load_processes,
        place=place,
    )


def swept_workload(workload: Workload, point: Point) -> Workload:
    """The workload as ``point`` runs it: at its swept queue depth and job count."""
    if point.iodepth is not None:
        workload = dataclasses.replace(workload, iodepth=point.iodepth)
    if point.jobs is not None:
        workload = dataclasses.replace(workload, numjobs=point.jobs)
    return workload


def swept_place(place: jobfile.Placement, point: Point) -> jobfile.Placement:
    """A fio process's placement at ``point``'s swept job count (``numjobs`` on hosts, ``jobs_per_vm`` in
    each VM): the jobs of every process together share an offered rate."""
    if point.jobs is None or place.numjobs == point.jobs:
        return place
    processes = max(1, place.total_jobs // max(1, place.numjobs))
    return dataclasses.replace(place, numjobs=point.jobs, total_jobs=processes * point.jobs)


def steady_outcome(result: FioOutput, criterion: str) -> Steady:
    """Whether every measured job reached steady state, and when the last one did (fio then stops it)."""
    jobs = [s for s in result.steady if not s[1].startswith("load")]
    reached = bool(jobs) and all(s[2] for s in jobs)
    at_s = max(s[3] for s in jobs) / 1000 if reached else None
    return {"criterion": criterion, "reached": reached, "at_s": at_s, "jobs": len(jobs)}


def precondition(rig: Rig, workload: Workload, rundir: Path, runner: Runner) -> Precondition:
    """Precondition the target's device or file (SNIA PTS): a sequential fill, then random writes of twice
    its size; what was written and how long it took."""
    rundir.mkdir(parents=True, exist_ok=True)
    files = []
    size = None
    for i, ep in enumerate(rig.endpoints(workload)):
        size = ep.place.size
        path = rundir / f"precondition{i}.fio"
        path.write_text(jobfile.precondition(ep.place, ep.place.size))
        files.append(fiorun.Endpoint(ep.server, path))
    started = time.monotonic()
    result = _run_fio(rig, files, PRECONDITION_TIMEOUT_S, runner, rundir, None)
    done = {
        job: bs * sum(r.total_ios for r in result.results if r.job == job)
        for job, bs in jobfile.PRECONDITION_BS.items()
    }
    return {
        "size": size,
        "fill_bytes": done["fill"],
        "random_bytes": done["random"],
        "seconds": round(time.monotonic() - started, 3),
    }


def _run_fio(
    rig: Rig, files: list[fiorun.Endpoint], timeout: float, runner: Runner, cwd: Path, read_pct: int | None
) -> FioOutput:
    """fio's client here, or the rig's own way (``RunsFio``: libvirt guests through their agent)."""
    if isinstance(rig, RunsFio):
        return rig.run_fio(files, timeout=timeout, cwd=cwd, read_pct=read_pct)
    return fiorun.run(files, timeout=timeout, runner=runner, cwd=cwd, env=rig.fio_env, read_pct=read_pct)


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
