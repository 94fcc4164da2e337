"""The replicated store through a failure: one OSD stopped part way through a time-series run of seed
002's mix and started again later (a replicated store's promise is to keep serving meanwhile).

The OSD is stopped as an operator stops one for maintenance: ``ceph osd set noout`` (the data stays where
it is), then SIGTERM to the daemon, which tells the mon it is going down; it is started again with the
same command ``vmio dstore up`` used, and ``noout`` is cleared once it is back up. fio (rbd engine, from
this host) logs IOPS and mean latency per second (``write_iops_log``/``write_lat_log``,
``log_avg_msec=1000``, epoch timestamps) and keeps going past I/O errors (``continue_on_error=all``) so
they are counted rather than ending the run. Beside it, ``ceph osd tree`` and ``ceph pg stat`` are sampled
about once a second. After fio ends the PGs are polled until all are active+clean; ``clean_after_s`` is
the time from the OSD's restart to that moment. The health checks come from the mgr's PG statistics a
report or two behind ``ceph pg stat`` (a run that ends on all PGs active+clean can still read
PG_DEGRADED), so ``ceph health`` is then polled for up to ``HEALTH_SETTLE_S``: ``healthy_after_s`` is when
it said HEALTH_OK, ``health_checks_after`` the checks it still raised if it never did.

Times are seconds since fio was launched (its rbd connection takes a few tenths of a second more).
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vmio.dstore import cluster, daemons
from vmio.dstore.cluster import ClusterRef, ceph, pg_summary
from vmio.dstore.rbdfio import RbdJob, render_job
from vmio.errors import ClusterError, FioError, InputError, VmioError
from vmio.fio import output
from vmio.fio import run as fiorun
from vmio.fio.totals import totals
from vmio.system.process import Runner
from vmio.units import format_size

SAMPLE_EVERY_S = 1.0
CLEAN_DEADLINE_S = 180.0
HEALTH_SETTLE_S = 30.0


@dataclass(frozen=True)
class Outage:
    """Which OSD to stop, when (``at_s``) and when to start it again (``back_at_s``), in run seconds."""

    osd: int
    at_s: float
    back_at_s: float

    def check(self, ref: ClusterRef, runtime_s: float) -> None:
        if not 0 <= self.osd < ref.osds:
            raise InputError(f"--fail-osd {self.osd!r}: the cluster has OSDs 0 to {ref.osds - 1}")
        if not 0 < self.at_s < self.back_at_s < runtime_s:
            raise InputError(
                f"--at {self.at_s:g}s, --back-at {self.back_at_s:g}s, --runtime {runtime_s:g}s: need "
                "0 < at < back-at < runtime so the run shows the outage and the recovery"
            )


@dataclass(frozen=True)
class Second:
    """One logged second of the run: IOPS (both directions) and the I/O-weighted mean latency."""

    t_s: float
    iops: float
    read_iops: float
    write_iops: float
    mean_lat_ms: float | None


@dataclass(frozen=True)
class Sample:
    """One sample of the cluster: whether the failed OSD is up, and the PGs per state."""

    t_s: float
    osd_up: bool | None
    pg_states: dict[str, int]


@dataclass
class DegradedRun:
    """Everything the run saw."""

    outage: Outage
    bs: int
    runtime_s: float
    iodepth: int
    rwmixread: int
    replicas: int
    stopped_at_s: float | None = None
    stop_clean: bool | None = None
    started_at_s: float | None = None
    clean_at_s: float | None = None
    seconds: list[Second] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    io_errors: int = 0
    fio_error: int = 0
    totals: dict[str, float] = field(default_factory=dict)
    health_after: str = "unknown"
    health_checks_after: list[str] = field(default_factory=list)
    healthy_at_s: float | None = None

    @property
    def clean_after_s(self) -> float | None:
        """From the OSD's restart to all PGs active+clean again."""
        if self.clean_at_s is None or self.started_at_s is None:
            return None
        return max(0.0, self.clean_at_s - self.started_at_s)

    @property
    def healthy_after_s(self) -> float | None:
        """From the OSD's restart to ``ceph health`` saying HEALTH_OK again."""
        if self.healthy_at_s is None or self.started_at_s is None:
            return None
        return max(0.0, self.healthy_at_s - self.started_at_s)

    @property
    def io_failed(self) -> bool:
        return self.io_errors > 0 or self.fio_error != 0

    def down_window(self) -> tuple[float, float] | None:
        """First and last sample time at which ``ceph osd tree`` showed the OSD down."""
        down = [s.t_s for s in self.samples if s.osd_up is False]
        return (min(down), max(down)) if down else None

    def iops_while_down(self) -> float | None:
        """Mean IOPS of the logged seconds inside the window the samples saw the OSD down."""
        window = self.down_window()
        if window is None:
            return None
        inside = [s.iops for s in self.seconds if window[0] <= s.t_s <= window[1] + 1.0]
        return sum(inside) / len(inside) if inside else None

    def to_json(self) -> dict[str, object]:
        window = self.down_window()
        return {
            "osd": self.outage.osd,
            "at_s": self.outage.at_s,
            "back_at_s": self.outage.back_at_s,
            "bs": self.bs,
            "runtime_s": self.runtime_s,
            "iodepth": self.iodepth,
            "rwmixread": self.rwmixread,
            "replicas": self.replicas,
            "stopped_at_s": self.stopped_at_s,
            "stop_clean": self.stop_clean,
            "started_at_s": self.started_at_s,
            "down_seen_s": list(window) if window else None,
            "iops_while_down": self.iops_while_down(),
            "io_failed": self.io_failed,
            "io_errors": self.io_errors,
            "fio_error": self.fio_error,
            "clean_after_s": self.clean_after_s,
            "health_after": self.health_after,
            "health_checks_after": self.health_checks_after,
            "healthy_after_s": self.healthy_after_s,
            "totals": self.totals,
            "seconds": [asdict(s) for s in self.seconds],
            "samples": [asdict(s) for s in self.samples],
        }


def run_degraded(
    ref: ClusterRef,
    outage: Outage,
    *,
    bs: int = 4096,
    runtime_s: float = 60.0,
    iodepth: int = 50,
    rwmixread: int = 30,
    runner: Runner | None = None,
    clean_deadline_s: float = CLEAN_DEADLINE_S,
) -> DegradedRun:
    """Run seed 002's mix on ``ref`` for ``runtime_s`` while ``outage`` stops and restarts one OSD."""
    runner = runner or Runner()
    outage.check(ref, runtime_s)
    layout = cluster.layout_of(ref)
    name = f"osd.{outage.osd}"
    if daemons.owned_pid(layout.pid_file(name), layout.conf) is None:
        raise ClusterError(f"{name} is not running; start from a healthy cluster (`vmio dstore status`)")
    run = DegradedRun(outage, bs, runtime_s, iodepth, rwmixread, ref.replicas)
    with tempfile.TemporaryDirectory(prefix="vmio-degraded-") as tmp:
        prefix = str(Path(tmp) / "deg")
        extra = {
            "write_iops_log": prefix,
            "write_lat_log": prefix,
            "log_avg_msec": "1000",
            "log_unix_epoch": "1",
            "continue_on_error": "all",
        }
        job = RbdJob(bs=bs, runtime_s=runtime_s, iodepth=iodepth, rwmixread=rwmixread, extra=extra)
        (Path(tmp) / "job.fio").write_text(render_job(ref, job))
        ceph(runner, ref.conf, "osd", "set", "noout")
        limit_s = runtime_s + 90.0
        t0 = time.time()
        fio = fiorun.Background(
            [fiorun.Endpoint(None, Path(tmp) / "job.fio")],
            timeout=limit_s,
            cwd=Path(tmp),
            log=Path(tmp) / "fio.json",
            env=ref.env(),
        )
        try:
            _drive(run, runner, ref, layout, name, fio, t0, limit_s)
        finally:
            fio.stop()
            if run.stopped_at_s is not None and run.started_at_s is None:
                daemons.start(runner, layout, "osd", str(outage.osd))  # never leave it stopped
                run.started_at_s = time.time() - t0
            ceph(runner, ref.conf, "osd", "unset", "noout")
        _read_fio(run, fio.text(), fio.returncode)
        run.seconds = per_second(Path(tmp), "deg", t0)
    _wait_clean(run, runner, ref, t0, time.monotonic() + clean_deadline_s)
    _wait_healthy(run, runner, ref, t0, time.monotonic() + HEALTH_SETTLE_S)
    return run


def _drive(
    run: DegradedRun,
    runner: Runner,
    ref: ClusterRef,
    layout: Any,
    name: str,
    fio: fiorun.Background,
    t0: float,
    limit_s: float,
) -> None:
    """Stop and start the OSD on time while a thread samples the cluster, until fio ends."""
    done = threading.Event()
    sampler = threading.Thread(target=_sample_loop, args=(run, runner, ref, t0, done), daemon=True)
    sampler.start()
    try:
        while fio.running():
            t = time.time() - t0
            if run.stopped_at_s is None and t >= run.outage.at_s:
                run.stopped_at_s = round(t, 2)
                run.stop_clean = daemons.stop_one(layout.run_dir, layout.conf, name)
            elif run.started_at_s is None and run.stopped_at_s is not None and t >= run.outage.back_at_s:
                run.started_at_s = round(t, 2)
                daemons.start(runner, layout, "osd", str(run.outage.osd))
            else:
                time.sleep(0.05)
        if fio.timed_out:
            raise FioError(f"fio ran past {limit_s:g} s under an OSD failure and was stopped")
        fio.finished()
    finally:
        done.set()
        sampler.join(timeout=60.0)
    if run.started_at_s is not None:
        started = run.started_at_s
        run.clean_at_s = next((s.t_s for s in run.samples if s.t_s > started and _clean(s)), None)


def _sample_loop(run: DegradedRun, runner: Runner, ref: ClusterRef, t0: float, done: threading.Event) -> None:
    """About once a second until ``done``: ``ceph osd tree`` and ``ceph pg stat`` (a failed sample is
    skipped: the mon may be busy while the OSD goes down)."""
    while not done.is_set():
        with contextlib.suppress(VmioError, ValueError):
            run.samples.append(_sample(runner, ref, run.outage.osd, t0))
        done.wait(SAMPLE_EVERY_S)


def _sample(runner: Runner, ref: ClusterRef, osd: int, t0: float) -> Sample:
    tree = json.loads(ceph(runner, ref.conf, "osd", "tree", "--format", "json", timeout=20.0))
    status = next((n.get("status") for n in tree.get("nodes", []) if n.get("id") == osd), None)
    _, states = pg_summary(runner, ref.conf)
    return Sample(round(time.time() - t0, 2), None if status is None else status == "up", states)


def _read_fio(run: DegradedRun, text: str, returncode: int | None) -> None:
    """Errors fio counted (``total_err``) or ended with, and the run's totals."""
    try:
        result = output.parse(text, job_errors=True)
    except FioError:
        run.fio_error = returncode or -1
        return
    run.io_errors = result.io_errors
    run.fio_error = result.job_error or (returncode or 0)
    if result.job_error:
        return
    try:
        t = totals(result).total
    except FioError:
        return
    run.totals = {
        "iops": t.iops,
        "mean_lat_ms": t.mean_lat_ms,
        "p99_lat_ms": t.p99_lat_ms,
        "max_lat_ms": t.max_lat_ms,
        "ios": t.ios,
    }


_LOG_LINE = re.compile(r"^\s*(\d+),\s*(\d+),\s*(\d+),")


def per_second(folder: Path, prefix: str, t0: float) -> list[Second]:
    """One row per logged second from fio's averaged IOPS and latency logs (epoch ms timestamps, at each
    window's end); a second with no completions has no latency."""
    iops: dict[int, dict[int, float]] = {}
    lat: dict[int, dict[int, float]] = {}
    first: int | None = None
    for kind, into in (("iops", iops), ("lat", lat)):
        for log in sorted(folder.glob(f"{prefix}_{kind}.*.log")):
            rows = [m.groups() for m in map(_LOG_LINE.match, log.read_text().splitlines()) if m]
            for t_ms, value, ddir in rows:
                if first is None or kind == "iops" and int(t_ms) < first:
                    first = int(t_ms)
                key = round((int(t_ms) - first) / 1000)
                into.setdefault(key, {})[int(ddir)] = float(value)
    if first is None:
        return []
    rows_out = []
    for key in range(0, max(iops, default=-1) + 1):
        by_dir = iops.get(key, {})
        r, w = by_dir.get(0, 0.0), by_dir.get(1, 0.0)
        lats = lat.get(key, {})
        weights = {d: by_dir.get(d, 0.0) for d in lats}
        total_w = sum(weights.values())
        mean = (
            sum(lats[d] * weights[d] for d in lats) / total_w / 1e6
            if total_w > 0
            else (sum(lats.values()) / len(lats) / 1e6 if lats else None)
        )
        t = round(first / 1000 + key - t0, 2)
        rows_out.append(Second(t, r + w, r, w, None if mean is None else round(mean, 3)))
    return rows_out


def _clean(sample: Sample) -> bool:
    """The OSD is up and every PG is active+clean."""
    total = sum(sample.pg_states.values())
    return bool(sample.osd_up) and total > 0 and sample.pg_states.get("active+clean", 0) == total


def _wait_clean(run: DegradedRun, runner: Runner, ref: ClusterRef, t0: float, deadline: float) -> None:
    while run.clean_at_s is None and time.monotonic() < deadline:
        sample = _sample(runner, ref, run.outage.osd, t0)
        run.samples.append(sample)
        if _clean(sample):
            run.clean_at_s = sample.t_s
            return
        time.sleep(SAMPLE_EVERY_S)
    if run.clean_at_s is not None:
        return
    raise ClusterError(
        f"PGs not all active+clean {CLEAN_DEADLINE_S:g} s after osd.{run.outage.osd} came back; "
        f"last seen {run.samples[-1].pg_states if run.samples else {}}"
    )


def _wait_healthy(run: DegradedRun, runner: Runner, ref: ClusterRef, t0: float, deadline: float) -> None:
    """Poll ``ceph health`` until HEALTH_OK or ``deadline``; keep the last status and its checks."""
    while True:
        run.health_after, run.health_checks_after = cluster.health(runner, ref.conf)
        if run.health_after == "HEALTH_OK":
            run.healthy_at_s = time.time() - t0
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(SAMPLE_EVERY_S)


def format_run(run: DegradedRun) -> str:
    """The run per second, the OSD's state from the nearest earlier sample, and the summary."""
    name = f"osd.{run.outage.osd}"
    lines = [
        f"{name} stopped at {_s(run.stopped_at_s)} (asked {run.outage.at_s:g} s), started again at "
        f"{_s(run.started_at_s)} (asked {run.outage.back_at_s:g} s); {format_size(run.bs)} blocks, "
        f"{100 - run.rwmixread} % writes, {run.iodepth} outstanding, {run.replicas} copies",
        f"{'t s':>6} {'IOPS':>8} {'mean ms':>9} {name:>7}  PGs",
    ]
    for sec in run.seconds:
        before = [s for s in run.samples if s.t_s <= sec.t_s]
        sample = before[-1] if before else None
        state = "-" if sample is None or sample.osd_up is None else ("up" if sample.osd_up else "down")
        pgs = ", ".join(f"{n} {k}" for k, n in sorted(sample.pg_states.items())) if sample else ""
        mean = f"{sec.mean_lat_ms:9.2f}" if sec.mean_lat_ms is not None else f"{'-':>9}"
        lines.append(f"{sec.t_s:6.1f} {sec.iops:8.0f} {mean} {state:>7}  {pgs}")
    window = run.down_window()
    lines.append(
        f"{name} seen down by `ceph osd tree` from {window[0]:.1f} s to {window[1]:.1f} s; "
        f"mean IOPS meanwhile {run.iops_while_down() or 0:.0f}"
        if window
        else f"{name} was never seen down by `ceph osd tree`"
    )
    failed = (
        f"I/O failed: {run.io_errors} errors counted by fio"
        + (f", fio error {run.fio_error}" if run.fio_error else "")
        if run.io_failed
        else "no I/O failed"
    )
    lines.append(failed)
    after, healthy = run.clean_after_s, run.healthy_after_s
    health = (
        f"HEALTH_OK {healthy:.1f} s after the restart"
        if healthy is not None
        else f"health still {run.health_after} ({', '.join(run.health_checks_after) or 'no checks named'}) "
        f"{HEALTH_SETTLE_S:g} s later"
    )
    lines.append(
        f"active+clean again {after:.1f} s after the restart; {health}"
        if after is not None
        else f"not active+clean again; health {run.health_after}"
    )
    return "\n".join(lines)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"
