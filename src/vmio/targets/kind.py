"""What every target kind answers for itself (``Kind``), found by the spec's ``kind`` (``targets.kind_of``).

A kind is one module under ``targets/`` (``host``, ``qemu``, ``remote``, ``rbd``, ``libvirt``) holding its
rig and a ``KIND`` object: its preflight and safety rules (judged before any point runs), how it opens and
closes (``open``: a context that yields its ``Rig``, whose ``facts`` are what a run records), the bytes one
measured process can address, its label in the dry run, whether its points run in VMs and the QEMU
configuration the report and the advice read. Callers ask the kind instead of testing a spec's class.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from vmio.spec import QemuTarget, Target
from vmio.system import rbdimage
from vmio.system.safety import check_target_write
from vmio.targets.base import Env, Rig


@dataclass(frozen=True)
class Checks:
    """What a kind's preflight judges a target with: whether any workload writes, the ``--destroy-data``
    names, and the host's seams (``env``: runner, ``/sys`` and ``/proc`` roots)."""

    writes: bool
    destroy: tuple[str, ...]
    env: Env
    made: frozenset[str] = frozenset()  # files a target of the campaign creates (given a size) before it runs


class Kind(Protocol):
    """One target kind's answers (a new kind: a module with its rig and a ``KIND``, listed in ``KINDS``)."""

    @property
    def name(self) -> str: ...  # the spec's ``kind``

    @property
    def vm(self) -> bool: ...  # its points run inside VMs (QEMU or libvirt guests)

    @property
    def bare(self) -> bool: ...  # its I/O runs on this host's own kernel: the bare baseline VMs compare to

    def preflight(self, target: Target, checks: Checks) -> None:
        """Refuse the campaign before any I/O (``UnsafeTargetError``, ``InputError``) if this target cannot
        run or a write would touch data."""

    def open(self, target: Target, env: Env) -> AbstractContextManager[Rig]:
        """Start the target for as long as the block lasts (VMs: boot them); tear it down after."""
        ...

    def size(self, target: Target) -> int | None:
        """The bytes one measured process can address, where the spec or the host tells (None: unknown)."""

    def qemu(self, target: Target) -> QemuTarget | None:
        """The QEMU configuration its VMs run (the report's VM figures, the advice's VM rules); None when
        vmio does not start its VMs' QEMU."""

    def label(self, target: Target) -> str:
        """What the dry run says of the target beyond its kind and where its I/O goes ('' for nothing)."""


def check_paths(paths: Sequence[str], checks: Checks) -> None:
    """The host paths a target's fio or QEMU writes, judged by the write rules (RBD images are judged by
    their own kind's rules: ``rbd:`` names no host path)."""
    if not checks.writes:
        return
    for path in paths:
        if not path.startswith(rbdimage.PREFIX):
            env = checks.env
            check_target_write(path, checks.destroy, env.runner, env.sys_root, env.proc_root)
