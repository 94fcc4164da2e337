"""Evidence for the tuning guideline built from a stored campaign's points.

A device's capacity is what ``vmio calibrate`` measured on this host for it (stored under its stable
identity); without one, the best the campaign measured on the bare host against it (offered "max"), and the
evidence says which. A device is in use (Fig. 10 (a)/(b)) by ``system.blockdev.uses``, counting the
campaign's own VM disks.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from vmio.advise.evidence import Device, Evidence, Host, Measured, Vm, Workload
from vmio.errors import InputError
from vmio.spec import Campaign, QemuTarget, loads_spec
from vmio.store import Store
from vmio.store import capacity as calibrated
from vmio.store.rows import build_label, point_row
from vmio.system.blockdev import in_use, is_rotational, stable_id

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


def build_of(run: sqlite3.Row) -> str | None:
    """The QEMU build a stored point's VMs ran on (``qemu 10.0.2 / q35``); None for other targets."""
    facts = json.loads(run["host_json"] or "{}")
    return build_label(run["qemu_version"], facts.get("qemu_machine"))


def evidence_for(store: Store, camp: Campaign, run: sqlite3.Row, sys_root: str = "/sys") -> Evidence:
    row = point_row(store, camp.name, run)
    target = camp.target(run["target"])
    workload = camp.workload(run["workload"])
    metrics = store.run_metrics(run["id"])
    facts: dict[str, Any] = json.loads(run["host_json"] or "{}")
    vm = None
    if isinstance(target, QemuTarget):
        # the I/O threads the build gave (a build without queue mapping falls back to one) and whether the
        # queues were mapped, as the run recorded them; the spec's figure for runs stored before that
        iothreads = facts.get("iothreads", target.iothreads)
        vm = Vm(count=target.vms, jobs_per_vm=target.jobs_per_vm, bus=target.bus, iothreads=iothreads,
                vq_mapping=facts.get("iothread_vq_mapping"))  # fmt: skip
    devices = []
    if run["device"]:
        cap_r, cap_w, source = capacity(store, camp, run["device"], sys_root)
        vm_disks = [p for t in camp.targets if isinstance(t, QemuTarget) for p in t.backing]
        devices.append(Device(
            name=run["device"], rotational=is_rotational(run["device"], sys_root),
            in_use=in_use(run["device"], sys_root, vm_disks=vm_disks),
            dedicated_to_vm=isinstance(target, QemuTarget) and target.bus in ("block", "vfio"),
            capacity_read_iops=cap_r, capacity_write_iops=cap_w, capacity_source=source,
        ))  # fmt: skip
    qemu = {name: max((v for (src, m), v in metrics.items() if src.startswith("qemu:") and m == metric), default=None)
            for metric, name in QEMU_METRICS.items()}  # fmt: skip
    measured = Measured(
        read_iops=row.read_iops, write_iops=row.write_iops, dev_busy_pct=_pct(row.metric("dev_busy_pct")),
        dev_queue=row.metric("dev_queue"), dev_await_ms=row.metric("dev_await_ms"),
        cpu_usr_pct=_pct(row.metric("cpu_usr_pct")), cpu_sys_pct=_pct(row.metric("cpu_sys_pct")),
        cpu_iowait_pct=_pct(row.metric("cpu_iowait_pct")),
        qemu_iothread_cpu_pct=_pct(qemu["qemu_iothread_cpu_pct"]),
        qemu_main_loop_cpu_pct=_pct(qemu["qemu_main_loop_cpu_pct"]),
        qemu_vcpu_cpu_pct=_pct(qemu["qemu_vcpu_cpu_pct"]),
    )  # fmt: skip
    return Evidence(
        host=Host(
            cpus=facts.get("cores"),
            qemu_version=_version(run["qemu_version"]),
            accel=run["accel"] if run["accel"] in ("kvm", "tcg") and vm is not None else None,
        ),  # fmt: skip
        devices=tuple(devices),
        vm=vm,
        workload=Workload(read_pct=workload.read_pct, bs=run["bs"], iodepth=workload.iodepth),
        measured=measured,
    )


def capacity(
    store: Store, camp: Campaign, device: str, sys_root: str = "/sys"
) -> tuple[float | None, float | None, str | None]:
    """(read, write, source): ``vmio calibrate``'s figures for this host and device, else the campaign's."""
    from vmio.advise.calibrate import host_name

    row = calibrated.lookup(store, host_name(), stable_id(device, sys_root))
    if row is not None:
        return row["capacity_read_iops"], row["capacity_write_iops"], f"vmio calibrate {row['path']}"
    r, w = _bare_best(store, camp, device)
    if r is None and w is None:
        return None, None, None
    return r, w, f"campaign {camp.name}'s best bare point (no vmio calibrate of {device} on this host)"


def _bare_best(store: Store, camp: Campaign, device: str) -> tuple[float | None, float | None]:
    best: dict[str, float] = {}
    for run in store.runs(camp.name):
        if run["status"] != "done" or run["target_kind"] != "host" or run["device"] != device:
            continue
        if run["offered_iops"] is not None:
            continue
        row = point_row(store, camp.name, run)
        for ddir in ("read", "write"):
            if row.iops(ddir):
                best[ddir] = max(best.get(ddir, 0.0), row.iops(ddir))
    return best.get("read"), best.get("write")


def _pct(value: float | None) -> float | None:
    return None if value is None else min(100.0, max(0.0, value))


def _version(text: str | None) -> str | None:
    if not text:
        return None
    words = [w for w in text.replace(",", " ").split() if w[:1].isdigit()]
    return words[0] if words else None
