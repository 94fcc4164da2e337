"""The replicated store through a failure: one OSD stopped part way through a time-series run of seed
002's mix and started again later (a replicated store's promise is to keep serving meanwhile).

The run is a campaign of one point (the pool's image through fio's rbd engine, one block size), run by
``campaign.runner``; the outage is the runner's watch around that point (``Options.around_point``). The OSD
is stopped as an operator stops one for maintenance: ``ceph osd set noout`` (the data stays where it is),
then SIGTERM to the daemon, which tells the mon it is going down; it is started again with the same command
``vmio dstore up`` used, and ``noout`` is cleared once it is back up. Beside it, ``ceph osd tree`` and
``ceph pg stat`` are sampled about once a second. After fio ends the PGs are polled until all are
active+clean; ``clean_after_s`` is the time from the OSD's restart to that moment. The health checks come
from the mgr's PG statistics a report or two behind ``ceph pg stat`` (a run that ends on all PGs
active+clean can still read PG_DEGRADED), so ``ceph health`` is then polled for up to ``HEALTH_SETTLE_S``:
``healthy_after_s`` is when it said HEALTH_OK, ``health_checks_after`` the checks it still raised if it
never did.

Everything is the point's, in the store: its per-second figures are its series (fio's per-second latency
histograms: the completions and their mean in each second, per direction), the cluster's samples are its
samples (``ceph:osd.N`` ``up``, ``ceph:pgs`` per state), the outage's times its ``dstore`` facts; the run
printed is read back from there (:func:`stored_run`). Times are seconds since the point's samplers and fio
started (fio's rbd connection takes a few tenths of a second more).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from vmio.dstore import cluster, daemons
from vmio.dstore.cluster import ClusterRef, ceph, pg_summary
from vmio.dstore.figures import figures, of_stored
from vmio.errors import ClusterError, InputError, VmioError
from vmio.spec.model import Point as SpecPoint
from vmio.stats import histogram
from vmio.store import RunRecord, Store
from vmio.store.summaries import RunRow
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
        """Mean IOPS of the logged seconds wholly inside the outage: from vmio stopping the OSD's daemon to
        starting it again (a logged second covers the second up to its time). Where those times are not
        known, the window the samples saw the OSD down. Not that window alone: on a loaded host the samples are
        seconds apart, and a run whose samples saw the OSD down once, at an edge of the outage where no I/O
        completed, read 0 IOPS while fio completed I/O in every second inside it."""
        if self.stopped_at_s is not None and self.started_at_s is not None:
            low, high = self.stopped_at_s + 1.0, self.started_at_s
        elif (window := self.down_window()) is not None:
            low, high = window[0], window[1] + 1.0
        else:
            return None
        inside = [s.iops for s in self.seconds if low <= s.t_s <= high]
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


class OutageWatch:
    """The runner's watch around the run's one point: ``noout`` set, the OSD stopped at ``at_s`` and
    started at ``back_at_s`` (point seconds), the cluster sampled meanwhile, and after the point the wait for
    active+clean and HEALTH_OK; what it saw goes into the point's record (samples and ``dstore`` facts)."""

    def __init__(
        self, ref: ClusterRef, run: DegradedRun, runner: Runner, labels: Mapping[str, object]
    ) -> None:
        self.ref, self.run, self.runner, self.labels = ref, run, runner, labels
        self.layout = cluster.layout_of(ref)
        self.name = f"osd.{run.outage.osd}"
        if daemons.owned_pid(self.layout.pid_file(self.name), self.layout.conf) is None:
            raise ClusterError(
                f"{self.name} is not running; start from a healthy cluster (`vmio dstore status`)"
            )
        self.t0 = 0.0
        self.unclean: str | None = None  # why the PGs did not come back active+clean, if they did not

    @contextlib.contextmanager
    def around(self, point: SpecPoint) -> Iterator[Callable[[RunRecord], None]]:
        run = self.run
        ceph(self.runner, self.ref.conf, "osd", "set", "noout")
        self.t0 = time.time()
        done = threading.Event()
        threads = [
            threading.Thread(target=self._drive, args=(done,), daemon=True),
            threading.Thread(
                target=_sample_loop, args=(run, self.runner, self.ref, self.t0, done), daemon=True
            ),
        ]
        for thread in threads:
            thread.start()
        try:
            yield self.record
        finally:
            done.set()
            for thread in threads:
                thread.join(timeout=60.0)
            if run.stopped_at_s is not None and run.started_at_s is None:
                daemons.start(self.runner, self.layout, "osd", str(run.outage.osd))  # never leave it stopped
                run.started_at_s = round(time.time() - self.t0, 2)
            ceph(self.runner, self.ref.conf, "osd", "unset", "noout")
            self._settle()

    def _drive(self, done: threading.Event) -> None:
        """Stop and start the OSD on time until the point ends."""
        run = self.run
        while not done.is_set():
            t = time.time() - self.t0
            if run.stopped_at_s is None and t >= run.outage.at_s:
                run.stopped_at_s = round(t, 2)
                run.stop_clean = daemons.stop_one(self.layout.run_dir, self.layout.conf, self.name)
            elif run.started_at_s is None and run.stopped_at_s is not None and t >= run.outage.back_at_s:
                run.started_at_s = round(t, 2)
                daemons.start(self.runner, self.layout, "osd", str(run.outage.osd))
            else:
                done.wait(0.05)

    def _settle(self) -> None:
        run = self.run
        if run.started_at_s is not None:
            started = run.started_at_s
            run.clean_at_s = next((s.t_s for s in run.samples if s.t_s > started and _clean(s)), None)
        try:
            _wait_clean(run, self.runner, self.ref, self.t0, time.monotonic() + CLEAN_DEADLINE_S)
        except ClusterError as exc:
            self.unclean = str(exc)
            return
        _wait_healthy(run, self.runner, self.ref, self.t0, time.monotonic() + HEALTH_SETTLE_S)

    def record(self, rec: RunRecord) -> None:
        """The outage into the point's record, its times on the point's clock (its samplers' start)."""
        shift = self.t0 - rec.samples_t0 if rec.samples_t0 is not None else 0.0
        run = self.run
        for s in run.samples:
            t = round(s.t_s + shift, 2)
            if s.osd_up is not None:
                rec.samples.append((t, f"ceph:{self.name}", "up", 1.0 if s.osd_up else 0.0))
            rec.samples.extend((t, "ceph:pgs", state, float(n)) for state, n in sorted(s.pg_states.items()))
        moved = {k: None if v is None else round(v + shift, 2) for k, v in _times(run).items()}
        rec.host["dstore"] = {
            **self.labels,
            "outage": {
                "osd": run.outage.osd,
                "at_s": run.outage.at_s,
                "back_at_s": run.outage.back_at_s,
                "stop_clean": run.stop_clean,
                **moved,
                "health_after": run.health_after,
                "health_checks_after": run.health_checks_after,
                "unclean": self.unclean,
            },
        }


def _times(run: DegradedRun) -> dict[str, float | None]:
    return {
        "stopped_at_s": run.stopped_at_s,
        "started_at_s": run.started_at_s,
        "clean_at_s": run.clean_at_s,
        "healthy_at_s": run.healthy_at_s,
    }


def stored_run(store: Store, row: RunRow, outage: Outage, replicas: int) -> DegradedRun:
    """The degraded run as its point was stored: the outage's times, the cluster's samples, fio's seconds."""
    host = json.loads(row["host_json"] or "{}")
    facts = host.get("dstore", {}) if isinstance(host, dict) else {}
    seen = facts.get("outage", {}) if isinstance(facts, dict) else {}
    run = DegradedRun(
        outage,
        row["bs"],
        float(facts.get("runtime_s") or 0.0),
        int(facts.get("iodepth") or 0),
        int(facts.get("rwmixread") or 0),
        replicas,
        stopped_at_s=seen.get("stopped_at_s"),
        stop_clean=seen.get("stop_clean"),
        started_at_s=seen.get("started_at_s"),
        clean_at_s=seen.get("clean_at_s"),
        health_after=seen.get("health_after") or "unknown",
        health_checks_after=list(seen.get("health_checks_after") or []),
        healthy_at_s=seen.get("healthy_at_s"),
    )
    run.samples = _stored_samples(store.samples(row["id"]), f"ceph:osd.{outage.osd}")
    if row["status"] != "done":
        run.fio_error = -1  # fio ended with an error (the point's): the I/O failed
        return run
    run.seconds = seconds(store.hist_log(row["id"]))
    sides = of_stored(store, row["id"])
    t = figures(sides, row["point_key"])
    run.totals = {
        "iops": t.iops,
        "mean_lat_ms": t.mean_lat_ms,
        "p99_lat_ms": t.p99_lat_ms,
        "max_lat_ms": t.max_lat_ms,
        "ios": sum(s.ios for s in sides),
    }
    return run


def _stored_samples(rows: list[Any], osd_source: str) -> list[Sample]:
    by_t: dict[float, tuple[list[bool], dict[str, int]]] = {}
    for r in rows:
        if r["source"] == osd_source and r["metric"] == "up":
            by_t.setdefault(r["t"], ([], {}))[0].append(bool(r["value"]))
        elif r["source"] == "ceph:pgs":
            by_t.setdefault(r["t"], ([], {}))[1][r["metric"]] = int(r["value"])
    return [Sample(t, up[0] if up else None, pgs) for t, (up, pgs) in sorted(by_t.items())]


def seconds(log: list[tuple[str, str, int, str, dict[int, int]]]) -> list[Second]:
    """One row per logged second from fio's per-second latency histograms (``write_hist_log``,
    ``log_hist_msec=1000``, at each interval's end): the completions of each direction in it, and their
    mean latency (of the histogram's bins, within fio's bin width); a second with no completions has no
    latency."""
    per: dict[int, dict[str, dict[int, int]]] = defaultdict(dict)
    for _, _, t_ms, ddir, bins in log:
        if ddir in ("read", "write"):
            mine = per[round(t_ms / 1000)].setdefault(ddir, {})
            for value, count in bins.items():
                mine[value] = mine.get(value, 0) + count
    rows = []
    for t_s in sorted(per):
        counts = {d: sum(b.values()) for d, b in per[t_s].items()}
        merged = histogram.merge(per[t_s].values())
        total = sum(merged.values())
        mean = sum(v * c for v, c in merged.items()) / total / 1e6 if total else None
        read, write = counts.get("read", 0), counts.get("write", 0)
        rows.append(
            Second(
                float(t_s),
                float(read + write),
                float(read),
                float(write),
                None if mean is None else round(mean, 3),
            )
        )
    return rows


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


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


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
        (
            f"{name} seen down by `ceph osd tree` from {window[0]:.1f} s to {window[1]:.1f} s"
            if window
            else f"{name} was never seen down by `ceph osd tree`"
        )
        + f"; mean IOPS while it was stopped {_count(run.iops_while_down())}"
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
