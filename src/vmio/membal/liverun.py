"""One live run: boot the VMs (vmio guest, balloon, agent), load them, run the controller, record it all.

Guests boot with ``psi=1`` so Debian kernels report memory pressure through PSI; their disks are sparse
files in the run's work folder, used through the host's page cache (``cache=writeback``) so the guests'
own page caches are what the controller balances.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vmio.errors import InputError
from vmio.guest import GuestImage, build
from vmio.membal.balloon import BalloonedVM
from vmio.membal.governor import Rules
from vmio.membal.live import LiveController, Step, VmSummary, check_live_policy
from vmio.membal.livework import Load, LoadRun
from vmio.qemu import AccelProber, Disk, Fleet, QemuCaps, VMConfig, probe_caps
from vmio.store import Store
from vmio.store.membal import finish_run, start_run
from vmio.system import files
from vmio.units import format_size


@dataclass(frozen=True)
class LiveSettings:
    """A live run; sizes in bytes, times in seconds. ``budget`` 0: the VMs' memory + floors, halved."""

    vms: int = 2
    memory: int = 512 << 20
    floors: tuple[int, ...] = (256 << 20, 256 << 20)
    policy: str = "refault"
    interval: float = 2.0
    duration: float = 60.0
    max_step: int = 64 << 20
    min_move: int = 8 << 20
    deflate: int = 0  # 0: max_step
    budget: int = 0
    psi_threshold: float = 0.01
    loads: tuple[Load, ...] = ()
    accel: str = "auto"
    params: dict[str, float] = field(default_factory=dict)  # the policy's (sizes in pages)
    uri: str | None = None  # with ``domains``: existing libvirt domains instead of VMs vmio boots
    domains: tuple[str, ...] = ()
    ceilings: tuple[int, ...] = ()  # per VM (a domain's maximum memory); () : ``memory`` for each

    def __post_init__(self) -> None:
        check_live_policy(self.policy)
        if len(self.floors) != self.vms:
            raise InputError(f"{len(self.floors)} floors for {self.vms} VMs; give one floor per VM")
        if len(self.loads) > self.vms:
            raise InputError(f"{len(self.loads)} workloads for {self.vms} VMs; give at most one per VM")
        if self.interval < 0.5:
            raise InputError(f"--interval {self.interval!r} s is too short; use at least 0.5s")
        if not 0 < self.psi_threshold <= 1:
            raise InputError(f"--psi-threshold {self.psi_threshold!r} is not accepted; use a share in (0, 1]")
        if self.duration < self.interval:
            raise InputError(
                f"--duration {self.duration!r} s is shorter than the interval {self.interval!r} s"
            )

    def rules(self) -> Rules:
        ceilings = self.ceilings or (self.memory,) * self.vms
        budget = self.budget or (sum(ceilings) + sum(self.floors)) // 2
        return Rules(
            budget=budget,
            floors=self.floors,
            ceilings=ceilings,
            max_step=self.max_step,
            min_move=self.min_move,
            deflate=self.deflate or self.max_step,
        )

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["rules"] = asdict(self.rules())
        return out


def vm_configs(s: LiveSettings, accel: str, workdir: Path) -> list[VMConfig]:
    """The VMs of a run, each with a sparse disk in ``workdir`` large enough for its load."""
    configs = []
    for i in range(s.vms):
        load = s.loads[i] if i < len(s.loads) else Load()
        disk = workdir / f"disk-{i}.img"
        with files.open_new(disk) as f:  # never through a link another user planted
            f.truncate(max(64 << 20, load.size + (16 << 20)) // 512 * 512)
        configs.append(
            VMConfig(
                index=i,
                disks=(Disk(disk),),
                memory=s.memory,
                accel=accel,
                cache="writeback",
                aio="threads",
                agent_interval=max(0.5, min(1.0, s.interval / 2)),
                extra_append=("psi=1",),
            )
        )
    return configs


@dataclass
class LiveOutcome:
    run_id: int
    accel: str
    summary: dict[str, VmSummary]  # by guest name
    steps: list[Step]
    vms: list[str]
    hit_ratio: float | None = None  # all VMs' workload hits / reads


def run_live(
    settings: LiveSettings,
    store: Store,
    *,
    on_step: Callable[[Step], None] | None = None,
    image: GuestImage | None = None,
    caps: QemuCaps | None = None,
    workdir: Path | None = None,
    boot_timeout: float = 90.0,
) -> LiveOutcome:
    """Boot, control for ``settings.duration``, tear down; the run and its decisions are in ``store``."""
    rules = settings.rules()
    caps = caps or probe_caps()
    image = image or build()
    accel = AccelProber(image, caps).resolve(settings.accel).accel
    own = workdir is None
    work = Path(tempfile.mkdtemp(prefix="vmio-membal-", dir="/var/tmp")) if workdir is None else workdir
    try:
        configs = vm_configs(settings, accel, work)
        with Fleet(configs, image, caps=caps, workdir=work / "vms", boot_timeout=boot_timeout) as fleet:
            guests = [BalloonedVM(vm) for vm in fleet.vms]
            run_id = start_run(
                store,
                settings.policy,
                settings.to_json(),
                accel=accel,
                qemu_version=caps.version_string,
                qemu_argv=[vm.argv for vm in fleet.vms],
            )
            control = LiveController(
                guests,
                rules,
                settings.policy,
                settings.params,
                psi_threshold=settings.psi_threshold,
                store=store,
                run_id=run_id,
            )
            return _drive(settings, control, fleet, guests, store, run_id, work, on_step, accel)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def _drive(
    s: LiveSettings,
    control: LiveController,
    fleet: Fleet,
    guests: Sequence[BalloonedVM],
    store: Store,
    run_id: int,
    work: Path,
    on_step: Callable[[Step], None] | None,
    accel: str,
) -> LiveOutcome:
    load: LoadRun | None = None
    try:
        control.start()
        clients = [
            (vm.fio_client, s.loads[i], vm.guest_devices()[0])
            for i, vm in enumerate(fleet.vms)
            if i < len(s.loads) and s.loads[i].size > 0
        ]
        # the jobs outlive the controller's window however slowly a busy host steps it (stopped below): a job
        # ending inside the window hands its read counts to its parent process there
        load = LoadRun(clients, 4 * s.duration + 60, work)
        control.run(s.duration, s.interval, on_step)
    except BaseException as exc:
        finish_run(store, run_id, "failed", control.summary(), error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if load is not None:
            load.stop()
        for g in guests:
            g.close()
    summary = control.summary()
    finish_run(store, run_id, "done", summary)
    return LiveOutcome(run_id, accel, summary, control.steps, [g.name for g in guests], control.hit_ratio())


def describe(settings: LiveSettings) -> str:
    r = settings.rules()
    if settings.domains:
        vms = ", ".join(f"{d} ({format_size(c)})" for d, c in zip(settings.domains, r.ceilings, strict=True))
        return (
            f"domains {vms} on {settings.uri} sharing {format_size(r.budget)}, policy {settings.policy}, "
            f"interval {settings.interval:g}s, max step {format_size(r.max_step)}, floors "
            f"{', '.join(format_size(f) for f in r.floors)}"
        )
    return (
        f"{settings.vms} VMs of {format_size(settings.memory)} sharing {format_size(r.budget)}, policy "
        f"{settings.policy}, interval {settings.interval:g}s, max step {format_size(r.max_step)}, "
        f"floors {', '.join(format_size(f) for f in r.floors)}"
    )
