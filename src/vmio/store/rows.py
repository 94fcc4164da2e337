"""One row per stored point, as ``vmio show --json`` prints it (a contract: see docs/ARCHITECTURE.md).

IOPS and bandwidth are sums over the measured jobs of every VM or host; latency percentiles come from
the merged histograms, never from averaging percentiles; the mean is weighted by operation counts.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from vmio.stats import histogram
from vmio.store.database import Store
from vmio.store.records import FioJob, Precondition, Steady
from vmio.store.schema import PCT_COLUMNS

LAT_KEYS = ("min", "mean", "max", "p50", "p99", "p99.9")
STORED_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
DEVICE_FIELDS = {"read_iops": "dev_read_iops", "write_iops": "dev_write_iops", "busy_pct": "dev_busy_pct",
                 "queue": "dev_queue", "await_ms": "dev_await_ms", "read_bw": "dev_read_bw",
                 "write_bw": "dev_write_bw"}  # fmt: skip
CPU_FIELDS = {"usr_pct": "cpu_usr_pct", "sys_pct": "cpu_sys_pct", "iowait_pct": "cpu_iowait_pct",
              "steal_pct": "cpu_steal_pct", "idle_pct": "cpu_idle_pct", "guest_pct": "cpu_guest_pct"}  # fmt: skip


Latency = Mapping[str, float | None]  # min, mean, max, p50, p90, p99, p99.9, p99.99 in ns


class QemuCpu(TypedDict):
    """CPU of a target's QEMU processes by thread class, % of one core summed over its VMs."""

    vcpu: float
    main_loop: float
    iothreads: list[float]
    other: float


@dataclass(frozen=True, slots=True)
class PointRow:
    """One stored point (one repetition), its figures summed or merged over its jobs and hosts.

    ``offered_iops`` is a number or None (unthrottled); the decoded JSON columns (``host_facts``,
    ``steady``, ``precondition``, ``fio_job``) are the store's to decode, so callers read fields.
    """

    campaign: str
    point: str
    target: str
    target_kind: str
    workload: str
    bs: int
    offered_iops: int | None
    load_processes: int
    repetition: int
    status: str
    accel: str | None
    fio_version: str | None
    qemu_version: str | None
    device: str | None
    error: str | None
    read_iops: float
    read_bw: float
    read_lat_ns: Latency | None
    read_ops: int
    write_iops: float
    write_bw: float
    write_lat_ns: Latency | None
    write_ops: int
    hosts: tuple[str, ...]
    device_metrics: Mapping[str, float | None]  # by DEVICE_FIELDS name (dev_read_iops, ...)
    cpu: Mapping[str, float | None]  # by CPU_FIELDS name (cpu_usr_pct, ...)
    host_facts: Mapping[str, object]
    qemu_machine: str | None
    qemu_cpu_pct: QemuCpu | None
    guest_io_warnings: int | None
    steady: Steady | None = None
    precondition: Precondition | None = None
    fio_job: FioJob | None = None
    # a sweep's point (stores from before sweeps hold none): queue depth, job count, share of the max
    # point, arrivals
    iodepth: int | None = None
    numjobs: int | None = None
    offered_pct: float | None = None
    arrivals: str | None = None
    # an imported point's figures fio recorded (its names: usr_cpu, sys_cpu, disk_util)
    fio_figures: Mapping[str, object] = field(default_factory=dict)
    # a stored dstore profile's point: what it ran on (Ceph version, pool, replicas, ...) and its verdicts
    dstore: Mapping[str, object] | None = None

    @property
    def done(self) -> bool:
        return self.status == "done"

    def iops(self, ddir: str) -> float:
        return self.read_iops if ddir == "read" else self.write_iops

    def bw(self, ddir: str) -> float:
        return self.read_bw if ddir == "read" else self.write_bw

    def ops(self, ddir: str) -> int:
        return self.read_ops if ddir == "read" else self.write_ops

    def lat_ns(self, ddir: str) -> Latency | None:
        return self.read_lat_ns if ddir == "read" else self.write_lat_ns

    def metric(self, name: str) -> float | None:
        """A device or CPU figure by its ``show --json`` name (``dev_busy_pct``, ``cpu_iowait_pct``)."""
        return self.device_metrics.get(name, self.cpu.get(name))

    def to_json(self, facts: bool = True) -> dict[str, Any]:
        """The row as ``vmio show --json`` prints it (the contract: same keys, same order, "max" for an
        unthrottled point); ``facts=False`` leaves out ``host_facts``."""
        out: dict[str, Any] = {
            "campaign": self.campaign,
            "point": self.point,
            "target": self.target,
            "target_kind": self.target_kind,
            "workload": self.workload,
            "bs": self.bs,
            "offered_iops": "max" if self.offered_iops is None else self.offered_iops,
            "load_processes": self.load_processes,
            "repetition": self.repetition,
            "status": self.status,
            "accel": self.accel,
            "fio_version": self.fio_version,
            "qemu_version": self.qemu_version,
            "device": self.device,
            "error": self.error,
        }
        for ddir in ("read", "write"):
            lat = self.lat_ns(ddir)
            out[f"{ddir}_iops"] = self.iops(ddir)
            out[f"{ddir}_bw"] = self.bw(ddir)
            out[f"{ddir}_lat_ns"] = dict(lat) if lat is not None else None
            out[f"{ddir}_ops"] = self.ops(ddir)
        out["hosts"] = list(self.hosts)
        out.update(self.device_metrics)
        out.update(self.cpu)
        if facts:
            out["host_facts"] = dict(self.host_facts)
        out["qemu_machine"] = self.qemu_machine
        out["qemu_cpu_pct"] = dict(self.qemu_cpu_pct) if self.qemu_cpu_pct is not None else None
        out["guest_io_warnings"] = self.guest_io_warnings
        for name in ("steady", "precondition", "fio_job"):
            value = getattr(self, name)
            if value is not None:  # only points that asked, so older rows read as they always did
                out[name] = dict(value)
        for name in ("iodepth", "numjobs", "offered_pct", "arrivals"):
            if getattr(self, name) is not None:  # only where stored
                out[name] = getattr(self, name)
        out.update(self.fio_figures)
        if self.dstore is not None:  # only a stored dstore profile's points
            out["dstore"] = dict(self.dstore)
        return out


def point_rows(store: Store, campaign: str | None = None) -> list[PointRow]:
    names = [campaign] if campaign else store.campaigns()
    if campaign:
        store.require(campaign)
    out = []
    for name in names:  # read per campaign in bulk: one query per table, not per point
        results, hists, metrics = (
            store.campaign_results(name),
            store.campaign_histograms(name),
            store.campaign_metrics(name),
        )
        out += [
            _row(name, run, results.get(run["id"], []), hists, metrics.get(run["id"], {}))
            for run in store.runs(name)
        ]
    return out


def point_row(store: Store, campaign: str, run: sqlite3.Row) -> PointRow:
    results = store.results(run["id"])
    hists = {r["id"]: store.histogram(r["id"]) for r in results}
    return _row(campaign, run, results, hists, store.run_metrics(run["id"]))


def _row(
    campaign: str,
    run: sqlite3.Row,
    every: list[sqlite3.Row],
    hists: Mapping[int, Mapping[int, int]],
    metrics: dict[tuple[str, str], float],
) -> PointRow:
    results = [r for r in every if r["role"] == "measure"]
    per_ddir: dict[str, tuple[float, float, Latency | None, int]] = {}
    for ddir in ("read", "write"):
        mine = [r for r in results if r["ddir"] == ddir]
        per_ddir[ddir] = (
            sum(r["iops"] for r in mine),
            sum(r["bw_bytes"] for r in mine),
            _latency(hists, mine),
            sum(r["total_ios"] for r in mine),
        )
    dev = f"dev:{run['device']}" if run["device"] else None
    facts = json.loads(run["host_json"] or "{}")
    vm = run["target_kind"] in ("qemu", "libvirt")
    before = "q35" if run["qemu_version"] else None  # runs before machine types were all q35
    decoded = {
        name: json.loads(run[column])
        for column, name in (
            ("steady_json", "steady"),
            ("precondition_json", "precondition"),
            ("fio_job_json", "fio_job"),
        )
        if run[column] is not None
    }
    return PointRow(
        campaign=campaign,
        point=run["point_key"],
        target=run["target"],
        target_kind=run["target_kind"],
        workload=run["workload"],
        bs=run["bs"],
        offered_iops=run["offered_iops"],
        load_processes=run["load_processes"],
        repetition=run["repetition"],
        status=run["status"],
        accel=run["accel"],
        fio_version=run["fio_version"],
        qemu_version=run["qemu_version"],
        device=run["device"],
        error=run["error"],
        read_iops=per_ddir["read"][0],
        read_bw=per_ddir["read"][1],
        read_lat_ns=per_ddir["read"][2],
        read_ops=per_ddir["read"][3],
        write_iops=per_ddir["write"][0],
        write_bw=per_ddir["write"][1],
        write_lat_ns=per_ddir["write"][2],
        write_ops=per_ddir["write"][3],
        hosts=tuple(sorted({r["host"] for r in results})),
        device_metrics={
            name: metrics.get((dev, metric)) if dev else None for metric, name in DEVICE_FIELDS.items()
        },
        cpu={name: metrics.get(("cpu", metric)) for metric, name in CPU_FIELDS.items()},
        host_facts=facts,
        qemu_machine=facts.get("qemu_machine", before) if vm else None,
        qemu_cpu_pct=qemu_cpu_pct(metrics) if vm else None,
        guest_io_warnings=facts.get("guest_io_warnings"),  # None for host targets
        **decoded,
        **sweep_fields(run),
        fio_figures=imported_fields(facts, results) if run["target_kind"] == "import" else {},
        dstore=facts["dstore"] if isinstance(facts.get("dstore"), dict) else None,
    )


def imported_fields(facts: Mapping[str, object], results: list[sqlite3.Row]) -> dict[str, Any]:
    """An imported point's figures fio recorded that vmio's samplers would have: the measured jobs' CPU
    (fio's ``usr_cpu``, ``sys_cpu``, % of one CPU, summed) and fio's ``disk_util`` as fio wrote it."""
    jobs: dict[tuple[str, str], list[sqlite3.Row]] = {}
    for r in results:  # a job's CPU is on each of its directions' rows: count it once per clone
        jobs.setdefault((r["host"], r["job"]), []).append(r)
    out: dict[str, Any] = {}
    for name in ("usr_cpu", "sys_cpu"):
        values = [(r[name], len({x["ddir"] for x in rs})) for rs in jobs.values() for r in rs]
        if values and all(v is not None for v, _ in values):
            out[name] = round(sum(v / n for v, n in values), 4)
    if "fio_disk_util" in facts:
        out["disk_util"] = facts["fio_disk_util"]
    return out


def sweep_fields(run: sqlite3.Row) -> dict[str, Any]:
    """A point's queue depth, job count, share of the max point and arrivals, for points stored with them
    (stores from before sweeps hold none, and their rows read as they always did)."""
    names = run.keys()
    return {
        k: run[k]
        for k in ("iodepth", "numjobs", "offered_pct", "arrivals")
        if k in names and run[k] is not None
    }


def build_label(qemu_version: str | None, qemu_machine: str | None) -> str | None:
    """The QEMU build a point's VMs ran on, as the reports name it (``qemu 10.0.2 / q35``); None for
    targets without VMs."""
    if not qemu_version:
        return None
    return f"qemu {qemu_version} / {qemu_machine or 'q35'}"


def qemu_cpu_pct(metrics: dict[tuple[str, str], float]) -> QemuCpu | None:
    """CPU of the QEMU processes by thread class, % of one core summed over the target's VMs; I/O threads
    by index (iothread0, iothread1, ... each summed over the VMs)."""
    mine = {(s, m): v for (s, m), v in metrics.items() if s.startswith("qemu:")}
    if not mine:
        return None
    iothreads: list[float] = []
    for (_, metric), value in mine.items():
        match = re.fullmatch(r"iothread(\d+)_pct", metric)
        if match:
            k = int(match[1])
            iothreads += [0.0] * (k + 1 - len(iothreads))
            iothreads[k] += value
    if not iothreads and any(m == "iothread_pct" for _, m in mine):
        # runs stored before I/O threads were told apart by index had one I/O thread per VM at most
        iothreads = [sum(v for (_, m), v in mine.items() if m == "iothread_pct")]

    def total(metric: str) -> float:
        return round(sum(v for (_, m), v in mine.items() if m == metric), 2)

    return {"vcpu": total("vcpu_pct"), "main_loop": total("main_pct"),
            "iothreads": [round(v, 2) for v in iothreads], "other": total("other_pct")}  # fmt: skip


def _latency(
    hists: Mapping[int, Mapping[int, int]], results: list[sqlite3.Row]
) -> dict[str, float | None] | None:
    ops = sum(r["total_ios"] for r in results)
    if not results or ops == 0:
        return None
    merged = histogram.merge(hists.get(r["id"], {}) for r in results)
    out: dict[str, float | None] = {
        "min": min(r["lat_min"] for r in results),
        "mean": sum(r["lat_mean"] * r["total_ios"] for r in results) / ops,
        "max": max(r["lat_max"] for r in results),
    }
    found = histogram.percentiles(merged, STORED_PERCENTILES)
    for p in STORED_PERCENTILES:
        value = found[p]
        if value is None and len(results) == 1:  # no bins stored: fio's own figure is exact for one job
            value = results[0][PCT_COLUMNS[f"p{p:g}"]]
        out[f"p{p:g}"] = float(value) if value is not None else None
    return out


OPS_FIELDS = ("target", "workload", "bs", "rw", "load_processes", "vcpus", "vms", "idle_vms", "cache", "qemu_version",
              "machine", "accel", "ops", "min_ms", "avg_ms", "max_ms")  # fmt: skip


def ops_rows(store: Store, campaign: str) -> list[dict[str, Any]]:
    """Seed 004's Figs. 2-4/8 as rows: per target × workload (as defined: its name stands for every
    parameter, so two workloads that share ``rw`` stay two rows) × bs × load processes, the timed
    operations of every measured process (all repetitions) with their min/avg/max latency in ms. The
    target carries its
    vCPUs, VMs (measured and idle), host cache, QEMU build, machine type and accelerator; VM fields are
    None for host targets."""
    row = store.require(campaign)
    spec = json.loads(row["canonical"] or "{}")
    targets = {t["name"]: t for t in spec.get("targets", [])}
    workloads = {w["name"]: w for w in spec.get("workloads", [])}
    order, named = list(targets), list(workloads)
    groups: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    for run in store.runs(campaign):
        if run["status"] != "done":
            continue
        lats = [o["lat_ns"] for o in store.oplat(run["id"])]
        if not lats:
            continue
        rw = workloads.get(run["workload"], {}).get("rw", run["workload"])
        key = (run["target"], run["workload"], run["bs"], run["load_processes"])
        group = groups.get(key)
        if group is None:
            group = groups[key] = _ops_head(run, targets.get(run["target"], {}), rw)
        group["_lat"] += lats

    def rank(names: list[str], name: str) -> int:
        return names.index(name) if name in names else len(names)

    out = []
    for key in sorted(groups, key=lambda k: (rank(order, k[0]), rank(named, k[1]), k[1], *k[2:])):
        group = groups[key]
        lats = group.pop("_lat")
        group.update(ops=len(lats), min_ms=round(min(lats) / 1e6, 4),
                     avg_ms=round(sum(lats) / len(lats) / 1e6, 4), max_ms=round(max(lats) / 1e6, 4))  # fmt: skip
        out.append({name: group[name] for name in OPS_FIELDS})
    return out


def _ops_head(run: sqlite3.Row, target: dict[str, Any], rw: str) -> dict[str, Any]:
    vm = run["target_kind"] in ("qemu", "libvirt")
    facts = json.loads(run["host_json"] or "{}")
    idle = int(target.get("idle_vms", 0)) if vm else None
    return {
        "target": run["target"], "workload": run["workload"], "bs": run["bs"], "rw": rw, "load_processes": run["load_processes"],
        "vcpus": target.get("vcpus") if vm else None,
        "vms": int(target.get("vms", 1)) + (idle or 0) if vm else None,  # running: measured and idle
        "idle_vms": idle,
        "cache": target.get("cache") if vm else None,
        "qemu_version": run["qemu_version"] if vm else None,
        "machine": facts.get("qemu_machine", target.get("machine", "q35")) if vm else None,
        "accel": run["accel"] if vm else None,
        "_lat": [],
    }  # fmt: skip
