"""Evidence for the tuning guideline built from a stored campaign's points.

A device's capacity is the one the user declares (``vmio diagnose --capacity-read-iops N
--capacity-write-iops N``, else a host target's ``capacity_read_iops``/``capacity_write_iops`` on the same
device), else what ``vmio calibrate`` measured on this host for it (stored under its stable identity); never
the campaign's own points, which would judge a point against itself. ``diagnose`` does not calibrate by
itself: it reads the store only, and without a capacity says how to measure one. The CPU figures of the
processes that did the I/O (fio's own usr/sys, the QEMU processes) come beside the host-wide ones, and the
load average the run recorded at the point's start. A device is in use (Fig. 10 (a)/(b)) by ``system.blockdev.uses``, counting the
campaign's own VM disks.
"""

from __future__ import annotations

import json
import sqlite3
import weakref
from collections.abc import Mapping
from typing import Any

from vmio.advise.evidence import Device, Evidence, Host, Measured, Vm, Workload
from vmio.errors import InputError
from vmio.metrics import layers
from vmio.spec import Campaign, HostTarget
from vmio.store import Store, campaigns
from vmio.store import capacity as calibrated
from vmio.store.campaigns import normal_key
from vmio.store.rows import PointRow, build_label, point_row
from vmio.system.blockdev import in_use, is_rotational, stable_id
from vmio.targets.traits import vm_config

# The evidence wants each class's busiest thread (% of one core), not the class's sum.
QEMU_METRICS = {
    "iothread_max_pct": "qemu_iothread_cpu_pct",
    "main_max_pct": "qemu_main_loop_cpu_pct",
    "vcpu_max_pct": "qemu_vcpu_cpu_pct",
}


def stored_campaign(store: Store, name: str) -> Campaign:
    """Campaign ``name`` as stored, under its stored name (see ``vmio.store.campaigns.stored_campaign``)."""
    return campaigns.stored_campaign(store, name)


def points_to_diagnose(store: Store, name: str, key: str | None) -> list[sqlite3.Row]:
    runs = [r for r in store.runs(name) if r["status"] == "done"]
    if key is not None:
        chosen = [r for r in runs if normal_key(r["point_key"]) == normal_key(key)]  # bs=4096 or bs=4k
        if not chosen:
            known = ", ".join(r["point_key"] for r in runs[:5])
            raise InputError(f"campaign {name!r} has no done point {key!r}; points look like: {known}")
        return chosen
    return [r for r in runs if r["offered_iops"] is None] or runs


def build_of(run: sqlite3.Row) -> str | None:
    """The QEMU build a stored point's VMs ran on (``qemu 10.0.2 / q35``); None for other targets."""
    facts = json.loads(run["host_json"] or "{}")
    return build_label(run["qemu_version"], facts.get("qemu_machine"))


Declared = tuple[float | None, float | None]

# Whether a device is in use now, probed once per store a command has open (``blkid -p`` and the host's
# mounts and processes, ~0.1 s a probe): a campaign's points share a few devices, and a report of 42
# points spent 1.5 s asking the same question 14 times. Dropped with the Store.
_IN_USE: weakref.WeakKeyDictionary[Store, dict[tuple[str, str, tuple[str, ...]], bool]] = (
    weakref.WeakKeyDictionary()
)


def _in_use_once(store: Store, device: str, sys_root: str, vm_disks: list[str]) -> bool:
    seen = _IN_USE.setdefault(store, {})
    key = (device, sys_root, tuple(vm_disks))
    if key not in seen:
        seen[key] = in_use(device, sys_root, vm_disks=vm_disks)
    return seen[key]


def evidence_for(
    store: Store, camp: Campaign, run: sqlite3.Row, sys_root: str = "/sys", declared: Declared | None = None
) -> Evidence:
    row = point_row(store, camp.name, run)
    target = camp.target(run["target"])
    workload = camp.workload(run["workload"])
    metrics = store.run_metrics(run["id"])
    facts: dict[str, Any] = json.loads(run["host_json"] or "{}")
    vm = None
    vm_target = vm_config(target)
    if vm_target is not None:
        # the I/O threads the build gave (a build without queue mapping falls back to one) and whether the
        # queues were mapped, as the run recorded them; the spec's figure for runs stored before that
        iothreads = facts.get("iothreads", vm_target.iothreads)
        vm = Vm(
            count=vm_target.vms,
            jobs_per_vm=vm_target.jobs_per_vm,
            bus=vm_target.bus,
            iothreads=iothreads,
            vq_mapping=facts.get("iothread_vq_mapping"),
        )
    devices = []
    if run["device"]:
        cap_r, cap_w, source = capacity(store, camp, run["device"], sys_root, declared)
        vm_disks = [p for t in camp.targets if (v := vm_config(t)) is not None for p in v.backing]
        devices.append(
            Device(
                name=run["device"],
                rotational=is_rotational(run["device"], sys_root),
                in_use=_in_use_once(store, run["device"], sys_root, vm_disks),
                dedicated_to_vm=vm_target is not None and vm_target.bus in ("block", "vfio"),
                capacity_read_iops=cap_r,
                capacity_write_iops=cap_w,
                capacity_source=source,
            )
        )
    qemu = {name: _busiest(metrics, metric) for metric, name in QEMU_METRICS.items()}
    measured = Measured(
        read_iops=row.read_iops,
        write_iops=row.write_iops,
        dev_busy_pct=_pct(row.metric("dev_busy_pct")),
        dev_queue=row.metric("dev_queue"),
        dev_await_ms=row.metric("dev_await_ms"),
        cpu_usr_pct=_pct(row.metric("cpu_usr_pct")),
        cpu_sys_pct=_pct(row.metric("cpu_sys_pct")),
        cpu_iowait_pct=_pct(row.metric("cpu_iowait_pct")),
        qemu_iothread_cpu_pct=_pct(qemu["qemu_iothread_cpu_pct"]),
        qemu_main_loop_cpu_pct=_pct(qemu["qemu_main_loop_cpu_pct"]),
        qemu_vcpu_cpu_pct=_pct(qemu["qemu_vcpu_cpu_pct"]),
        fio_usr_pct=fio_cpu(store, run, "usr_cpu"),
        fio_sys_pct=fio_cpu(store, run, "sys_cpu"),
        own_cpu_pct=_own_cpu(store, run, row),
        layer_app_read_us=layers.mean_us(row.layers, "app", "read"),
        layer_host_block_read_us=layers.mean_us(row.layers, "host_block", "read"),
        layer_app_write_us=layers.mean_us(row.layers, "app", "write"),
        layer_host_block_write_us=layers.mean_us(row.layers, "host_block", "write"),
        layer_guest_block_read_us=layers.mean_us(row.layers, "guest_block", "read"),
        layer_guest_block_write_us=layers.mean_us(row.layers, "guest_block", "write"),
        guest_clock_step_us=_clock_step(facts),
    )
    return Evidence(
        host=Host(
            cpus=facts.get("cores"),
            qemu_version=_version(run["qemu_version"]),
            accel=run["accel"] if run["accel"] in ("kvm", "tcg") and vm is not None else None,
            load_avg_1m=_load_avg(facts),
        ),
        devices=tuple(devices),
        vm=vm,
        workload=Workload(read_pct=workload.read_pct, bs=run["bs"], iodepth=workload.iodepth),
        measured=measured,
    )


def capacity(
    store: Store, camp: Campaign, device: str, sys_root: str = "/sys", declared: Declared | None = None
) -> tuple[float | None, float | None, str | None]:
    """(read, write, source): declared with diagnose's flags, else by a host target of the campaign on the
    same device, else ``vmio calibrate``'s figures for this host and device; (None, None, None) unknown."""
    if declared is not None and (declared[0] is not None or declared[1] is not None):
        return declared[0], declared[1], "declared with --capacity-read-iops/--capacity-write-iops"
    for target in camp.targets:
        if not isinstance(target, HostTarget):  # isinstance: capacity_*_iops are fields only a host target's
            continue  # spec declares (the figures a person gives for the device it names)
        if target.capacity_read_iops is None and target.capacity_write_iops is None:
            continue
        if any(r["device"] == device for r in store.runs(camp.name) if r["target"] == target.name):
            source = f"declared by target {target.name!r} (capacity_read_iops/capacity_write_iops)"
            return target.capacity_read_iops, target.capacity_write_iops, source
    row = calibrated.lookup(store, calibrated.host_name(), stable_id(device, sys_root))
    if row is not None:
        return row["capacity_read_iops"], row["capacity_write_iops"], f"vmio calibrate {row['path']}"
    return None, None, None


def fio_cpu(store: Store, run: sqlite3.Row, column: str) -> float | None:
    """fio's own CPU (``usr_cpu`` or ``sys_cpu``) summed over the point's measured jobs, % of one core."""
    values: list[float | None] = [r[column] for r in store.results(run["id"]) if r["role"] == "measure"]
    known = [float(v) for v in values if v is not None]
    if not values or len(known) != len(values):
        return None
    return round(sum(known), 3)


def _own_cpu(store: Store, run: sqlite3.Row, row: PointRow) -> float | None:
    """CPU of every process the run started, % of one core: the QEMU processes for VMs, fio on a host."""
    qemu = row.qemu_cpu_pct
    if qemu:
        return round(float(qemu["vcpu"] + qemu["main_loop"] + sum(qemu["iothreads"]) + qemu["other"]), 2)
    if run["target_kind"] != "host":
        return None
    usr, sys = fio_cpu(store, run, "usr_cpu"), fio_cpu(store, run, "sys_cpu")
    return None if usr is None or sys is None else round(usr + sys, 3)


def _busiest(metrics: dict[tuple[str, str], float], metric: str) -> float | None:
    """The busiest thread of a class over the VMs; for runs stored before per-thread maxima, the class's
    figure of the one I/O thread or main loop a VM had then (never the vCPUs' sum, which is not a thread)."""
    found = [v for (src, m), v in metrics.items() if src.startswith("qemu:") and m == metric]
    if not found and metric in ("iothread_max_pct", "main_max_pct"):
        older = metric.replace("_max", "")
        found = [v for (src, m), v in metrics.items() if src.startswith("qemu:") and m == older]
    return max(found, default=None)


def _clock_step(facts: Mapping[str, object]) -> float | None:
    """The coarsest step of a traced guest's trace clock (``guest_clock`` in the point's facts; None: every
    traced guest's clock is fine, or none was traced)."""
    clocks = facts.get("guest_clock")
    steps = [
        float(step)
        for vm in (clocks.values() if isinstance(clocks, dict) else ())
        if isinstance(vm, dict) and isinstance(step := vm.get("trace_step_us"), int | float)
    ]
    return max(steps, default=None)


def _load_avg(facts: Mapping[str, object]) -> float | None:
    load = facts.get("loadavg")
    return float(load[0]) if isinstance(load, list) and load else None


def _pct(value: float | None) -> float | None:
    return None if value is None else min(100.0, max(0.0, value))


def _version(text: str | None) -> str | None:
    if not text:
        return None
    words = [w for w in text.replace(",", " ").split() if w[:1].isdigit()]
    return words[0] if words else None
