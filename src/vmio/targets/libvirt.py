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
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vmio.errors import FioError, UnsafeTargetError
from vmio.fio import output
from vmio.fio import run as fiorun
from vmio.fio.jobfile import Placement
from vmio.fio.output import FioOutput
from vmio.libvirt import agent, domxml, guest_fio
from vmio.libvirt.domxml import DiskShape, DomainShape
from vmio.libvirt.guest_fio import Domain
from vmio.libvirt.guest_trace import AgentTracer
from vmio.libvirt.virsh import Virsh, is_local
from vmio.metrics.guesttrace import Tracer
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe
from vmio.qemu.threads import COMM_LEN, Snapshot, cpu_between, read_threads
from vmio.spec import LibvirtDomain, LibvirtTarget, Target, Workload
from vmio.system import device_facts
from vmio.system.blockdev import device_chain, reported_device
from vmio.targets.base import Endpoint, Env, Facts, Notes, nothing_to_watch
from vmio.targets.kind import Checks
from vmio.targets.traits import LibvirtTraits

PID_DIR = Path("/run/libvirt/qemu")
# the qemu layer of a libvirt target (docs/layers.md): what its ``why`` says
QEMU_UNTRACED = (
    "the domains' QEMU was started by libvirtd without vmio's trace log (-D); vmio does not switch trace "
    "events on in a QEMU it did not start"
)
# the guest_block layer of a libvirt target that did not ask for it
GUEST_UNTRACED = (
    "the operator's guests are traced only when the target asks: guest_layers = true in its [[target]] table "
    "(tracefs triggers in the guest, through its guest agent)"
)


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
        local = [
            d
            for d in self.domains
            if is_local(d.ref.uri) and d.disk.source and d.disk.source_type in ("file", "block")
        ]
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
            if (v := virsh.hypervisor_version())
        }

    def _open(self, ref: LibvirtDomain) -> Domain:
        virsh = Virsh(ref.uri, self.env.runner)
        shape, disk = read_domain(ref, self.target.disk, virsh)
        agent.check_ready(virsh, ref.name)
        device = agent.guest_device(virsh, ref.name, disk)
        pid = qemu_pid(ref.name) if is_local(ref.uri) else None
        return Domain(ref, virsh, shape, disk, device, agent.clock_offset(virsh, ref.name), pid)

    def endpoints(self, workload: Workload) -> list[Endpoint]:
        total = workload.numjobs * len(self.domains)
        return [
            Endpoint(d.server, Placement(d.guest_device, numjobs=workload.numjobs, total_jobs=total))
            for d in self.domains
        ]

    def guest_tracers(self) -> list[tuple[Tracer, str]] | str:
        """Each domain's guest tracer, run through its guest agent, with the measured disk's name in the guest,
        when the target asks for them (``guest_layers = true``; ``TracesGuest``, docs/layers.md); else why
        not: tracing is switched on in the operator's guests only on the user's word."""
        if not self.target.guest_layers:
            return GUEST_UNTRACED
        return [
            (AgentTracer(d.virsh, d.ref.name), d.guest_device.removeprefix("/dev/")) for d in self.domains
        ]

    def facts(self) -> Facts:
        return Facts(
            device=self.device,
            accel=",".join(sorted({"kvm" if d.shape.type == "kvm" else "tcg" for d in self.domains})),
            qemu_version=",".join(sorted(self.versions)) or None,
            host={
                "libvirt_domains": [d.to_json() for d in self.domains],
                "qemu_machine": ",".join(sorted({d.shape.machine or "?" for d in self.domains})),
                "storage": [self._storage(d) for d in self.domains],
            },
        )

    def watch(self, campaign: str, point_key: str) -> contextlib.AbstractContextManager[Notes]:
        return nothing_to_watch()

    def qemu_logs(self) -> str:
        """Why the domains' QEMU layer is not traced (``TracesQemu``; docs/layers.md): libvirtd started
        their QEMU, without the log vmio gives its own VMs, and vmio switches no trace event on in it."""
        return QEMU_UNTRACED

    def qemu_events(self, enable: bool) -> None:
        """Nothing to switch: ``qemu_logs`` gives no log (vmio leaves the operator's QEMU as it runs)."""

    def _storage(self, domain: Domain) -> dict[str, object]:
        """A domain disk's storage: a local file's or device's filesystem and disks; a disk on another
        host or of another kind: its source, the rest unknown."""
        source = domain.disk.source
        if source and is_local(domain.ref.uri) and domain.disk.source_type in ("file", "block"):
            return device_facts.of_path(str(source), self.env.sys_root, self.env.proc_root)
        return {"path": source, "device": None, "disks": "unknown"}

    def run_fio(
        self, files: Sequence[fiorun.Endpoint], *, timeout: float, cwd: Path, read_pct: int | None = None
    ) -> FioOutput:
        """Each job file in its domain's guest, all started at once (``guest_fio.run_together``)."""
        by_server = {d.server: d for d in self.domains}
        jobs = [(by_server[str(ep.server)], ep.job_file) for ep in files]
        result = guest_fio.run_together(jobs, timeout=timeout, cwd=cwd)
        if read_pct is not None:
            missing = output.missing(result, [ep.server for ep in files], read_pct)
            if missing:
                raise FioError(
                    f"fio in the guests reported no {missing}; the point has no figures",
                    output=result.text[-4000:],
                )
        return result


class LibvirtKind(LibvirtTraits):
    """``kind = "libvirt"``: running libvirt domains, fio inside them through their guest agent."""

    def preflight(self, target: Target, checks: Checks) -> None:
        if checks.writes:
            check_libvirt_writes(_libvirt(target), checks.destroy, checks.env)

    @contextlib.contextmanager
    def open(self, target: Target, env: Env) -> Iterator[LibvirtRig]:
        yield LibvirtRig(_libvirt(target), env)

    def size(self, target: Target) -> int | None:
        return None

    def label(self, target: Target) -> str:
        return ""


def _libvirt(target: Target) -> LibvirtTarget:
    assert isinstance(target, LibvirtTarget), target  # found by its kind: the spec built it as this class
    return target


KIND = LibvirtKind()
