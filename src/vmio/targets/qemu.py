"""VMs as a target: boot a fleet running the vmio guest, drive every VM's ``fio --server`` with one client.

VMs are spread over the backing paths in turn; the VMs sharing a path get disjoint byte ranges of it
(hitachi-nvme-2016's "one SSD vs two"). The fleet stays up for the target's consecutive points and is torn down
after them or after a failed point. Every run records the accelerator, the QEMU version and each VM's argv.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vmio import guest
from vmio.errors import InputError, VmioError
from vmio.guest.image import GuestImage
from vmio.metrics.guesttrace import Tracer
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe
from vmio.qemu import VM, AccelProber, Disk, Fleet, QemuCaps, VMConfig, builds, probe_caps
from vmio.qemu.argv import nvme_timeout_needed, plan_iothreads
from vmio.qemu.guestctl import GuestTracer
from vmio.qemu.threads import COMM_LEN, Snapshot, cpu_between, read_threads
from vmio.qemu.tracing import LAYER_EVENTS, layer_log_args, qemu_trace_args, trace_events
from vmio.spec import QemuTarget, RbdTarget, Target, Workload
from vmio.system import device_facts, files, rbdimage
from vmio.system.blockdev import Loop, device_chain, loop_device, reported_device, size_of
from vmio.system.cephclient import CephClient, authenticate, client_conf
from vmio.system.process import Runner
from vmio.system.safety import check_target_write, hold, is_block_device
from vmio.targets import host, placement
from vmio.targets.base import Endpoint, Env, Facts, Notes
from vmio.targets.kind import Checks, check_paths
from vmio.targets.traits import QemuTraits
from vmio.traces.vm_runs import point_dir, vm_trace_name

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
    prefix: str = "qemu"  # "idle-qemu": an idle VM's, kept apart from the target's QEMU CPU
    source: str = field(init=False)

    def __post_init__(self) -> None:
        self.source = f"{self.prefix}:{self.vm.config.name}"

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
        ids = self.vm.config.iothread_ids
        by_comm = {f"IO {name}"[:COMM_LEN]: k for k, name in enumerate(ids)}
        out.update({f"iothread{k}_pct": 0.0 for k in range(len(ids))})
        for row in cpu_between(prev, cur, ids):
            out[f"{row.kind}_pct"] += row.total_pct
            out[f"{row.kind}_max_pct"] = max(out[f"{row.kind}_max_pct"], row.total_pct)
            if row.kind == "iothread" and row.comm in by_comm:
                out[f"iothread{by_comm[row.comm]}_pct"] += row.total_pct
        return out


def target_caps(
    target: QemuTarget, runner: Runner | None = None, build: builds.QemuBuild | None = None
) -> QemuCaps:
    """The capabilities of the QEMU build ``target.qemu`` names (default: the system's; ``build``: resolved
    already), probed with the build's own environment. A version that is not installed is an ``InputError``
    naming ``vmio qemu add``."""
    build = build or builds.resolve(target.qemu, runner)
    return probe_caps(build.path, runner, env=build.env, data_dirs=build.data_dirs, source=build.source)


def ceph_client(target: QemuTarget | RbdTarget) -> CephClient:
    """The Ceph client a target's RBD images are reached as (``clientname``, ``keyring``)."""
    name = target.clientname if target.clientname != "admin" or target.keyring else None
    keyring = Path(target.keyring).absolute() if target.keyring else None
    client = CephClient(name, keyring)
    client.check(f"target {target.name!r}: keyring")
    return client


def layout(target: QemuTarget, destroy: Sequence[str] = ()) -> list[Disk]:
    """One disk per VM: VM i on backing path i mod n, VMs on one path in disjoint aligned ranges."""
    per_path = target.vms_per_backing()
    share = {path: _share(target, path, count, destroy) for path, count in per_path.items()}
    seen: dict[str, int] = {}
    disks = []
    for i in range(target.vms):
        path = target.backing_of(i)
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


def _share(target: QemuTarget, path: str, count: int, destroy: Sequence[str]) -> int:
    """Bytes each of ``count`` VMs gets on ``path``; a missing file is created to fit them all."""
    if path.startswith("rbd:"):
        if target.size is None and count > 1:
            raise InputError(
                f'target {target.name!r}: {count} VMs share {path!r}; give size per VM (e.g. "1G")'
            )
        return target.size or 0
    if is_block_device(path):
        total = size_of(path) or 0
    elif target.size is not None:
        host.prepare_file(path, target.size * count, destroy)
        total = Path(path).stat().st_size
    elif Path(path).is_file():
        total = Path(path).stat().st_size
    else:
        raise InputError(f'target {target.name!r}: backing {path!r} does not exist; give size (e.g. "1G")')
    share = (target.size or total // count) // ALIGN * ALIGN
    if share <= 0 or share * count > total:
        raise InputError(f"target {target.name!r}: {path!r} ({total} bytes) cannot hold {count} VM disks")
    return share


def attach_loops(target: QemuTarget, env: Env, stack: contextlib.ExitStack) -> list[Loop]:
    """With ``loop = true``: each backing file (created to fit its VMs when ``size`` is given) attached as a
    direct-I/O loop device until ``stack`` closes."""
    if not target.loop:
        return []
    loops = []
    for path, count in target.vms_per_backing().items():
        if target.size is not None:
            host.prepare_file(path, target.size * count, env.destroy)
        elif not Path(path).is_file():
            raise InputError(
                f'target {target.name!r}: backing {path!r} does not exist; give size (e.g. "1G")'
            )
        loops.append(stack.enter_context(loop_device(path, env.runner, env.sys_root)))
    return loops


VIRTIO_BLK = ("virtio-blk", "block")  # buses whose disk is a virtio-blk device (QEMU's virtio_blk_* events)


class QemuRig:
    """A VM target made ready: its fleet booted, the devices under its backing files and every QEMU
    thread sampled. The fleet lives in ``stack`` and goes down with it."""

    fio_env = None

    def _rbd_client(self, disks: list[Disk], stack: contextlib.ExitStack) -> list[Disk]:
        """RBD disks as the target's Ceph client: ``user=`` its name, ``conf=`` a per-run copy of the conf
        naming its keyring (0700 folder, removed with the VMs)."""
        if not any(d.is_rbd for d in disks) or self.target.conf is None:
            return disks
        client = ceph_client(self.target)
        conf = stack.enter_context(client_conf(Path(self.target.conf).resolve(), client))
        return [dataclasses.replace(d, rbd_conf=conf, rbd_user=client.id) if d.is_rbd else d for d in disks]

    def _held(self, disks: list[Disk], stack: contextlib.ExitStack) -> list[Disk]:
        """Local backings resolved and opened once (``safety.hold``), judged as opened (write workloads)
        and handed to QEMU as vmio's descriptor of them: QEMU opens the object that was checked."""
        if self.target.bus == "vfio":
            return disks
        held: dict[Path, Path] = {}
        out = []
        for disk in disks:
            if not disk.is_rbd and disk.path not in held:
                h = stack.enter_context(hold(str(disk.path)))
                if self.env.writes:
                    env = self.env
                    check_target_write(
                        str(disk.path), env.destroy, env.runner, env.sys_root, env.proc_root, h.here
                    )
                held[disk.path] = Path(h.fio_path)
            out.append(disk if disk.is_rbd else dataclasses.replace(disk, path=held[disk.path]))
        return out

    def __init__(self, target: QemuTarget, env: Env, stack: contextlib.ExitStack) -> None:
        self.loops = attach_loops(target, env, stack)
        if self.loops:
            mapped = {lp.backing: lp.device for lp in self.loops}
            target = dataclasses.replace(
                target, backing=tuple(mapped[str(Path(b).resolve())] for b in target.backing)
            )
        self.target, self.env = target, env
        self.caps = resolved_caps(target, env)
        self.iothreads = plan_iothreads(target.bus, target.iothreads, self.caps)
        image = resolved_image(env)
        self.accel = AccelProber(image, self.caps).resolve(target.accel)
        self.live_traces: list[Path] = []
        if target.trace:
            live = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vmio-trace-")))
            self.live_traces = [live / vm_trace_name(i) for i in range(target.vms)]
        self.layer_logs: list[Path] | str = "the campaign does not trace layers"
        if env.layers and target.bus in VIRTIO_BLK:
            logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vmio-layers-")))  # 0700
            self.layer_logs = self.live_traces or [logs / f"qemu-{i}.log" for i in range(target.vms)]
        elif env.layers:
            self.layer_logs = (
                f"QEMU's request events are traced on virtio-blk disks only (bus = {target.bus!r})"
            )
        configs = [
            VMConfig(
                index=i,
                disks=(disk,),
                bus=target.bus,
                iothreads=self.iothreads.iothreads,
                queues=target.queues,
                cache=target.cache,
                aio=target.aio,
                vcpus=target.vcpus,
                memory=target.memory,
                accel=self.accel.accel,
                machine=target.machine,
                extra_args=self._trace_args(i),
                loglevel=GUEST_LOGLEVEL,
                trace_port=env.layers,
            )
            for i, disk in enumerate(self._held(self._rbd_client(layout(target, env.destroy), stack), stack))
        ]
        idle = [  # okayama-hypervisors-2020's second VM: booted alongside with the same CPUs and memory, no disk, no fio
            VMConfig(
                index=target.vms + k,
                vcpus=target.vcpus,
                memory=target.memory,
                accel=self.accel.accel,
                machine=target.machine,
                loglevel=GUEST_LOGLEVEL,
            )
            for k in range(target.idle_vms)
        ]
        fleet = stack.enter_context(
            Fleet(configs + idle, image, caps=self.caps, boot_timeout=env.boot_timeout)
        )
        self.fleet = fleet
        self.vms = fleet.vms[: target.vms]  # the measured VMs
        self.tracers = [
            (GuestTracer(vm.runtime.trace, vm.config.name), vm.guest_devices()[0]) for vm in self.vms
        ]
        for tracer, _ in self.tracers:
            stack.callback(tracer.close)
            if env.layers:  # the guest's tracer waits for commands instead of polling its port
                with contextlib.suppress(VmioError):  # a point's "on" says why, if it still cannot
                    tracer.connect()
        self.idle = fleet.vms[target.vms :]
        local = [b for b in target.backing if not b.startswith("rbd:")]
        if target.conf and (Path(target.conf).parent / "vmio-dstore.json").is_file():
            local.append(str(Path(target.conf).parent))  # a cluster vmio started: its OSDs' files
        chains = {name for path in local for name in device_chain(path, env.sys_root, env.proc_root)}
        first = device_chain(local[0], env.sys_root, env.proc_root) if local else []
        self.device = reported_device(local[0], first) if local else None
        self.probes: list[Probe] = [DiskProbe(d, env.proc_root) for d in sorted(chains)]
        self.probes.append(CpuProbe(env.proc_root))
        self.probes += [QemuThreadProbe(vm) for vm in self.vms]
        self.probes += [QemuThreadProbe(vm, prefix="idle-qemu") for vm in self.idle]

    def endpoints(self, workload: Workload) -> list[Endpoint]:
        return placement.endpoints(self.target, workload, servers=[_server(vm) for vm in self.vms])

    def facts(self) -> Facts:
        return Facts(
            device=self.device,
            accel=self.accel.accel,
            qemu_version=self.caps.version_string,
            qemu_argv=[vm.argv for vm in self.fleet.vms],
            host={
                "accel_reason": self.accel.reason,
                "qemu_path": self.caps.binary,
                "qemu_source": self.caps.source,
                "qemu_machine": self.target.machine,
                "qemu_caps": self.caps.as_dict(),
                "iothreads": self.iothreads.iothreads,
                "iothread_vq_mapping": self.iothreads.mapped,
                "iothread_fallback": self.iothreads.reason,
                "nvme_io_timeout_workaround": nvme_timeout_needed(self.fleet.vms[0].config, self.caps),
                "idle_vms": [{"name": vm.config.name, "pid": vm.pid} for vm in self.idle],
                # each VM's fio server as fio's results name it (their ``host``): the VM's relay (fio.relay)
                "fio_servers": {vm.config.name: _server(vm) for vm in self.fleet.vms},
                **host.loop_facts(self.loops),
                "storage": self.storage(),
            },
        )

    def storage(self) -> list[dict[str, object]]:
        """The storage under each backing: an rbd image's pool, image and cluster; a file's or device's
        filesystem and disks."""
        out = []
        for path in dict.fromkeys(self.target.backing):
            if path.startswith("rbd:"):
                pool, _, image = path.removeprefix("rbd:").partition("/")
                out.append(device_facts.rbd_facts(pool, image, self.target.conf or ""))
            else:
                out.append(device_facts.of_path(path, self.env.sys_root, self.env.proc_root))
        return out

    @contextlib.contextmanager
    def watch(self, campaign: str, point_key: str) -> Iterator[Notes]:
        """Notes of one point: the guest kernel's disk warnings, the VMs' traces kept; on a failure the
        tail of every VM's console."""
        starts = [p.stat().st_size if p.exists() else 0 for p in self.live_traces]
        consoles = self._console_sizes()
        notes = Notes()
        try:
            yield notes
        except VmioError as exc:
            notes.log += "".join(
                f"--- {vm.config.name} console ---\n{vm.console_tail(20)}\n" for vm in self.fleet.vms
            )
            dead = [how for vm in self.fleet.vms if (how := vm.exited()) is not None]
            if dead:  # what failed the point is the VM, not the fio that lost it
                raise VmioError(f"{'; '.join(dead)} during the point; {exc}") from exc
            raise
        self._keep_traces(starts, campaign, point_key)
        self._guest_trouble(consoles, notes)
        if self.idle:  # the idle VMs ran through the point (their QEMU still there when it ended)
            notes.host["idle_vms_running"] = sum(vm.exited() is None for vm in self.idle)

    def _trace_args(self, index: int) -> tuple[str, ...]:
        if not self.live_traces:
            logs = self.layer_logs
            return tuple(layer_log_args(logs[index])) if isinstance(logs, list) else ()
        return tuple(qemu_trace_args(self.live_traces[index], events=trace_events(self.target.bus)))

    def qemu_logs(self) -> list[Path] | str:
        """Each measured VM's log of QEMU's request events (``TracesQemu``), or why there is none."""
        return self.layer_logs

    def guest_tracers(self) -> list[tuple[Tracer, str]] | str:
        """Each measured VM's tracer and its disk in the guest (``TracesGuest``), or why there is none."""
        if not self.env.layers:
            return "the campaign does not trace layers"
        return [(tracer, device.removeprefix("/dev/")) for tracer, device in self.tracers]

    def qemu_events(self, enable: bool) -> None:
        """Switch QEMU's request events on (for a point) or off, in every measured VM. Before any is switched
        on, every VM's QEMU is asked which it has: a build without one of them switches none on and says
        which it lacks (``VmioError``), so nothing is left logging for a layer that cannot be traced."""
        if enable:
            for vm in self.vms:
                known = {e["name"] for e in vm.qmp("trace-event-get-state", {"name": "virtio_blk_*"})}
                missing = [event for event in LAYER_EVENTS if event not in known]
                if missing:
                    raise VmioError(
                        f"{vm.config.name}'s QEMU ({vm.caps.binary}, {vm.caps.version_string}) has no trace "
                        f"event {', '.join(missing)} (a build without them, or another trace backend)"
                    )
        for vm in self.vms:
            for event in LAYER_EVENTS:
                vm.qmp("trace-event-set-state", {"name": event, "enable": enable})

    def _keep_traces(self, starts: list[int], campaign: str, point_key: str) -> None:
        """Copy what each VM traced during the point into the point's trace folder."""
        if self.env.trace_root is None or not self.live_traces:
            return
        out = point_dir(self.env.trace_root, campaign, point_key)
        out.mkdir(parents=True, exist_ok=True)
        for live, start in zip(self.live_traces, starts, strict=True):
            with open(live, "rb") as src, files.open_new(out / live.name) as dst:
                src.seek(start)
                shutil.copyfileobj(src, dst)

    def _console_sizes(self) -> list[int]:
        return [
            vm.runtime.console.stat().st_size if vm.runtime.console.exists() else 0 for vm in self.fleet.vms
        ]

    def _guest_trouble(self, sizes: list[int], notes: Notes) -> None:
        """Note the guest kernel's disk warnings printed during the point (they explain odd figures)."""
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
        notes.host["guest_io_warnings"] = len(found)
        if found:
            shown = "\n".join(found[:20]) + (f"\n... {len(found) - 20} more" if len(found) > 20 else "")
            notes.log += f"\nguest kernel disk warnings during this point ({len(found)}):\n{shown}\n"


def resolved_build(target: QemuTarget, env: Env) -> builds.QemuBuild:
    """The QEMU build ``target.qemu`` names, resolved once per run (``env.builds``: preflight resolves it,
    the rig that boots the VMs takes the same one)."""
    build = env.builds.get(target.name)
    if build is None:
        build = env.builds[target.name] = builds.resolve(target.qemu, env.runner)
    return build


def resolved_caps(target: QemuTarget, env: Env) -> QemuCaps:
    """The capabilities of the build ``target.qemu`` names, probed once per run (``env.caps``, by the build's
    binary: the targets of one build share them)."""
    build = resolved_build(target, env)
    caps = env.caps.get(build.path)
    if caps is None:
        caps = env.caps[build.path] = target_caps(target, env.runner, build)
    return caps


def resolved_image(env: Env) -> GuestImage:
    """The guest image (``guest.build()``: found in the cache, or built), once per run (``env.images``)."""
    image = env.images.get(DEFAULT_IMAGE)
    if image is None:
        image = env.images[DEFAULT_IMAGE] = guest.build()
    return image


def _server(vm: VM) -> str:
    """A VM's fio server as fio's client names it in its results (``host``): ``127.0.0.1:PORT``, its relay."""
    return vm.fio_client.replace(",", ":")


DEFAULT_IMAGE = "default"  # env.images' key of guest.build()'s image (Debian's cloud kernel, lean)


class QemuKind(QemuTraits):
    """``kind = "qemu"``: VMs vmio boots with a chosen disk path, fio inside them as fio servers."""

    def preflight(self, target: Target, checks: Checks) -> None:
        t = _qemu(target)
        resolved_build(t, checks.env)  # a build that is not installed: the error says `vmio qemu add`
        runner = checks.env.runner
        rbd_backings = [b for b in t.backing if b.startswith(rbdimage.PREFIX)]
        if t.conf and rbd_backings:
            client = ceph_client(t)
            authenticate(runner, Path(t.conf), client)  # a wrong key: one sentence, exit 2
            if checks.writes:
                for backing in rbd_backings:
                    pool, _, image = backing[len(rbdimage.PREFIX) :].partition("/")
                    rbdimage.check_write(runner, t.conf, pool, image, checks.destroy, client.args())
        if t.bus == "block" and not t.loop:
            plain = [b for b in t.backing if not is_block_device(b)]
            if plain:
                raise InputError(
                    f"target {t.name!r}: bus = 'block' needs a host block device; backing "
                    f"{plain[0]!r} is not one (add loop = true to attach a file as one, or use virtio-blk)"
                )
        check_paths(t.backing, checks)

    @contextlib.contextmanager
    def open(self, target: Target, env: Env) -> Iterator[QemuRig]:
        with contextlib.ExitStack() as stack:
            yield QemuRig(_qemu(target), env, stack)

    def size(self, target: Target) -> int | None:
        t = _qemu(target)
        if t.size is not None:
            return t.size
        per_path = t.vms_per_backing()
        sizes = [size // n for path, n in per_path.items() if (size := size_of(path)) is not None]
        return min(sizes) if sizes else None

    def label(self, target: Target) -> str:
        t = _qemu(target)
        return f"; cache {t.cache}, aio {t.aio}"


def _qemu(target: Target) -> QemuTarget:
    assert isinstance(target, QemuTarget), target  # found by its kind: the spec built it as this class
    return target


KIND = QemuKind()
