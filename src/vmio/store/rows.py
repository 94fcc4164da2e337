"""One row per stored point, as ``vmio show --json`` prints it (the contract in DESIGN.md).

IOPS and bandwidth are sums over the measured jobs of every VM or host; latency percentiles come from
the merged histograms, never from averaging percentiles; the mean is weighted by operation counts.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from vmio.stats import histogram
from vmio.store.database import Store
from vmio.store.schema import PCT_COLUMNS

LAT_KEYS = ("min", "mean", "max", "p50", "p99", "p99.9")
DEVICE_FIELDS = {"read_iops": "dev_read_iops", "write_iops": "dev_write_iops", "busy_pct": "dev_busy_pct",
                 "queue": "dev_queue", "await_ms": "dev_await_ms", "read_bw": "dev_read_bw",
                 "write_bw": "dev_write_bw"}  # fmt: skip
CPU_FIELDS = {"usr_pct": "cpu_usr_pct", "sys_pct": "cpu_sys_pct", "iowait_pct": "cpu_iowait_pct",
              "steal_pct": "cpu_steal_pct", "idle_pct": "cpu_idle_pct", "guest_pct": "cpu_guest_pct"}  # fmt: skip


def point_rows(store: Store, campaign: str | None = None) -> list[dict[str, Any]]:
    names = [campaign] if campaign else store.campaigns()
    if campaign:
        store.require(campaign)
    return [point_row(store, name, run) for name in names for run in store.runs(name)]


def point_row(store: Store, campaign: str, run: sqlite3.Row) -> dict[str, Any]:
    row: dict[str, Any] = {
        "campaign": campaign,
        "point": run["point_key"],
        "target": run["target"],
        "target_kind": run["target_kind"],
        "workload": run["workload"],
        "bs": run["bs"],
        "offered_iops": "max" if run["offered_iops"] is None else run["offered_iops"],
        "load_processes": run["load_processes"],
        "repetition": run["repetition"],
        "status": run["status"],
        "accel": run["accel"],
        "fio_version": run["fio_version"],
        "qemu_version": run["qemu_version"],
        "device": run["device"],
        "error": run["error"],
    }
    results = [r for r in store.results(run["id"]) if r["role"] == "measure"]
    for ddir in ("read", "write"):
        mine = [r for r in results if r["ddir"] == ddir]
        row[f"{ddir}_iops"] = sum(r["iops"] for r in mine)
        row[f"{ddir}_bw"] = sum(r["bw_bytes"] for r in mine)
        row[f"{ddir}_lat_ns"] = _latency(store, mine)
        row[f"{ddir}_ops"] = sum(r["total_ios"] for r in mine)
    row["hosts"] = sorted({r["host"] for r in results})
    metrics = store.run_metrics(run["id"])
    dev = f"dev:{run['device']}" if run["device"] else None
    for metric, name in DEVICE_FIELDS.items():
        row[name] = metrics.get((dev, metric)) if dev else None
    for metric, name in CPU_FIELDS.items():
        row[name] = metrics.get(("cpu", metric))
    row["host_facts"] = json.loads(run["host_json"] or "{}")
    vm = run["target_kind"] in ("qemu", "libvirt")
    before = "q35" if run["qemu_version"] else None  # runs before machine types were all q35
    row["qemu_machine"] = row["host_facts"].get("qemu_machine", before) if vm else None
    row["qemu_cpu_pct"] = qemu_cpu_pct(metrics) if vm else None
    row["guest_io_warnings"] = row["host_facts"].get("guest_io_warnings")  # None for host targets
    for column, name in (
        ("steady_json", "steady"),
        ("precondition_json", "precondition"),
        ("fio_job_json", "fio_job"),
    ):
        if run[column] is not None:  # only points that asked, so older rows read as they always did
            row[name] = json.loads(run[column])
    row.update(sweep_fields(run))
    if run["target_kind"] == "import":
        row.update(imported_fields(row["host_facts"], results))
    return row


def imported_fields(facts: dict[str, Any], results: list[sqlite3.Row]) -> dict[str, Any]:
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


def build_label(row: dict[str, Any]) -> str | None:
    """The QEMU build a point's VMs ran on, as the reports name it (``qemu 10.0.2 / q35``); None for
    targets without VMs. ``row`` is a ``point_row``."""
    if not row.get("qemu_version"):
        return None
    return f"qemu {row['qemu_version']} / {row.get('qemu_machine') or 'q35'}"


def qemu_cpu_pct(metrics: dict[tuple[str, str], float]) -> dict[str, Any] | None:
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


def _latency(store: Store, results: list[sqlite3.Row]) -> dict[str, float | None] | None:
    ops = sum(r["total_ios"] for r in results)
    if not results or ops == 0:
        return None
    merged = histogram.merge(store.histogram(r["id"]) for r in results)
    out: dict[str, float | None] = {
        "min": min(r["lat_min"] for r in results),
        "mean": sum(r["lat_mean"] * r["total_ios"] for r in results) / ops,
        "max": max(r["lat_max"] for r in results),
    }
    for p in (50.0, 90.0, 99.0, 99.9, 99.99):
        value = histogram.percentile(merged, p) if merged else None
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
