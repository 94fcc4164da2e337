"""Evidence for the tuning guideline: what was measured on a host, as a JSON file or from a campaign.

The JSON format (unknown values are null; ``vm`` is null for a bare host)::

    {"host": {"cpus": 16, "qemu_version": "7.2.0", "accel": "kvm", "load_avg_1m": 0.4},
     "devices": [{"name": "nvme0n1", "rotational": false, "in_use": true, "dedicated_to_vm": false,
                  "capacity_read_iops": 450000, "capacity_write_iops": 75000,
                  "capacity_source": "vmio calibrate"}],
     "vm": {"count": 1, "jobs_per_vm": 16, "bus": "virtio-blk", "iothreads": 0, "vq_mapping": null},
     "workload": {"read_pct": 100, "bs": 4096, "iodepth": 32},
     "measured": {"read_iops": 92000, "write_iops": 0, "dev_busy_pct": 60, "dev_queue": 3.1,
                  "dev_await_ms": 0.2, "cpu_usr_pct": 20, "cpu_sys_pct": 15, "cpu_iowait_pct": 5,
                  "qemu_iothread_cpu_pct": null, "qemu_main_loop_cpu_pct": 98, "qemu_vcpu_cpu_pct": 40,
                  "fio_usr_pct": 12, "fio_sys_pct": 30, "own_cpu_pct": 160}}

A missing key reads as null. Keys not listed here are refused, so a misspelt key is not silently unknown.
``capacity_source`` says where the capacity comes from (``vmio calibrate`` of this device, a capacity the
user declares, a data sheet); ``accel`` is how the VMs run (``kvm`` or ``tcg``: under TCG the host's %usr
holds the guest's instruction emulation); ``load_avg_1m`` is the host's 1-minute load average when the
point started. CPU percentages of QEMU threads are per thread, in % of one core (the busiest iothread when
several). ``fio_usr_pct``/``fio_sys_pct`` are the fio jobs' own CPU (fio's usr_cpu/sys_cpu summed over the
jobs, % of one core); ``own_cpu_pct`` is the CPU of every process the run started (fio on a bare host, the
QEMU processes for VMs), % of one core: host-wide %usr/%sys beyond it is other work.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TypedDict, TypeVar

from vmio.errors import InputError
from vmio.system.input_file import load_json

BUSES = ("virtio-blk", "virtio-scsi", "nvme", "block", "vfio")
ACCELS = ("kvm", "tcg")
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def _kind(kind: str) -> dict[str, str]:
    return {"kind": kind}


@dataclass(frozen=True)
class Host:
    cpus: int | None = field(default=None, metadata=_kind("positive"))
    qemu_version: str | None = field(default=None, metadata=_kind("version"))
    accel: str | None = field(default=None, metadata=_kind("accel"))
    load_avg_1m: float | None = field(default=None, metadata=_kind("number"))

    def qemu(self) -> tuple[int, int, int] | None:
        """The QEMU version as (major, minor, micro), or None when unknown."""
        return parse_version(self.qemu_version) if self.qemu_version else None


@dataclass(frozen=True)
class Device:
    name: str = field(metadata=_kind("name"))
    rotational: bool | None = field(default=None, metadata=_kind("bool"))
    in_use: bool | None = field(default=None, metadata=_kind("bool"))
    dedicated_to_vm: bool | None = field(default=None, metadata=_kind("bool"))
    capacity_read_iops: float | None = field(default=None, metadata=_kind("rate"))
    capacity_write_iops: float | None = field(default=None, metadata=_kind("rate"))
    capacity_source: str | None = field(default=None, metadata=_kind("text"))


@dataclass(frozen=True)
class Vm:
    count: int | None = field(default=None, metadata=_kind("positive"))
    jobs_per_vm: int | None = field(default=None, metadata=_kind("positive"))
    bus: str | None = field(default=None, metadata=_kind("bus"))
    iothreads: int | None = field(default=None, metadata=_kind("count"))
    vq_mapping: bool | None = field(default=None, metadata=_kind("bool"))


@dataclass(frozen=True)
class Workload:
    read_pct: float | None = field(default=None, metadata=_kind("pct"))
    bs: int | None = field(default=None, metadata=_kind("positive"))
    iodepth: int | None = field(default=None, metadata=_kind("positive"))


@dataclass(frozen=True)
class Measured:
    read_iops: float | None = field(default=None, metadata=_kind("number"))
    write_iops: float | None = field(default=None, metadata=_kind("number"))
    dev_busy_pct: float | None = field(default=None, metadata=_kind("pct"))
    dev_queue: float | None = field(default=None, metadata=_kind("number"))
    dev_await_ms: float | None = field(default=None, metadata=_kind("number"))
    cpu_usr_pct: float | None = field(default=None, metadata=_kind("pct"))
    cpu_sys_pct: float | None = field(default=None, metadata=_kind("pct"))
    cpu_iowait_pct: float | None = field(default=None, metadata=_kind("pct"))
    qemu_iothread_cpu_pct: float | None = field(default=None, metadata=_kind("pct"))
    qemu_main_loop_cpu_pct: float | None = field(default=None, metadata=_kind("pct"))
    qemu_vcpu_cpu_pct: float | None = field(default=None, metadata=_kind("pct"))
    fio_usr_pct: float | None = field(default=None, metadata=_kind("number"))
    fio_sys_pct: float | None = field(default=None, metadata=_kind("number"))
    own_cpu_pct: float | None = field(default=None, metadata=_kind("number"))
    # a point traced with layers = true (docs/layers.md): fio's mean and the host block layer's, per direction
    layer_app_read_us: float | None = field(default=None, metadata=_kind("number"))
    layer_host_block_read_us: float | None = field(default=None, metadata=_kind("number"))
    layer_app_write_us: float | None = field(default=None, metadata=_kind("number"))
    layer_host_block_write_us: float | None = field(default=None, metadata=_kind("number"))
    # and the guest's block layer's (a VM point whose guest was traced)
    layer_guest_block_read_us: float | None = field(default=None, metadata=_kind("number"))
    layer_guest_block_write_us: float | None = field(default=None, metadata=_kind("number"))
    # a traced guest's trace clock step (µs) when it steps by the kernel's tick (no usable TSC; 0: every
    # latency read 0): its latency percentiles are multiples of it (docs/layers.md, "The guest's clock")
    guest_clock_step_us: float | None = field(default=None, metadata=_kind("number"))


class EvidenceJson(TypedDict):
    """``Evidence`` as JSON: each part's fields by name."""

    host: dict[str, object]
    devices: list[dict[str, object]]
    vm: dict[str, object] | None
    workload: dict[str, object]
    measured: dict[str, object]


@dataclass(frozen=True)
class Evidence:
    """Everything the tuning guideline looks at for one measured point."""

    host: Host
    devices: tuple[Device, ...]
    vm: Vm | None
    workload: Workload
    measured: Measured

    def to_dict(self) -> EvidenceJson:
        """The JSON form, which :func:`evidence_from_dict` reads back."""
        return {
            "host": _plain(self.host),
            "devices": [_plain(d) for d in self.devices],
            "vm": None if self.vm is None else _plain(self.vm),
            "workload": _plain(self.workload),
            "measured": _plain(self.measured),
        }


def parse_version(text: str) -> tuple[int, int, int]:
    """``'7.2.22 (Debian ...)'`` → (7, 2, 22); raise InputError when it does not start with a version."""
    match = _VERSION.match(text.strip())
    if match is None:
        raise InputError(f"{text!r} is not a QEMU version; expected one such as '7.2.0' or '9.0'")
    return int(match[1]), int(match[2]), int(match[3] or 0)


def load_evidence(path: Path) -> Evidence:
    """Read an evidence file; InputError names the file and the bad place."""
    raw = load_json(path, "evidence file")
    try:
        return evidence_from_dict(raw)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from exc


def evidence_from_dict(raw: object) -> Evidence:
    """Validate a decoded JSON value as evidence; InputError names the JSON path and the value."""
    top = _object(raw, "$", ("host", "devices", "vm", "workload", "measured"))
    devices = top.get("devices")
    if devices is None:
        devices = []
    if not isinstance(devices, list):
        raise InputError(f"$.devices = {devices!r} is not a list; expected a list of device objects")
    vm = top.get("vm")
    if "measured" not in top or top["measured"] is None:
        raise InputError("$.measured is missing; the tuning guideline needs the measured figures")
    return Evidence(
        host=_build(Host, top.get("host"), "$.host"),
        devices=tuple(_build(Device, d, f"$.devices[{i}]") for i, d in enumerate(devices)),
        vm=None if vm is None else _build(Vm, vm, "$.vm"),
        workload=_build(Workload, top.get("workload"), "$.workload"),
        measured=_build(Measured, top["measured"], "$.measured"),
    )


_T = TypeVar("_T")


def _build(cls: type[_T], raw: object, path: str) -> _T:
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    obj = _object({} if raw is None else raw, path, names)
    values: dict[str, object] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        value = obj.get(f.name)
        if value is None and f.metadata["kind"] == "name":
            raise InputError(f"{path}.{f.name} is missing; every device needs a name such as 'nvme0n1'")
        values[f.name] = None if value is None else _check(f.metadata["kind"], value, f"{path}.{f.name}")
    return cls(**values)


def _object(raw: object, path: str, allowed: tuple[str, ...]) -> dict[str, object]:
    if not isinstance(raw, dict):
        keys = ", ".join(allowed)
        raise InputError(f"{path} = {raw!r} is not an object; expected {{...}} with keys {keys}")
    for key in raw:
        if key not in allowed:
            raise InputError(f"{path}.{key} is not a known key; accepted: {', '.join(allowed)}")
    return raw


def _check(kind: str, value: object, path: str) -> object:
    if kind == "bool":
        if not isinstance(value, bool):
            raise InputError(f"{path} = {value!r} is not true, false or null")
        return value
    if kind in ("name", "version", "bus", "accel", "text"):
        return _check_text(kind, value, path)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{path} = {value!r} is not a number; expected a number or null")
    if not math.isfinite(value):
        raise InputError(f"{path} = {value!r} is not a finite number")
    whole = kind in ("count", "positive")
    if whole and value != int(value):
        raise InputError(f"{path} = {value!r} is not a whole number")
    if value < 0 or (kind in ("positive", "rate") and value == 0) or (kind == "pct" and value > 100):
        expected = {"pct": "between 0 and 100", "positive": "at least 1", "rate": "above 0"}
        raise InputError(f"{path} = {value!r} is out of range; expected {expected.get(kind, 'at least 0')}")
    return int(value) if whole else value


def _check_text(kind: str, value: object, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{path} = {value!r} is not a non-empty string")
    if kind == "bus" and value not in BUSES:
        raise InputError(f"{path} = {value!r} is not a bus; expected one of {', '.join(BUSES)}")
    if kind == "accel" and value not in ACCELS:
        raise InputError(f"{path} = {value!r} is not an accelerator; expected one of {', '.join(ACCELS)}")
    if kind == "version" and _VERSION.match(value.strip()) is None:
        raise InputError(f"{path} = {value!r} is not a QEMU version; expected one such as '7.2.0'")
    return value


def _plain(obj: object) -> dict[str, object]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}  # type: ignore[arg-type]
