"""What an experiment is: targets, workloads, the campaign and its points (immutable, validated by ``load``).

A campaign is the product of targets × workloads × block sizes × offered loads × load processes ×
repetitions.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TypeVar

from vmio.errors import SpecError
from vmio.spec.series import UntilStable
from vmio.spec.sla import Sla
from vmio.spec.steady import Steady
from vmio.units import format_size

Offered = int | str | None  # IOPS, a share of the max point ("50%"), or None for "max"
ARRIVALS = ("uniform", "poisson")
RW_MODES = ("read", "write", "randread", "randwrite", "randrw", "rw")
BUSES = ("virtio-blk", "virtio-scsi", "nvme", "block", "vfio")
CACHES = ("none", "writeback", "writethrough", "directsync")
AIOS = ("native", "io_uring", "threads")
ACCELS = ("auto", "kvm", "tcg")
MACHINES = ("q35", "pc", "microvm")
MMIO_BUSES = ("virtio-blk", "virtio-scsi", "block")  # microvm: virtio over MMIO, no PCI


@dataclass(frozen=True)
class HostTarget:
    name: str
    path: str
    size: int | None = None
    # attach the file as a direct-I/O loop device for the target's points (okayama-hypervisors-2020)
    loop: bool = False
    kind: str = "host"
    cpus: int | None = (
        None  # the measured and load processes run on this many CPUs (okayama-hypervisors-2020's BM/1 core)
    )
    # the device's capacity as the user declares it (IOPS); diagnose judges "device busy" against it
    capacity_read_iops: int | None = None
    capacity_write_iops: int | None = None


@dataclass(frozen=True)
class QemuTarget:
    name: str
    backing: tuple[str, ...]
    bus: str = "virtio-blk"
    iothreads: int = 0
    queues: int = 1
    cache: str = "none"
    aio: str = "native"
    vms: int = 1
    jobs_per_vm: int = 1
    jobs_per_vm_sweep: tuple[
        int, ...
    ] = ()  # jobs_per_vm = [1, 4]: each value a point (jobs_per_vm: the first)
    vcpus: int = 1
    memory: int = 512 << 20
    accel: str = "auto"
    size: int | None = None
    trace: bool = False
    conf: str | None = None  # ceph.conf for backings written rbd:POOL/IMAGE
    clientname: str | None = None  # the Ceph client rbd: backings connect as (None: the conf's, admin)
    keyring: str | None = None  # that client's keyring (None: the conf's)
    qemu: str | None = None  # an installed version ("10.0") or a binary's path; None: the system's
    machine: str = "q35"
    # attach each backing file as a direct-I/O loop device (okayama-hypervisors-2020's raw device)
    loop: bool = False
    # VMs booted beside the measured ones and left idle (no fio; okayama-hypervisors-2020's "2 VMs")
    idle_vms: int = 0
    kind: str = "qemu"

    def backing_of(self, vm: int) -> str:
        """The backing path of VM ``vm``: VM i on backing i mod n."""
        return self.backing[vm % len(self.backing)]

    def vms_per_backing(self) -> dict[str, int]:
        """How many VMs each backing path holds, in the order the paths are first used."""
        return dict(Counter(self.backing_of(i) for i in range(self.vms)))


@dataclass(frozen=True)
class RemoteTarget:
    name: str
    hosts: tuple[str, ...]
    paths: tuple[str, ...]
    size: int | None = None
    kind: str = "remote"


@dataclass(frozen=True)
class RbdTarget:
    name: str
    pool: str
    image: str
    conf: str
    clientname: str = "admin"
    kind: str = "rbd"
    keyring: str | None = None  # the client's keyring (None: the conf's)


@dataclass(frozen=True)
class LibvirtDomain:
    """A running domain a libvirt target measures: its name and the URI it is reached by."""

    name: str
    uri: str


@dataclass(frozen=True)
class LibvirtTarget:
    """The operator's own running domains, reached through libvirt; fio runs in each guest through the
    QEMU guest agent, all domains together."""

    name: str
    domains: tuple[LibvirtDomain, ...]
    uri: str = "qemu:///system"
    disk: str | None = None  # the libvirt target name (vdb); None: each domain's only non-root disk
    kind: str = "libvirt"
    # trace the guests' block layer too (a campaign with layers; docs/layers.md): tracefs triggers in the
    # operator's guests, switched on and off through their guest agent
    guest_layers: bool = False


Target = HostTarget | QemuTarget | RemoteTarget | RbdTarget | LibvirtTarget


@dataclass(frozen=True)
class Workload:
    name: str
    rw: str
    bs: tuple[int, ...]
    rwmixread: int = 50
    iodepth: int = 1
    numjobs: int = 1
    direct: bool = True
    ioengine: str = "libaio"
    runtime: float = 10.0
    ramp: float = 0.0
    offered_iops: tuple[Offered, ...] = (None,)
    load_processes: tuple[int, ...] = (0,)
    ops: int = 0
    steady: Steady | None = None  # stop when fio's steady-state criterion holds; runtime is the maximum
    precondition: bool = False  # fill, then random-write twice the size, before the target's first point
    fio_file: str | None = None  # the person's fio job file this workload is a section of
    fio_options: tuple[tuple[str, str], ...] = ()  # that section's pattern options, written as they are
    fio_replaced: tuple[str, ...] = ()  # the file's options vmio replaced, each with file:line
    iodepth_sweep: tuple[int, ...] = ()  # iodepth = [1, 8]: each value a point (iodepth: the first)
    numjobs_sweep: tuple[int, ...] = ()  # numjobs = [1, 4]: likewise
    stop_at: Sla | None = None  # a sweep ends at its first point beyond this latency
    arrivals: str = "uniform"  # "poisson": fio's rate_process=poisson for offered rates

    @property
    def writes(self) -> bool:
        return self.rw in ("write", "randwrite", "randrw", "rw")

    @property
    def read_pct(self) -> int:
        if self.rw in ("read", "randread"):
            return 100
        if self.rw in ("write", "randwrite"):
            return 0
        return self.rwmixread


@dataclass(frozen=True)
class Campaign:
    name: str
    repetitions: int
    targets: tuple[Target, ...]
    workloads: tuple[Workload, ...]
    path: str = "<spec>"
    sla: Sla | None = None  # a latency bound the report's summary states the highest IOPS within
    # okayama-hypervisors-2020: the ``ops`` workloads' operation offsets are generated from it
    seed: int | None = None
    series: str | None = None  # the series the campaign belongs to (``vmio trend``)
    until: UntilStable | None = None  # repeat-until-stable: ``until_spread`` and ``max_repetitions``
    layers: bool = False  # trace each point's latency per layer (docs/layers.md); not part of the points

    def canonical(self) -> str:
        """A stable JSON text of what defines the points (not the path, not repetitions)."""
        body: dict[str, object] = {
            "targets": [_canonical_target(t) for t in self.targets],
            "workloads": [_defined(w) for w in self.workloads],
        }
        if self.seed is not None:  # only when set, so campaigns stored before seeds keep their text
            body["seed"] = self.seed
        return json.dumps(body, sort_keys=True)

    def target(self, name: str) -> Target:
        """The target of that name; a ``SpecError`` naming the campaign if it has none (a stored point of a
        spec that no longer holds its target, e.g. a store edited by hand)."""
        return _named(self.name, "target", self._targets, name, self.targets)

    def workload(self, name: str) -> Workload:
        """The workload of that name; a ``SpecError`` naming the campaign if it has none."""
        return _named(self.name, "workload", self._workloads, name, self.workloads)

    @cached_property
    def _targets(self) -> dict[str, Target]:
        return {t.name: t for t in reversed(self.targets)}  # the first of a name, as ``next`` found it

    @cached_property
    def _workloads(self) -> dict[str, Workload]:
        return {w.name: w for w in reversed(self.workloads)}

    def points(self) -> list[Point]:
        """Every point, in the order they run: a sweep's queue depths ascending as listed, and within one
        queue depth the ``max`` point before the shares of it."""
        return [
            Point(self.name, t.name, w.name, bs, _iops(offered), loads, rep, qd, jobs, _pct(offered))
            for rep in range(1, self.repetitions + 1)
            for t in self.targets
            for w in self.workloads
            for bs in w.bs
            for jobs in swept_jobs(t, w)
            for qd in (w.iodepth_sweep or (None,))
            for offered in run_order(w.offered_iops)
            for loads in w.load_processes
        ]


def swept_jobs(target: Target, workload: Workload) -> tuple[int | None, ...]:
    """The job counts a target × workload sweeps (None: not swept): a VM target's ``jobs_per_vm`` list
    (its VMs run that many fio jobs each), else the workload's ``numjobs`` list."""
    if isinstance(target, QemuTarget):  # isinstance: spec sits below targets (validation of a kind's keys)
        return target.jobs_per_vm_sweep or (None,)
    return workload.numjobs_sweep or (None,)


def run_order(offered: tuple[Offered, ...]) -> tuple[Offered, ...]:
    """The offered loads in the order they run: ``max`` first when shares of it are listed."""
    if any(isinstance(o, str) for o in offered) and None in offered:
        return (None, *(o for o in offered if o is not None))
    return offered


def _iops(offered: Offered) -> int | None:
    return offered if isinstance(offered, int) else None


def _pct(offered: Offered) -> float | None:
    return float(offered.rstrip("%")) if isinstance(offered, str) else None


# Fields added after campaigns were stored: left out at their defaults so a stored campaign still matches.
_LATER_DEFAULTS: dict[str, object] = {
    "qemu": None,
    "machine": "q35",
    "loop": False,
    "idle_vms": 0,
    "cpus": None,
    "capacity_read_iops": None,
    "capacity_write_iops": None,
    "jobs_per_vm_sweep": (),
    "guest_layers": False,
}


def _canonical_target(target: Target) -> dict[str, object]:
    body = asdict(target)
    for key, default in _LATER_DEFAULTS.items():
        if key in body and body[key] == default:
            del body[key]
    return body


NEWER_FIELDS = {
    "steady": None,
    "precondition": False,
    "fio_file": None,
    "fio_options": (),
    "fio_replaced": (),
    "iodepth_sweep": (),
    "numjobs_sweep": (),
    "stop_at": None,
    "arrivals": "uniform",
}


def _defined(w: Workload) -> dict[str, object]:
    """A workload's fields; the ones added later only when set, so older campaigns keep their text."""
    out = asdict(w)
    for key, default in NEWER_FIELDS.items():
        if getattr(w, key) == default:
            del out[key]
        elif key in ("steady", "stop_at"):
            out[key] = str(getattr(w, key))
    return out


@dataclass(frozen=True)
class Point:
    """One measurement: a target, a workload at one block size, offered load and load count."""

    campaign: str
    target: str
    workload: str
    bs: int
    offered_iops: int | None
    load_processes: int
    repetition: int
    iodepth: int | None = None  # swept queue depths only (the key then says qd=N)
    jobs: int | None = None  # swept job counts only (numjobs, or jobs_per_vm on VM targets; key: jobs=N)
    offered_pct: float | None = None  # a share of the max point's achieved IOPS (key: offered=50%)

    @property
    def key(self) -> str:
        """``TARGET/WORKLOAD/bs=4k/offered=max/load=0/rep=1``: the block size spelled as everywhere else."""
        return self._key(format_size(self.bs))

    @property
    def legacy_key(self) -> str:
        """The key as stores written before ``key`` spelled sizes held it (``bs=4096``)."""
        return self._key(str(self.bs))

    def _key(self, bs: str) -> str:
        return (
            f"{self.target}/{self.workload}/bs={bs}{self.sweep_part}/offered={self.offered_label}"
            f"/load={self.load_processes}/rep={self.repetition}"
        )

    @property
    def sweep_part(self) -> str:
        """``/qd=8/jobs=4`` for the swept parameters, empty when nothing is swept (older keys stay)."""
        return (f"/qd={self.iodepth}" if self.iodepth is not None else "") + (
            f"/jobs={self.jobs}" if self.jobs is not None else ""
        )

    @property
    def offered_label(self) -> str:
        if self.offered_pct is not None:
            return f"{self.offered_pct:g}%"
        return "max" if self.offered_iops is None else str(self.offered_iops)

    def sweep(self) -> tuple[str, str, int, int | None, int, int]:
        """The sweep ``stop_at`` ends: target, workload, bs, jobs, load processes, repetition (queue depths
        and offered loads run along it)."""
        return (self.target, self.workload, self.bs, self.jobs, self.load_processes, self.repetition)

    def max_key(self) -> str:
        """The key of the ``max`` point a share of it is taken from."""
        return dataclasses.replace(self, offered_iops=None, offered_pct=None).key


_Item = TypeVar("_Item", Target, Workload)


def _named(campaign: str, kind: str, known: dict[str, _Item], name: str, items: tuple[_Item, ...]) -> _Item:
    """``known[name]``, or a ``SpecError`` naming the campaign, the name and its ``items``' names."""
    found = known.get(name)
    if found is None:
        names = ", ".join(i.name for i in items) or "none"
        raise SpecError(f"campaign {campaign!r} has no {kind} {name!r} (its {kind}s: {names})")
    return found
