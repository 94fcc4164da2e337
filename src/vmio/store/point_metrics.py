"""Each point's device, CPU and QEMU-process figures, read from its metrics once, when it is written.

``vmio show`` prints for every point the device's figures (``dev_*``), the host CPU's (``cpu_*``) and the CPU
of the target's QEMU processes by thread class (``qemu_cpu_pct``). ``Store.record`` stores them beside the run
(the ``dev_*`` and ``cpu_*`` columns of ``run``, and ``qemu_cpu_json``), so ``show`` of 100k points reads one
table, not half a million ``run_metric`` rows; migration 9 fills them for points stored before. They are
computed from the ``run_metric`` rows as the store returns them, so a point reads the same either way.
"""

from __future__ import annotations

import json
import operator
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

DEVICE_FIELDS = {
    "read_iops": "dev_read_iops",
    "write_iops": "dev_write_iops",
    "busy_pct": "dev_busy_pct",
    "queue": "dev_queue",
    "await_ms": "dev_await_ms",
    "read_bw": "dev_read_bw",
    "write_bw": "dev_write_bw",
}
CPU_FIELDS = {
    "usr_pct": "cpu_usr_pct",
    "sys_pct": "cpu_sys_pct",
    "iowait_pct": "cpu_iowait_pct",
    "steal_pct": "cpu_steal_pct",
    "idle_pct": "cpu_idle_pct",
    "guest_pct": "cpu_guest_pct",
}
# the run columns, named as show --json names the figures; qemu_cpu_json is NULL where none are stored
METRIC_COLUMNS = (*DEVICE_FIELDS.values(), *CPU_FIELDS.values(), "qemu_cpu_json")
Metrics = Mapping[tuple[str, str], float]  # (source, metric) -> value, ordered by source and metric


class QemuCpu(TypedDict):
    """CPU of a target's QEMU processes by thread class, % of one core summed over its VMs."""

    vcpu: float
    main_loop: float
    iothreads: list[float]
    other: float


@dataclass(frozen=True, slots=True)
class Figures:
    """A point's figures from its metrics: the device's and the CPU's by ``show --json`` name, QEMU's CPU."""

    device: Mapping[str, float | None]
    cpu: Mapping[str, float | None]
    qemu_cpu_pct: QemuCpu | None

    def columns(self) -> tuple[object, ...]:
        return (*self.device.values(), *self.cpu.values(), json.dumps(self.qemu_cpu_pct))


def figures(metrics: Metrics, device: str | None) -> Figures:
    """A point's figures from its metrics (``Store.run_metrics``); no device figures without a device."""
    get = metrics.get
    return Figures(
        {name: get((f"dev:{device}", m)) if device else None for m, name in DEVICE_FIELDS.items()},
        {name: get(("cpu", m)) for m, name in CPU_FIELDS.items()},
        qemu_cpu_pct(metrics),
    )


def stored(row: Mapping[str, Any] | sqlite3.Row) -> Figures | None:
    """The figures stored with a ``run`` row; None when it holds none (a store whose columns were emptied)."""
    qemu = row["qemu_cpu_json"]
    if qemu is None:
        return None
    return Figures(
        dict(zip(_DEVICE_NAMES, _DEVICE(row), strict=True)),  # a getter of the columns: 100k points
        dict(zip(_CPU_NAMES, _CPU(row), strict=True)),
        None if qemu == "null" else json.loads(qemu),  # "null": no QEMU process (most points), not decoded
    )


_DEVICE_NAMES, _CPU_NAMES = tuple(DEVICE_FIELDS.values()), tuple(CPU_FIELDS.values())
_DEVICE, _CPU = operator.itemgetter(*_DEVICE_NAMES), operator.itemgetter(*_CPU_NAMES)


def qemu_cpu_pct(metrics: Metrics) -> QemuCpu | None:
    """CPU of the QEMU processes by thread class, % of one core summed over the target's VMs; I/O threads
    by index (iothread0, iothread1, ... each summed over the VMs)."""
    totals: dict[str, float] = {}  # by metric, summed over the VMs (in the metrics' order)
    for (source, metric), value in metrics.items():
        if source.startswith("qemu:"):
            totals[metric] = totals.get(metric, 0) + value
    if not totals:
        return None
    iothreads: list[float] = []
    for metric, value in totals.items():
        match = _IOTHREAD.fullmatch(metric)
        if match:
            k = int(match[1])
            iothreads += [0.0] * (k + 1 - len(iothreads))
            iothreads[k] += value
    if not iothreads and "iothread_pct" in totals:
        # runs stored before I/O threads were told apart by index had one I/O thread per VM at most
        iothreads = [totals["iothread_pct"]]
    return {
        "vcpu": round(totals.get("vcpu_pct", 0), 2),
        "main_loop": round(totals.get("main_pct", 0), 2),
        "iothreads": [round(v, 2) for v in iothreads],
        "other": round(totals.get("other_pct", 0), 2),
    }


_IOTHREAD = re.compile(r"iothread(\d+)_pct")


def write(db: sqlite3.Connection, run_ids: Sequence[int] | None = None) -> None:
    """Compute and store the figures of runs ``run_ids`` (None: every run) from their stored metrics."""
    where, args = (
        ("", ()) if run_ids is None else (f"WHERE id IN ({','.join('?' * len(run_ids))})", tuple(run_ids))
    )
    devices = {r[0]: r[1] for r in db.execute(f"SELECT id, device FROM run {where}", args)}
    by_run: dict[int, dict[tuple[str, str], float]] = {i: {} for i in devices}
    metric_where = where.replace("WHERE id", "WHERE run_id")
    for run_id, source, metric, value in db.execute(
        f"SELECT run_id, source, metric, value FROM run_metric {metric_where} ORDER BY run_id, source, metric",
        args,
    ):
        by_run[run_id][(source, metric)] = value
    sets = ", ".join(f"{c} = ?" for c in METRIC_COLUMNS)
    values = [(*figures(by_run[i], devices[i]).columns(), i) for i in devices]
    db.executemany(f"UPDATE run SET {sets} WHERE id = ?", values)
