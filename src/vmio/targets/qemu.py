"""VMs as a target: boot a fleet running the vmio guest, drive every VM's ``fio --server`` with one client.

VMs are spread over the backing paths in turn; the VMs sharing a path get disjoint byte ranges of it
(seed 000's "one SSD vs two"). The fleet stays up for the target's consecutive points and is torn down
after them or after a failed point. Every run records the accelerator, the QEMU version and each VM's argv.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vmio import guest
from vmio.campaign.measure import measure_with
from vmio.errors import InputError, VmioError
from vmio.fio import jobfile
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe
from vmio.qemu import VM, AccelProber, Disk, Fleet, VMConfig, probe_caps
from vmio.qemu.threads import Snapshot, cpu_between, read_threads
from vmio.relocate.capture import qemu_trace_args
from vmio.spec import Point, QemuTarget, Workload
from vmio.store import RunRecord
from vmio.system.blockdev import device_chain, reported_device
from vmio.system.safety import is_block_device
from vmio.targets import host

if TYPE_CHECKING:
    from vmio.campaign import Options

ALIGN = 1 << 20
# Guest kernel lines that say its disk misbehaved during a point (warnings: the console shows level <= 4).
GUEST_IO_TROUBLE = re.compile(
    r"timeout, aborting|timeout, reset|I/O error|blk_update_request|resetting controller"
)
GUEST_LOGLEVEL = 5


@dataclass
class QemuThreadProbe:
    """CPU per QEMU thread class of one VM, in % of one core: the sum per class and its busiest thread."""

    vm: VM
    source: str = field(init=False)

    def __post_init__(self) -> None:
        self.source = f"qemu:{self.vm.config.name}"

    def read(self) -> Snapshot:
        return Snapshot(self.vm.pid, time.monotonic(), read_threads(self.vm.pid))

    def rates(self, prev: Any, cur: Any, seconds: float) -> dict[str, float]:
        if prev is None or cur is None or cur.at <= prev.at:
            return {}
        out = {
            f"{kind}_{stat}": 0.0
            for kind in ("vcpu", "iothread", "main", "other")
            for stat in ("pct", "max_pct")
        }
        for row in cpu_between(prev, cur, self.vm.config.iothread_ids):
            out[f"{row.kind}_pct"] += row.total_pct
            out[f"{row.kind}_max_pct"] = max(out[f"{row.kind}_max_pct"], row.total_pct)
        return out


def layout(target: QemuTarget) -> list[Disk]:
    """One disk per VM: VM i on backing path i mod n, VMs on one path in disjoint aligned ranges."""
    per_path: dict[str, int] = {}
    for i in range(target.vms):
        path = target.backing[i % len(target.backing)]
        per_path[path] = per_path.get(path, 0) + 1
    share = {path: _share(target, path, count) for path, count in per_path.items()}
    seen: dict[str, int] = {}
    disks = []
    for i in range(target.vms):
        path = target.backing[i % len(target.backing)]
        slot = seen.get(path, 0)
        seen[path] = slot + 1
        whole = per_path[path] == 1 and target.size is None
        size = None if whole else share[path]
        if path.startswith("rbd:"):
            disks.append(
                Disk(Path(path[4:]), slot * share[path], size, rbd_conf=Path(str(target.conf)).resolve())
            )
        else:
            disks.append(Disk(Path(path), offset=slot * share[path], size=size))
    return disks


def _share(target: QemuTarget, path: str, count: int) -> int:
    """Bytes each of ``count`` VMs gets on ``path``; a missing file is created to fit them all."""
    if path.startswith("rbd:"):
        if target.size is None and count > 1:
            raise InputError(
                f'target {target.name!r}: {count} VMs share {path!r}; give size per VM (e.g. "1G")'
            )
        return target.size or 0
    if is_block_device(path):
        total = _device_bytes(path)
    elif target.size is not None:
        host.prepare_file(path, target.size * count)
        total = Path(path).stat().st_size
    elif Path(path).is_file():
        total = Path(path).stat().st_size
    else:
        raise InputError(f'target {target.name!r}: backing {path!r} does not exist; give size (e.g. "1G")')
    share = (target.size or total // count) // ALIGN * ALIGN
    if share <= 0 or share * count > total:
        raise InputError(f"target {target.name!r}: {path!r} ({total} bytes) cannot hold {count} VM disks")
    return share


def _device_bytes(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def trace_events(bus: str) -> tuple[str, ...]:
    """One event pair per guest request: virtio-blk's own, else the block backend's (same offsets)."""
    if bus in ("virtio-blk", "block"):
        return ("virtio_blk_handle_read", "virtio_blk_handle_write")
    return ("blk_co_preadv", "blk_co_pwritev")


def trace_dir(root: Path, campaign: str, point_key: str) -> Path:
    """Where a point's QEMU request traces are kept: ``ROOT/CAMPAIGN/POINT/vmio-N.log``."""
    return root / campaign / point_key.replace("/", "_")


class QemuExecutor:
    def __init__(self, target: QemuTarget, options: Options, stack: contextlib.ExitStack) -> None:
        self.target, self.options = target, options
        self.caps = probe_caps()
        image = guest.build()
        self.accel = AccelProber(image, self.caps).resolve(target.accel)
        self.live_traces: list[Path] = []
        if target.trace:
            live = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vmio-trace-")))
            self.live_traces = [live / f"vmio-{i}.log" for i in range(target.vms)]
        configs = [
            VMConfig(
                index=i,
                disks=(disk,),
                bus=target.bus,
                iothreads=target.iothreads,
                queues=target.queues,
                cache=target.cache,
                aio=target.aio,
                vcpus=target.vcpus,
                memory=target.memory,
                accel=self.accel.accel,
                extra_args=self._trace_args(i),
                loglevel=GUEST_LOGLEVEL,
            )
            for i, disk in enumerate(layout(target))
        ]
        self.fleet = stack.enter_context(
            Fleet(configs, image, caps=self.caps, boot_timeout=options.boot_timeout)
        )
        local = [b for b in target.backing if not b.startswith("rbd:")]
        if target.conf and (Path(target.conf).parent / "vmio-dstore.json").is_file():
            local.append(str(Path(target.conf).parent))  # a cluster vmio started: its OSDs' files
        chains = {name for path in local for name in device_chain(path, options.sys_root, options.proc_root)}
        first = device_chain(local[0], options.sys_root, options.proc_root) if local else []
        self.device = reported_device(local[0], first) if local else None
        self.probes: list[Probe] = [DiskProbe(d, options.proc_root) for d in sorted(chains)]
        self.probes.append(CpuProbe(options.proc_root))
        self.probes += [QemuThreadProbe(vm) for vm in self.fleet.vms]

    def _trace_args(self, index: int) -> tuple[str, ...]:
        if not self.live_traces:
            return ()
        return tuple(qemu_trace_args(self.live_traces[index], events=trace_events(self.target.bus)))

    def _keep_traces(self, starts: list[int], rec: RunRecord) -> None:
        """Copy what each VM traced during the point into the point's trace folder."""
        if self.options.trace_root is None:
            return
        out = trace_dir(self.options.trace_root, rec.campaign, rec.point_key)
        out.mkdir(parents=True, exist_ok=True)
        for live, start in zip(self.live_traces, starts, strict=True):
            with open(live, "rb") as src, open(out / live.name, "wb") as dst:
                src.seek(start)
                shutil.copyfileobj(src, dst)

    def _console_sizes(self) -> list[int]:
        return [
            vm.runtime.console.stat().st_size if vm.runtime.console.exists() else 0 for vm in self.fleet.vms
        ]

    def _guest_trouble(self, sizes: list[int], rec: RunRecord) -> None:
        """Record the guest kernel's disk warnings printed during the point (they explain odd figures)."""
        found = []
        for vm, size in zip(self.fleet.vms, sizes, strict=True):
            with open(vm.runtime.console, "rb") as console:
                console.seek(size)
                text = console.read().decode(errors="replace")
            found += [
                f"{vm.config.name}: {line.strip()}"
                for line in text.splitlines()
                if GUEST_IO_TROUBLE.search(line)
            ]
        rec.host["guest_io_warnings"] = len(found)
        if found:
            shown = "\n".join(found[:20]) + (f"\n... {len(found) - 20} more" if len(found) > 20 else "")
            rec.log = (
                rec.log or ""
            ) + f"\nguest kernel disk warnings during this point ({len(found)}):\n{shown}\n"

    def measure(self, point: Point, workload: Workload, rundir: Path, rec: RunRecord) -> None:
        starts = [p.stat().st_size if p.exists() else 0 for p in self.live_traces]
        consoles = self._console_sizes()
        rec.accel = self.accel.accel
        rec.qemu_version = self.caps.version_string
        rec.qemu_argv = [vm.argv for vm in self.fleet.vms]
        rec.device = self.device
        rec.host["accel_reason"] = self.accel.reason
        total = self.target.vms * self.target.jobs_per_vm
        endpoints: list[tuple[str | None, jobfile.Placement]] = [
            (vm.fio_client.replace(",", ":"),
             jobfile.Placement(vm.config.guest_devices()[0], numjobs=self.target.jobs_per_vm, total_jobs=total))
            for vm in self.fleet.vms
        ]  # fmt: skip
        try:
            measure_with(endpoints, point, workload, rundir, rec, self.probes, self.options)
            self._keep_traces(starts, rec)
            self._guest_trouble(consoles, rec)
        except VmioError:
            tails = "\n".join(
                f"--- {vm.config.name} console ---\n{vm.console_tail(20)}" for vm in self.fleet.vms
            )
            rec.log = (rec.log or "") + tails + "\n"
            raise


@contextlib.contextmanager
def qemu_executor(target: QemuTarget, options: Options) -> Iterator[QemuExecutor]:
    with contextlib.ExitStack() as stack:
        yield QemuExecutor(target, options, stack)
