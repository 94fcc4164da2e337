"""Evidence for the tuning guideline built from a stored campaign's points.

A device's capacity is the best the campaign measured on the bare host against it (offered "max"), so an
NVMe-like device at 100 % busy is judged against what it can do, not against %util alone.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from vmio.advise.evidence import Device, Evidence, Host, Measured, Vm, Workload
from vmio.errors import InputError
from vmio.spec import Campaign, QemuTarget, loads_spec
from vmio.store import Store
from vmio.store.rows import point_row
from vmio.system.blockdev import in_use, is_rotational

# The evidence wants each class's busiest thread (% of one core), not the class's sum.
QEMU_METRICS = {"iothread_max_pct": "qemu_iothread_cpu_pct", "main_max_pct": "qemu_main_loop_cpu_pct",
                "vcpu_max_pct": "qemu_vcpu_cpu_pct"}  # fmt: skip


def stored_campaign(store: Store, name: str) -> Campaign:
    row = store.require(name)
    return loads_spec(row["spec_text"], row["spec_path"] or name)


def points_to_diagnose(store: Store, name: str, key: str | None) -> list[sqlite3.Row]:
    runs = [r for r in store.runs(name) if r["status"] == "done"]
    if key is not None:
        chosen = [r for r in runs if r["point_key"] == key]
        if not chosen:
            known = ", ".join(r["point_key"] for r in runs[:5])
            raise InputError(f"campaign {name!r} has no done point {key!r}; points look like: {known}")
        return chosen
    return [r for r in runs if r["offered_iops"] is None] or runs


def evidence_for(store: Store, camp: Campaign, run: sqlite3.Row, sys_root: str = "/sys") -> Evidence:
    row = point_row(store, camp.name, run)
    target = camp.target(run["target"])
    workload = camp.workload(run["workload"])
    metrics = store.run_metrics(run["id"])
    facts: dict[str, Any] = json.loads(run["host_json"] or "{}")
    vm = None
    if isinstance(target, QemuTarget):
        vm = Vm(count=target.vms, jobs_per_vm=target.jobs_per_vm, bus=target.bus, iothreads=target.iothreads,
                vq_mapping=None)  # fmt: skip
    devices = []
    if run["device"]:
        cap_r, cap_w = _capacity(store, camp, run["device"])
        devices.append(Device(
            name=run["device"], rotational=is_rotational(run["device"], sys_root), in_use=in_use(run["device"], sys_root),
            dedicated_to_vm=isinstance(target, QemuTarget) and target.bus in ("block", "vfio"),
            capacity_read_iops=cap_r, capacity_write_iops=cap_w,
        ))  # fmt: skip
    qemu = {name: max((v for (src, m), v in metrics.items() if src.startswith("qemu:") and m == metric), default=None)
            for metric, name in QEMU_METRICS.items()}  # fmt: skip
    measured = Measured(
        read_iops=row["read_iops"], write_iops=row["write_iops"], dev_busy_pct=_pct(row["dev_busy_pct"]),
        dev_queue=row["dev_queue"], dev_await_ms=row["dev_await_ms"], cpu_usr_pct=_pct(row["cpu_usr_pct"]),
        cpu_sys_pct=_pct(row["cpu_sys_pct"]), cpu_iowait_pct=_pct(row["cpu_iowait_pct"]),
        qemu_iothread_cpu_pct=_pct(qemu["qemu_iothread_cpu_pct"]),
        qemu_main_loop_cpu_pct=_pct(qemu["qemu_main_loop_cpu_pct"]),
        qemu_vcpu_cpu_pct=_pct(qemu["qemu_vcpu_cpu_pct"]),
    )  # fmt: skip
    return Evidence(
        host=Host(cpus=facts.get("cores"), qemu_version=_version(run["qemu_version"])),
        devices=tuple(devices),
        vm=vm,
        workload=Workload(read_pct=workload.read_pct, bs=run["bs"], iodepth=workload.iodepth),
        measured=measured,
    )


def _capacity(store: Store, camp: Campaign, device: str) -> tuple[float | None, float | None]:
    best: dict[str, float] = {}
    for run in store.runs(camp.name):
        if run["status"] != "done" or run["target_kind"] != "host" or run["device"] != device:
            continue
        if run["offered_iops"] is not None:
            continue
        row = point_row(store, camp.name, run)
        for ddir in ("read", "write"):
            if row[f"{ddir}_iops"]:
                best[ddir] = max(best.get(ddir, 0.0), row[f"{ddir}_iops"])
    return best.get("read"), best.get("write")


def _pct(value: float | None) -> float | None:
    return None if value is None else min(100.0, max(0.0, value))


def _version(text: str | None) -> str | None:
    if not text:
        return None
    words = [w for w in text.replace(",", " ").split() if w[:1].isdigit()]
    return words[0] if words else None
