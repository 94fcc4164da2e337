"""``diagnose --live``: sample the host and each running QEMU for N seconds, build evidence per VM disk.

Between two readings ``seconds`` apart: /proc/diskstats for each disk's backing device, /proc/stat, every
thread of each QEMU (/proc/PID/task), and, where QMP answers, the disk's own counters (query-blockstats).
Thread roles come from QMP's thread ids (query-iothreads, query-cpus-fast) when it answers, else from the
names QEMU gives its threads with ``debug-threads=on``; the main loop is the thread whose id is the pid.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vmio.advise.diagnose import Diagnosis, diagnose
from vmio.advise.evidence import Device, Evidence, Host, Measured, Vm, Workload
from vmio.errors import InputError, ToolError
from vmio.metrics import procfs
from vmio.qemu.caps import parse_version
from vmio.qemu.cmdline import CmdDisk
from vmio.qemu.running import (
    BlockCounters,
    Monitor,
    QemuProcess,
    QmpFacts,
    ask,
    block_counters,
    find_qemus,
    open_monitor,
    trusted_uids,
)
from vmio.qemu.threads import Snapshot, classify, cpu_between, read_threads
from vmio.system.blockdev import device_chain, in_use, is_rotational, reported_device
from vmio.system.process import Runner


@dataclass
class LiveDisk:
    disk: CmdDisk
    host_device: str | None
    evidence: Evidence
    diagnosis: Diagnosis


@dataclass
class LiveVm:
    proc: QemuProcess
    facts: QmpFacts
    version: str | None
    disks: list[LiveDisk] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # per-sampling working state
    monitor: Monitor | None = None
    threads0: Snapshot | None = None
    blocks0: dict[str, BlockCounters] = field(default_factory=dict)


@dataclass(frozen=True)
class Seams:
    proc_root: Path = Path("/proc")
    sys_root: Path = Path("/sys")
    runner: Runner = field(default_factory=Runner)
    open_monitor: Callable[[QemuProcess], Monitor] | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    trusted: frozenset[int] | None = None  # uids whose QEMUs are contacted unasked (None: trusted_uids())


def others_qemus(everyone: Sequence[QemuProcess], seams: Seams) -> list[QemuProcess]:
    """QEMUs run by users other than root, the invoking user and libvirt's QEMU user."""
    trusted = trusted_uids() if seams.trusted is None else seams.trusted
    return [q for q in everyone if not set(q.uids) <= trusted]


def diagnose_live(
    seconds: float, seams: Seams, *, pids: Sequence[int] = (), jobs_per_vm: int | None = None
) -> list[LiveVm]:
    """Find the QEMUs (only ``pids`` when given), sample for ``seconds``, diagnose each VM's disks."""
    everyone = find_qemus(seams.proc_root)
    others = {q.pid for q in others_qemus(everyone, seams)}
    chosen = [q for q in everyone if q.pid in pids or (not pids and q.pid not in others)]
    missing = sorted(set(pids) - {q.pid for q in chosen})
    if missing:
        running = ", ".join(str(q.pid) for q in everyone) or "none"
        raise InputError(f"--pid {missing[0]!r} is not a running QEMU; QEMU pids now: {running}")
    opener = seams.open_monitor or (lambda proc: open_monitor(proc, seams.runner))
    vms = []
    for proc in chosen:
        facts, mon = ask(proc, opener)
        vms.append(LiveVm(proc, facts, facts.version or _binary_version(proc, seams.runner), monitor=mon))
    if jobs_per_vm is None:
        for vm in vms:
            vm.notes.append(
                "jobs per VM unknown (the host cannot see the guest's jobs); "
                "--jobs-per-vm N lets Fig. 10 (c) ask about QEMU's I/O thread"
            )
    try:
        _sample(vms, everyone, seconds, seams, jobs_per_vm)
    finally:
        for vm in vms:
            if vm.monitor is not None:
                vm.monitor.close()
                vm.monitor = None
    return vms


def _sample(
    vms: list[LiveVm], everyone: list[QemuProcess], seconds: float, seams: Seams, jobs: int | None
) -> None:
    disks0, cpu0, t0 = procfs.read_diskstats(seams.proc_root), procfs.read_cpu(seams.proc_root), seams.clock()
    for vm in vms:
        vm.threads0 = _threads(vm, seams, t0)
        vm.blocks0 = _blocks(vm)
    seams.sleep(seconds)
    disks1, cpu1, t1 = procfs.read_diskstats(seams.proc_root), procfs.read_cpu(seams.proc_root), seams.clock()
    elapsed = max(t1 - t0, 1e-3)
    cpu = procfs.cpu_shares(cpu0, cpu1)
    host = {"cpus": procfs.cpu_count(seams.proc_root)}
    sharing = _vms_per_device(everyone, seams)
    vm_disks = tuple(d.path for q in everyone for d in q.cmd.disks if d.path and d.bus != "vfio")
    for vm in vms:
        threads = _thread_pcts(vm, _threads(vm, seams, t1))
        blocks1 = _blocks(vm)
        for disk in vm.facts.disks if vm.facts.reachable else vm.proc.cmd.disks:
            dev = _host_device(disk, seams)
            rates = (
                procfs.disk_rates(disks0[dev], disks1[dev], elapsed)
                if dev in disks0 and dev in disks1
                else {}
            )
            ops = _disk_rates(vm, disk, blocks1, elapsed)
            if ops is None and rates:
                vm.notes.append(
                    f"{disk.drive or disk.device_id}: IOPS are the host device {dev}'s, shared with its other users"
                )
            ev = _evidence(
                vm,
                disk,
                dev,
                rates,
                ops,
                cpu,
                threads,
                host["cpus"],
                sharing.get(dev or "", 1),
                jobs,
                seams,
                vm_disks,
            )
            vm.disks.append(LiveDisk(disk, dev, ev, diagnose(ev)))


def _threads(vm: LiveVm, seams: Seams, at: float) -> Snapshot | None:
    try:
        return Snapshot(vm.proc.pid, at, read_threads(vm.proc.pid, seams.proc_root))
    except OSError:
        vm.notes.append("the process exited while it was sampled")
        return None


def _blocks(vm: LiveVm) -> dict[str, BlockCounters]:
    if vm.monitor is None:
        return {}
    try:
        return block_counters(vm.monitor)
    except (ToolError, KeyError, TypeError) as exc:
        vm.notes.append(f"query-blockstats failed: {exc}")
        return {}


def _thread_pcts(vm: LiveVm, after: Snapshot | None) -> dict[str, list[float]]:
    """CPU % of one core per role: 'main', 'vcpu', and 'IO <id>' for each iothread."""
    out: dict[str, list[float]] = {}
    if vm.threads0 is None or after is None or after.at <= vm.threads0.at:
        return out
    by_tid = {tid: f"IO {name}" for name, tid in vm.facts.iothread_tids.items()}
    by_tid.update(dict.fromkeys(vm.facts.vcpu_tids, "vcpu"))
    ids = vm.proc.cmd.iothreads or tuple(vm.facts.iothread_tids)
    for row in cpu_between(vm.threads0, after, ids):
        role = by_tid.get(row.tid)
        if role is None:
            kind = classify(row.tid, row.comm, vm.proc.pid, ids)
            role = {"iothread": row.comm, "vcpu": "vcpu", "main": "main"}.get(kind, "other")
        out.setdefault(role, []).append(min(100.0, row.total_pct))
    return out


def _host_device(disk: CmdDisk, seams: Seams) -> str | None:
    if disk.path is None or disk.bus == "vfio":
        return None
    return reported_device(disk.path, device_chain(disk.path, seams.sys_root, seams.proc_root))


def _vms_per_device(everyone: list[QemuProcess], seams: Seams) -> dict[str, int]:
    count: dict[str, int] = {}
    for proc in everyone:
        for dev in {_host_device(d, seams) for d in proc.cmd.disks} - {None}:
            count[str(dev)] = count.get(str(dev), 0) + 1
    return count


def _disk_rates(
    vm: LiveVm, disk: CmdDisk, after: dict[str, BlockCounters], elapsed: float
) -> list[float] | None:
    for key in (disk.drive, disk.device_id):
        if key and key in vm.blocks0 and key in after:
            a, b = vm.blocks0[key], after[key]
            return [
                (b.read_ops - a.read_ops) / elapsed,
                (b.write_ops - a.write_ops) / elapsed,
                (b.read_bytes - a.read_bytes) / elapsed,
                (b.write_bytes - a.write_bytes) / elapsed,
            ]
    return None


def _evidence(
    vm: LiveVm,
    disk: CmdDisk,
    dev: str | None,
    rates: dict[str, float],
    ops: list[float] | None,
    cpu: dict[str, float],
    threads: dict[str, list[float]],
    cpus: int,
    sharing: int,
    jobs: int | None,
    seams: Seams,
    vm_disks: tuple[str, ...] = (),
) -> Evidence:
    read, write = (ops[0], ops[1]) if ops else (rates.get("read_iops"), rates.get("write_iops"))
    moved = (ops[2] + ops[3]) if ops else (rates.get("read_bw", 0.0) + rates.get("write_bw", 0.0))
    total = (read or 0.0) + (write or 0.0)
    io_key = f"IO {disk.iothread}"[:15] if disk.iothread else None
    iothreads = (
        len(vm.facts.iothread_tids or vm.proc.cmd.iothreads) if disk.vq_mapping else int(bool(disk.iothread))
    )
    devices: tuple[Device, ...] = ()
    if dev is not None:
        dedicated = disk.bus in ("block", "vfio")
        used = in_use(dev, seams.sys_root, seams.proc_root, vm_disks=vm_disks)
        devices = (Device(dev, is_rotational(dev, seams.sys_root), used, dedicated),)
    return Evidence(
        host=Host(
            cpus=cpus or None,
            qemu_version=vm.version,
            accel=vm.proc.cmd.accel if vm.proc.cmd.accel in ("kvm", "tcg") else None,
        ),
        devices=devices,
        vm=Vm(count=sharing, jobs_per_vm=jobs, bus=disk.bus, iothreads=iothreads, vq_mapping=disk.vq_mapping),
        workload=Workload(
            read_pct=_pct(round(100 * (read or 0) / total, 3)) if total > 0 else None,
            bs=max(1, round(moved / total)) if total > 0 and moved > 0 else None,
        ),
        measured=Measured(
            read_iops=read,
            write_iops=write,
            dev_busy_pct=_pct(rates.get("busy_pct")),
            dev_queue=rates.get("queue"),
            dev_await_ms=rates.get("await_ms"),
            cpu_usr_pct=_pct(cpu["usr_pct"]),
            cpu_sys_pct=_pct(cpu["sys_pct"]),
            cpu_iowait_pct=_pct(cpu["iowait_pct"]),
            qemu_iothread_cpu_pct=_busiest(threads, io_key) if io_key else None,
            qemu_main_loop_cpu_pct=_busiest(threads, "main"),
            qemu_vcpu_cpu_pct=_busiest(threads, "vcpu"),
        ),
    )


def _busiest(threads: dict[str, list[float]], role: str | None) -> float | None:
    values = threads.get(role or "")
    return _pct(max(values)) if values else None


def _pct(value: float | None) -> float | None:
    return None if value is None else min(100.0, max(0.0, value))


def _binary_version(proc: QemuProcess, runner: Runner) -> str | None:
    """The QEMU version from its own binary, when QMP cannot tell."""
    exe = proc.exe.removesuffix(" (deleted)")
    for binary in dict.fromkeys((exe, proc.cmd.argv[0])):
        with contextlib.suppress(ToolError, OSError):
            done = runner.run([binary, "--version"], timeout=10, check=False)
            return ".".join(map(str, parse_version(done.stdout)))
    return None
