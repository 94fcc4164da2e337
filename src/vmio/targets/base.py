"""What every target kind provides once started (a ``Rig``), and the host settings it is started with.

A rig says where its fio endpoints are (``endpoints``), which device its figures are reported for, what is
sampled beside fio (``probes``), the facts a run records about it (``facts``) and, through ``watch``, what
it noticed during one point (QEMU: the guest kernel's disk warnings, the VMs' request traces). The campaign
measures; a rig only describes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from vmio.fio import run as fiorun
from vmio.fio.jobfile import Placement
from vmio.fio.output import FioOutput
from vmio.guest.image import GuestImage
from vmio.metrics.guesttrace import Tracer
from vmio.metrics.sampler import Probe
from vmio.qemu.builds import QemuBuild
from vmio.qemu.caps import QemuCaps
from vmio.spec import Workload
from vmio.system.process import Runner


@dataclass(frozen=True)
class Env:
    """The host's seams and settings a target is started with."""

    runner: Runner = field(default_factory=Runner)
    proc_root: str = "/proc"
    sys_root: str = "/sys"
    boot_timeout: float = 90.0
    trace_root: Path | None = None  # where VM targets with trace = true keep each point's request traces
    destroy: tuple[str, ...] = ()  # paths named with --destroy-data: existing files vmio may replace
    writes: bool = True  # a workload writes: what a target opens is judged by the write rules again
    layers: bool = False  # the campaign traces its layers (docs/layers.md): VMs start with QEMU's log
    # each QEMU target's build, resolved once per run (by target name; ``targets.qemu.resolved_build``)
    builds: dict[str, QemuBuild] = field(default_factory=dict, compare=False)
    # what every VM target of a run shares, found once (``targets.qemu.resolved_caps``/``resolved_image``):
    # each build's capabilities (by its binary) and the guest image; finding them runs QEMU seven times and
    # apt-cache, 1-5 s a target on a loaded host, between two targets' points
    caps: dict[str, QemuCaps] = field(default_factory=dict, compare=False)
    images: dict[str, GuestImage] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Endpoint:
    """One fio process of a point: its fio server (``host:port``; None: fio runs here) and its I/O."""

    server: str | None
    place: Placement


@dataclass
class Facts:
    """What a run records about the target it ran on (VM targets fill the QEMU fields)."""

    device: str | None = None
    accel: str | None = None
    qemu_version: str | None = None
    qemu_argv: list[list[str]] | None = None
    host: dict[str, object] = field(default_factory=dict)  # merged into the run's host facts


@dataclass
class Notes:
    """What a rig noticed during one point: facts for the run's host record and lines for its log."""

    host: dict[str, object] = field(default_factory=dict)
    log: str = ""


class Rig(Protocol):
    @property
    def probes(self) -> Sequence[Probe]: ...

    @property
    def fio_env(self) -> Mapping[str, str] | None: ...  # environment for fio (rbd: CEPH_CONF)

    def endpoints(self, workload: Workload) -> list[Endpoint]: ...

    def facts(self) -> Facts: ...

    def watch(self, campaign: str, point_key: str) -> contextlib.AbstractContextManager[Notes]: ...


@runtime_checkable
class RunsFio(Protocol):
    """A rig that runs fio itself (libvirt: inside guests through their agent) instead of fio's client."""

    def run_fio(
        self, files: Sequence[fiorun.Endpoint], *, timeout: float, cwd: Path, read_pct: int | None = None
    ) -> FioOutput: ...


@runtime_checkable
class TracesQemu(Protocol):
    """A rig whose VMs vmio started for a campaign with layers (docs/layers.md): QEMU's request events are
    switched on for a point and off after it; ``qemu_logs`` are the logs they go to, one per measured VM, or
    the sentence saying why QEMU's layer is not traced."""

    def qemu_logs(self) -> list[Path] | str: ...

    def qemu_events(self, enable: bool) -> None: ...


@runtime_checkable
class TracesGuest(Protocol):
    """A rig whose guests run vmio's tracer (docs/layers.md, ``guest_block``): ``guest_tracers`` are each
    measured VM's tracer with the name of its disk in the guest (``vda``), or the sentence saying why the
    guests' block layer is not traced."""

    def guest_tracers(self) -> list[tuple[Tracer, str]] | str: ...


@contextlib.contextmanager
def nothing_to_watch() -> Iterator[Notes]:
    """``watch`` for rigs that notice nothing beyond fio and the samplers."""
    yield Notes()
