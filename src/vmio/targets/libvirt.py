"""The operator's own running domains, through libvirt: fio runs inside each guest through the QEMU guest
agent (``guest-exec``; no guest network), all domains of a target started together.

Each domain's XML says what is measured (the disk's bus, cache, io, iothread, queues and what is behind it
on the host); that is recorded with every run. Where the URI is local the host side is sampled as for
vmio's own VMs: the device under the disk's file or device, and the domain's QEMU threads (its PID from
libvirt's PID file). For other URIs those figures are absent, not zero.

Inside a guest vmio writes only to the disk of a canary it defined (its backing made by vmio) or to a disk
the user names with ``--destroy-data DOMAIN:DISK``; the fio job goes in on stdin, its logs into a folder
vmio makes under the guest's /tmp and removes after.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vmio.errors import FioError, InputError, ToolError, UnsafeTargetError, VmioError
from vmio.fio import output
from vmio.fio import run as fiorun
from vmio.fio.jobfile import Placement
from vmio.fio.output import FioOutput
from vmio.libvirt import agent, domxml
from vmio.libvirt.domxml import DiskShape, DomainShape
from vmio.libvirt.virsh import Virsh, is_local
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe
from vmio.qemu.threads import COMM_LEN, Snapshot, cpu_between, read_threads
from vmio.spec import LibvirtDomain, LibvirtTarget, Workload
from vmio.system.blockdev import device_chain, reported_device
from vmio.targets.base import Endpoint, Env, Facts, Notes, nothing_to_watch

PID_DIR = Path("/run/libvirt/qemu")
FILE_MARK = "@@vmio-file "


@dataclass
class Domain:
    """One measured domain, read and checked: its XML's shape, the disk measured, its guest device."""

    ref: LibvirtDomain
    virsh: Virsh
    shape: DomainShape
    disk: DiskShape
    guest_device: str
    clock_offset: float  # guest wall clock minus this host's, seconds
    pid: int | None  # QEMU's PID where the URI is local

    @property
    def server(self) -> str:
        return self.ref.name

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.ref.name,
            "uri": self.ref.uri,
            "type": self.shape.type,
            "machine": self.shape.machine,
            "iothreads": self.shape.iothreads,
            "canary": self.shape.marker is not None,
            "disk": self.disk.to_json(),
            "guest_device": self.guest_device,
            "guest_clock_offset_s": self.clock_offset,
            "qemu_pid": self.pid,
            "iothread_ids": [f"iothread{k}" for k in range(1, self.shape.iothreads + 1)],
        }


def read_domain(ref: LibvirtDomain, disk: str | None, virsh: Virsh) -> tuple[DomainShape, DiskShape]:
    shape = domxml.parse(virsh.dumpxml(ref.name), f"domain {ref.name!r}'s XML")
    return shape, shape.disk(disk, ref.uri)


def vmio_made(shape: DomainShape, disk: DiskShape) -> bool:
    """Whether ``disk`` is a canary's disk whose backing vmio created (and so holds nothing else)."""
    marker = shape.marker or {}
    return marker.get("made_backing") == "yes" and disk.source == marker.get("backing")


def check_libvirt_writes(target: LibvirtTarget, destroy: Sequence[str], env: Env) -> None:
    """Refuse writes to a guest disk vmio did not make unless ``--destroy-data DOMAIN:DISK`` names it."""
    for ref in target.domains:
        shape, disk = read_domain(ref, target.disk, Virsh(ref.uri, env.runner))
        named = f"{ref.name}:{disk.dev}"
        if not vmio_made(shape, disk) and named not in destroy:
            raise UnsafeTargetError(
                f"refusing to write to disk {disk.dev} of domain {ref.name!r} on {ref.uri}: vmio did not make "
                f"it and cannot tell whether it holds data. If its data may be destroyed, pass "
                f"--destroy-data {named}"
            )


def guest_device(virsh: Virsh, name: str, disk: DiskShape) -> str:
    """The guest's name for ``disk``: matched by PCI address (virtio-blk) or SCSI unit (virtio-scsi)
    against the guest agent's ``guest-get-disks``."""
    try:
        found = virsh.agent(name, "guest-get-disks")
    except ToolError as exc:
        raise InputError(
            f"domain {name!r}: its guest agent cannot list disks (guest-get-disks): {exc}"
        ) from None
    for entry in found:
        if _same_disk(entry, disk):
            return str(entry.get("name"))
    raise InputError(
        f"domain {name!r}: the guest shows no disk at {disk.dev}'s address {disk.address} (its disks: "
        f"{', '.join(str(e.get('name')) for e in found) or 'none'})"
    )


def _same_disk(entry: dict[str, Any], disk: DiskShape) -> bool:
    addr = entry.get("address") or {}
    want = disk.address
    if disk.serial and addr.get("serial") == disk.serial:
        return True
    if disk.bus == "virtio-blk" and want.get("type") == "pci":
        pci = addr.get("pci-controller") or {}
        have = (pci.get("bus"), pci.get("slot"), pci.get("function"))
        return have == tuple(int(want.get(k, "0"), 0) for k in ("bus", "slot", "function"))
    if disk.bus == "virtio-scsi" and want.get("type") == "drive" and addr.get("bus-type") == "scsi":
        unit = (addr.get("target"), addr.get("unit"))
        return unit == (int(want.get("target", "0")), int(want.get("unit", "0")))
    return False


def hypervisor_version(virsh: Virsh) -> str | None:
    """The QEMU version libvirt runs on ``virsh``'s host (``Running hypervisor: QEMU 7.2.0``)."""
    done = virsh.run("version", check=False)
    match = re.search(r"Running hypervisor:\s*QEMU\s+(\S+)", done.stdout)
    return match.group(1) if match else None


def qemu_pid(name: str, pid_dir: Path = PID_DIR) -> int | None:
    try:
        return int((pid_dir / f"{name}.pid").read_text().strip())
    except (OSError, ValueError):
        return None


@dataclass
class DomainThreadProbe:
    """CPU per QEMU thread class of one libvirt domain (libvirt names its I/O threads ``iothreadN``)."""

    name: str
    pid: int
    iothread_ids: tuple[str, ...]
    proc_root: str = "/proc"
    source: str = field(init=False)

    def __post_init__(self) -> None:
        self.source = f"qemu:{self.name}"

    def read(self) -> Snapshot:
        return Snapshot(self.pid, time.monotonic(), read_threads(self.pid, Path(self.proc_root)))

    def rates(self, prev: Any, cur: Any, seconds: float) -> dict[str, float]:
        if prev is None or cur is None or cur.at <= prev.at:
            return {}
        out = {f"{k}_{s}": 0.0 for k in ("vcpu", "iothread", "main", "other") for s in ("pct", "max_pct")}
        # by index, as for vmio's own VMs (the store reads iothreadK_pct as the K-th); libvirt's ids
        # (iothread1, ...) are in the run's facts, in the same order
        by_comm = {f"IO {name}"[:COMM_LEN]: f"iothread{k}" for k, name in enumerate(self.iothread_ids)}
        out.update({f"iothread{k}_pct": 0.0 for k in range(len(self.iothread_ids))})
        for row in cpu_between(prev, cur, self.iothread_ids):
            out[f"{row.kind}_pct"] += row.total_pct
            out[f"{row.kind}_max_pct"] = max(out[f"{row.kind}_max_pct"], row.total_pct)
            if row.kind == "iothread" and row.comm in by_comm:
                out[f"{by_comm[row.comm]}_pct"] += row.total_pct
        return out


class LibvirtRig:
    """Running libvirt domains, checked and read; fio runs in their guests through the guest agent."""

    fio_env = None

    def __init__(self, target: LibvirtTarget, env: Env) -> None:
        self.target, self.env = target, env
        self.domains = [self._open(ref) for ref in target.domains]
        self.probes: list[Probe] = [CpuProbe(env.proc_root)]
        local = [d for d in self.domains if is_local(d.ref.uri) and d.disk.source]
        chains = {n for d in local for n in device_chain(str(d.disk.source), env.sys_root, env.proc_root)}
        self.probes += [DiskProbe(n, env.proc_root) for n in sorted(chains)]
        first = local[0].disk.source if local else None
        self.device = (
            reported_device(first, device_chain(first, env.sys_root, env.proc_root)) if first else None
        )
        for d in self.domains:
            if d.pid is not None:
                ids = tuple(f"iothread{k}" for k in range(1, d.shape.iothreads + 1))
                self.probes.append(DomainThreadProbe(d.ref.name, d.pid, ids, env.proc_root))

    @property
    def versions(self) -> set[str]:
        """The QEMU versions the domains' hosts run (each URI asked once)."""
        return {
            v
            for virsh in {d.ref.uri: d.virsh for d in self.domains}.values()
            if (v := hypervisor_version(virsh))
        }

    def _open(self, ref: LibvirtDomain) -> Domain:
        virsh = Virsh(ref.uri, self.env.runner)
        shape, disk = read_domain(ref, self.target.disk, virsh)
        agent.check_ready(virsh, ref.name)
        device = guest_device(virsh, ref.name, disk)
        pid = qemu_pid(ref.name) if is_local(ref.uri) else None
        return Domain(ref, virsh, shape, disk, device, agent.clock_offset(virsh, ref.name), pid)

    def endpoints(self, workload: Workload) -> list[Endpoint]:
        total = workload.numjobs * len(self.domains)
        return [
            Endpoint(d.server, Placement(d.guest_device, numjobs=workload.numjobs, total_jobs=total))
            for d in self.domains
        ]

    def facts(self) -> Facts:
        return Facts(
            device=self.device,
            accel=",".join(sorted({"kvm" if d.shape.type == "kvm" else "tcg" for d in self.domains})),
            qemu_version=",".join(sorted(self.versions)) or None,
            host={
                "libvirt_domains": [d.to_json() for d in self.domains],
                "qemu_machine": ",".join(sorted({d.shape.machine or "?" for d in self.domains})),
            },
        )

    def watch(self, campaign: str, point_key: str) -> contextlib.AbstractContextManager[Notes]:
        return nothing_to_watch()

    def run_fio(
        self, files: Sequence[fiorun.Endpoint], *, timeout: float, cwd: Path, read_pct: int | None = None
    ) -> FioOutput:
        """Run each job file in its domain's guest, all started at once; one ``FioOutput`` of them all,
        results named by domain, fio's end time on this host's clock."""
        by_server = {d.server: d for d in self.domains}
        gate = threading.Barrier(len(files))  # every guest's folder made first, then every fio started
        runs = [_GuestFio(by_server[str(ep.server)], ep.job_file, cwd, gate) for ep in files]
        threads = [threading.Thread(target=r.run, args=(timeout,), daemon=True) for r in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [r.error for r in runs if r.error is not None]
        text = "\n".join(r.log for r in runs)
        (cwd / "fio-output.txt").write_text(text)
        if failed:
            first = failed[0]
            raise FioError(str(first).splitlines()[0], output=text[-8000:]) from first
        result = _merge([r.result for r in runs if r.result is not None], text)
        if read_pct is not None:
            missing = output.missing(result, [ep.server for ep in files], read_pct)
            if missing:
                raise FioError(f"fio in the guests reported no {missing}; the point has no figures",
                               output=text[-4000:])  # fmt: skip
        return result


class _GuestFio:
    """fio in one guest: the job on stdin, ``--output-format=json+``, logs fetched back after."""

    def __init__(self, domain: Domain, job_file: Path, cwd: Path, gate: threading.Barrier) -> None:
        self.domain, self.job_file, self.cwd, self.gate = domain, job_file, cwd, gate
        self.result: FioOutput | None = None
        self.error: VmioError | None = None
        self.log = ""

    def run(self, timeout: float) -> None:
        d = self.domain
        folder = f"/tmp/vmio-{uuid.uuid4().hex[:12]}"
        job = self.job_file.read_text().replace(str(self.cwd), folder)
        head = f"# fio in domain {d.ref.name} on {d.ref.uri} (guest clock offset {d.clock_offset:+.3f} s)"
        try:
            try:
                agent.run(d.virsh, d.ref.name, "mkdir", ["-m", "700", folder], timeout=30)
            except VmioError:
                self.gate.abort()
                raise
            try:
                try:
                    self.gate.wait(timeout=120)
                except threading.BrokenBarrierError:
                    raise ToolError(
                        f"domain {d.ref.name!r}: another domain of the target could not start fio"
                    ) from None
                pid = agent.start(d.virsh, d.ref.name, "fio", ["--output-format=json+", "-"], input_text=job)
                done = agent.wait(d.virsh, d.ref.name, pid, timeout)
                self._fetch_logs(folder)
            finally:
                with contextlib.suppress(VmioError):
                    agent.run(d.virsh, d.ref.name, "rm", ["-rf", folder], timeout=30)
            self.log = f"{head}\n{done.out}" + (f"\n{done.err}" if done.err.strip() else "")
            if done.exitcode != 0:
                raise FioError(f"fio failed in domain {d.ref.name!r} (exit {done.exitcode}, signal {done.signal})",
                               output=self.log)  # fmt: skip
            parsed = output.parse(done.out)
            self.result = dataclasses.replace(
                parsed,
                results=[dataclasses.replace(r, host=d.server) for r in parsed.results],
                steady=[(d.server, *s[1:]) for s in parsed.steady],
                timestamp_ms=(
                    None if parsed.timestamp_ms is None
                    else int(parsed.timestamp_ms - d.clock_offset * 1000)
                ),
            )  # fmt: skip
        except VmioError as exc:
            self.log = self.log or f"{head}\n{exc}"
            self.error = exc

    def _fetch_logs(self, folder: str) -> None:
        """fio's latency logs from the guest's folder into ``cwd`` under the names the host would give."""
        d = self.domain
        script = f'for f in {folder}/*.log; do [ -f "$f" ] && echo "{FILE_MARK}$f" && cat "$f"; done; true'
        done = agent.run(d.virsh, d.ref.name, "sh", ["-c", script], timeout=120)
        name = None
        lines: list[str] = []
        for line in [*done.out.splitlines(), FILE_MARK]:
            if line.startswith(FILE_MARK):
                if name is not None and re.fullmatch(r"[\w.+-]+\.log", name):
                    (self.cwd / name).write_text("\n".join(lines) + "\n")
                name, lines = line[len(FILE_MARK) :].rpartition("/")[2], []
            else:
                lines.append(line)


def _merge(results: list[FioOutput], text: str) -> FioOutput:
    stamps = [r.timestamp_ms for r in results if r.timestamp_ms is not None]
    return FioOutput(
        version=results[0].version if results else "",
        results=[j for r in results for j in r.results],
        disk_util=[u for r in results for u in r.disk_util],
        text=text,
        timestamp_ms=max(stamps) if stamps else None,
        steady=[s for r in results for s in r.steady],
    )
