"""Run a campaign: every point not yet done, each recorded atomically; failures do not stop the rest.

Re-running skips the points already done (``force`` redoes them); a point interrupted by a crash left
nothing in the store and is simply run again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from vmio.campaign import offsets, sweep, until_stable
from vmio.campaign import timeline as tl
from vmio.campaign.measure import ServerLogs, measure_point, precondition
from vmio.errors import InputError, UnsafeTargetError, VmioError
from vmio.guest.image import GuestImage
from vmio.metrics.sampler import Sampler
from vmio.qemu.builds import QemuBuild
from vmio.qemu.caps import QemuCaps
from vmio.spec import Campaign, Point
from vmio.store import RunRecord, Store
from vmio.store.records import Precondition
from vmio.system import files
from vmio.system.process import Runner
from vmio.targets import Checks, Env, Rig, kind_of, open_target


@dataclass
class Options:
    force: bool = False
    destroy_data: tuple[str, ...] = ()
    interval: float = 1.0
    workdir: Path | None = None
    runner: Runner = field(default_factory=Runner)
    proc_root: str = "/proc"
    sys_root: str = "/sys"
    boot_timeout: float = 90.0
    trace_root: Path | None = None  # where VM targets with trace = true keep each point's request traces
    tick_s: float = 1.0  # how often the progress hears of a running point (its countdown and live IOPS)
    # a feature's own watch around each point (dstore: the cluster's OSD map): entered before the point is
    # measured, left after; what it gives is called with the point's record before the record is stored
    around_point: Callable[[Point], AbstractContextManager[Callable[[RunRecord], None]]] | None = None
    builds: dict[str, QemuBuild] = field(default_factory=dict)  # each QEMU target's build, resolved once
    caps: dict[str, QemuCaps] = field(default_factory=dict)  # each build's capabilities, probed once
    images: dict[str, GuestImage] = field(default_factory=dict)  # the VM targets' guest image, found once

    def target_env(self) -> Env:
        return Env(
            self.runner,
            self.proc_root,
            self.sys_root,
            self.boot_timeout,
            self.trace_root,
            self.destroy_data,
            builds=self.builds,
            caps=self.caps,
            images=self.images,
        )


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    point: str
    status: str  # "running" | "done" | "failed" | "stopped" (not run: its sweep passed stop_at)
    eta_s: float | None
    iops: float | None = None  # done: the point's measured IOPS (read + write); running: the device's, live
    point_left_s: float | None = (
        None  # running: the seconds the point still has (runtime + ramp), counting down
    )
    tick: bool = False  # a refresh while a point runs (sent every ``Options.tick_s``), not a new point
    error: str | None = None  # failed: the first line of what kept the point from being measured
    # done or failed: where the point's time went (``timeline``: steps from the point's start, store write
    # included) and its wall seconds, from the end of the point before it
    timeline: tuple[tl.Step, ...] = ()
    wall_s: float | None = None
    warnings: tuple[str, ...] = ()  # done or failed: what the point left that the user should hear of


class Live:
    """The running point's clock and the device IOPS its sampler last saw, refreshed by a thread."""

    def __init__(self, expected_s: float | None) -> None:
        self.started = time.monotonic()
        self.expected_s = expected_s
        self.sampler: Sampler | None = None

    def left_s(self) -> float | None:
        if self.expected_s is None:
            return None
        return max(0.0, self.expected_s - (time.monotonic() - self.started))

    def iops(self) -> float | None:
        """Read + write IOPS of the first device the sampler watches, over its last interval."""
        sampler = self.sampler
        if sampler is None:
            return None
        last: dict[str, float] = {}
        device = None
        for _, source, metric, value in list(sampler.samples):
            if not source.startswith("dev:") or metric not in ("read_iops", "write_iops"):
                continue
            device = device or source
            if source == device:
                last[metric] = value
        return sum(last.values()) if last else None


@contextlib.contextmanager
def ticking(live: Live, every_s: float, send: Callable[[Live], None]) -> Iterator[None]:
    """Call ``send(live)`` every ``every_s`` seconds until the block ends."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            try:
                send(live)
            except Exception:  # a refresh that fails (a closed stderr) must not end the run or print a trace
                return

    thread = threading.Thread(target=loop, name="vmio-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


@dataclass
class Outcome:
    done: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)  # points not run: their sweep passed its stop_at bound
    stops: list[dict[str, object]] = field(default_factory=list)  # where each such sweep stopped, and why
    measuring_s: float = 0.0  # fio's ramp and runtime, summed over the points run
    wall_s: float = 0.0  # the points' wall time, from the first's start to the last's store write


def _paths(target: object) -> list[str]:
    """The local files a target with a ``size`` creates: a host target's path, a QEMU target's backings."""
    path = getattr(target, "path", None)
    backing = getattr(target, "backing", None)
    return [str(path)] if isinstance(path, str) else [str(b) for b in backing or ()]


def preflight(campaign: Campaign, options: Options) -> None:
    """Refuse the whole campaign before any I/O if a write would touch a device or file holding data (or
    one in a folder another user controls), or if a target cannot run (a QEMU build that is not installed:
    the error says ``vmio qemu add``). Each target's kind judges it by its own rules."""
    made = frozenset(p for t in campaign.targets if getattr(t, "size", None) for p in _paths(t))
    checks = Checks(
        any(w.writes for w in campaign.workloads), options.destroy_data, options.target_env(), made
    )
    for target in campaign.targets:
        kind_of(target).preflight(target, checks)


def run(
    campaign: Campaign,
    spec_text: str,
    store: Store,
    options: Options,
    progress: Callable[[Progress], None] | None = None,
) -> Outcome:
    preflight(campaign, options)
    with store.exclusive_run():
        store.ensure_campaign(campaign.name, campaign.path, spec_text, campaign.canonical())
        if campaign.series is not None:
            store.set_series(campaign.name, campaign.series)
        if campaign.until is None:
            return _run(campaign, spec_text, store, options, progress)
        passes = _passes(spec_text, store, options, progress)
        return until_stable.run_passes(campaign, store, options.force, passes, lambda o: o.failed > 0, _add)


def _add(a: Outcome, b: Outcome) -> Outcome:
    """Two passes' outcomes as one (the points skipped are those of the first)."""
    return dataclasses.replace(
        a,
        done=a.done + b.done,
        failed=a.failed + b.failed,
        failures=a.failures + b.failures,
        stopped=a.stopped + b.stopped,
        stops=b.stops or a.stops,
        measuring_s=a.measuring_s + b.measuring_s,
        wall_s=a.wall_s + b.wall_s,
    )


def _passes(
    spec_text: str, store: Store, options: Options, progress: Callable[[Progress], None] | None
) -> Callable[[Campaign, bool], Outcome]:
    """One call runs the campaign's points up to its ``repetitions`` (skipping those done unless forced)."""

    def one(campaign: Campaign, force: bool) -> Outcome:
        return _run(campaign, spec_text, store, dataclasses.replace(options, force=force), progress)

    return one


def _run(
    campaign: Campaign,
    spec_text: str,
    store: Store,
    options: Options,
    progress: Callable[[Progress], None] | None,
) -> Outcome:
    store.ensure_campaign(campaign.name, campaign.path, spec_text, campaign.canonical())
    ops_offsets = offsets.plan(campaign, store)
    points = campaign.points()
    skip = set() if options.force else store.done_keys(campaign.name)
    todo = [p for p in points if p.key not in skip and p.legacy_key not in skip]  # older stores: bs=4096
    outcome = Outcome(skipped=len(points) - len(todo))
    report = progress or (lambda _: None)
    started = time.monotonic()
    preconditioned: set[str] = set()
    sweeps = sweep.Sweeps(campaign, store, skip)
    with _workdir(options) as workdir:
        current: Opened | None = None
        try:
            for i, planned in enumerate(todo):
                steps = tl.Timeline()
                sweeps.catch_up(planned)  # done points before this one: their latency may stop its sweep
                if sweeps.stopped(planned):
                    outcome.stopped.append(planned.key)
                    report(Progress(outcome.skipped + i + 1, len(points), planned.key, "stopped", None))
                    continue
                point, why_not = sweeps.resolve(planned)  # a share of the max point: the number of IOPS
                eta = _eta(started, i, len(todo), campaign, todo[i:])
                report(Progress(outcome.skipped + i, len(points), point.key, "running", eta))
                if current is not None and current.target != point.target:
                    # One target's executor at a time: idle VMs must not disturb another target's points.
                    with steps.step(tl.STOP):
                        current.stack.close()
                    current = None
                if current is None:
                    with steps.step(tl.BOOT):
                        current = _open(campaign, point, options, workdir)
                rundir = workdir / point.key.replace("/", "_").replace("%", "pct")
                rundir.mkdir(parents=True, exist_ok=True)
                with steps.step(tl.PRECONDITION):
                    conditioned = _precondition(campaign, point, current, workdir, options, preconditioned)
                if conditioned is None:  # nothing run: no step
                    steps.steps = [s for s in steps.steps if s[0] != tl.PRECONDITION]
                workload = campaign.workload(point.workload)
                live = Live(None if workload.ops else workload.runtime + workload.ramp)
                rest = _after(started, i, campaign, todo[i + 1 :])

                def tick(live: Live, i: int = i, key: str = point.key, rest: float = rest) -> None:
                    left = live.left_s()
                    eta = None if left is None else left + rest
                    at = outcome.skipped + i
                    report(Progress(at, len(points), key, "running", eta, live.iops(), left, tick=True))

                def keep(sampler: Sampler, live: Live = live) -> None:
                    live.sampler = sampler

                with ticking(live, options.tick_s, tick), _around(options, point) as finish:
                    rec = measure_point(
                        campaign,
                        point,
                        why_not or current.ready(),
                        rundir,
                        interval=options.interval,
                        runner=options.runner,
                        proc_root=options.proc_root,
                        sys_root=options.sys_root,
                        preconditioned=conditioned,
                        offsets=ops_offsets,
                        live=keep,
                        timeline=steps,
                        logs=current.logs,
                        last=i + 1 == len(todo) or todo[i + 1].target != point.target,
                    )
                finish(rec)
                rec.timeline = steps.stored()
                with steps.step(tl.STORE):
                    store.record(rec)
                wall = steps.now()
                outcome.measuring_s += steps.seconds(tl.MEASURING)
                outcome.wall_s += wall
                sweeps.measured(point)
                if rec.status == "done":
                    outcome.done += 1
                else:
                    outcome.failed += 1
                    outcome.failures.append(f"{point.key}: {rec.error}")
                    if why_not is None:
                        current.stack.close()  # a failed point may leave its VMs broken: start afresh
                        current = None
                iops = sum(r.iops for r in rec.results if r.role == "measure") if rec.results else None
                done = outcome.skipped + i + 1
                report(
                    Progress(
                        done, len(points), point.key, rec.status, None, iops, error=rec.error,
                        timeline=tuple(steps.steps), wall_s=wall, warnings=tuple(rec.warnings),
                    )
                )  # fmt: skip
        finally:
            if current is not None:
                current.stack.close()
            outcome.stops = sweeps.record()
    return outcome


def _precondition(
    campaign: Campaign, point: Point, opened: Opened, workdir: Path, options: Options, done: set[str]
) -> Precondition | None:
    """Precondition the point's target once, before its first point, if a workload asks for it."""
    wanted = [w for w in campaign.workloads if w.precondition]
    if not wanted or point.target in done or opened.rig is None:
        return None
    done.add(point.target)
    try:
        return precondition(opened.rig, wanted[0], workdir / f"precondition-{point.target}", options.runner)
    except VmioError as exc:
        opened.error = exc  # the target's points record why
        opened.rig = None
        return None


def _around(options: Options, point: Point) -> AbstractContextManager[Callable[[RunRecord], None]]:
    if options.around_point is None:
        return contextlib.nullcontext(lambda _: None)
    return options.around_point(point)


@dataclass
class Opened:
    """A target made ready for its points, or the error that kept it from starting."""

    target: str
    stack: contextlib.ExitStack
    rig: Rig | None = None
    error: VmioError | None = None
    logs: ServerLogs | None = None  # the seeded I/O logs put on its fio servers, removed when it closes

    def ready(self) -> Rig | VmioError:
        """The started target, or the error to record for its points."""
        if self.rig is not None:
            return self.rig
        assert self.error is not None
        return self.error


def _open(campaign: Campaign, point: Point, options: Options, workdir: Path) -> Opened:
    """Start the point's target (for VMs: boot them); a failure is kept for the point to record. The I/O
    logs its points put on its fio servers are removed before it stops, if its last point did not."""
    stack = contextlib.ExitStack()
    try:
        writes = any(w.writes for w in campaign.workloads)
        env = dataclasses.replace(options.target_env(), writes=writes, layers=campaign.layers)
        rig = stack.enter_context(open_target(campaign.target(point.target), env))
    except (UnsafeTargetError, InputError):
        stack.close()
        raise
    except VmioError as exc:
        stack.close()
        return Opened(point.target, stack, error=exc)
    logs = ServerLogs(Path(tempfile.mkdtemp(prefix="logs-", dir=workdir)), options.runner, rig.fio_env)
    stack.callback(logs.drop)  # a sweep's stopped points, or an error between points: nothing left there
    return Opened(point.target, stack, rig, logs=logs)


def _after(started: float, done: int, campaign: Campaign, rest: list[Point]) -> float:
    """The seconds the points after the running one will take: the mean so far, else their runtimes."""
    if not rest:
        return 0.0
    if done:
        return (time.monotonic() - started) / done * len(rest)
    workloads = {w.name: w for w in campaign.workloads}
    return sum(workloads[p.workload].runtime + workloads[p.workload].ramp + 1.0 for p in rest)


def _eta(started: float, done: int, todo: int, campaign: Campaign, rest: list[Point]) -> float | None:
    if done:
        return (time.monotonic() - started) / done * (todo - done)
    workloads = {w.name: w for w in campaign.workloads}
    return sum(workloads[p.workload].runtime + workloads[p.workload].ramp + 1.0 for p in rest)


@contextlib.contextmanager
def _workdir(options: Options) -> Iterator[Path]:
    if options.workdir is not None:
        workdir = options.workdir.resolve()  # fio runs inside each point's folder
        files.check_place(workdir / "job.fio", new=True)  # job files and logs: no other user's folder
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    with tempfile.TemporaryDirectory(prefix="vmio-run-") as tmp:
        yield Path(tmp)
