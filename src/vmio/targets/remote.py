"""Hosts running ``fio --server``: one fio client here drives them all, so they start together.

vmio cannot see a remote host's /proc, so only this host's CPU is sampled; a remote path cannot be probed
for data either, so every write to a remote target needs ``--destroy-data`` naming its path as the spec
writes it (``check_remote_writes``).
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator, Sequence

from vmio.errors import ToolError, UnsafeTargetError
from vmio.fio import run as fiorun
from vmio.metrics.sampler import CpuProbe, Probe
from vmio.spec import RemoteTarget, Target, Workload
from vmio.system.guard import PortGuard
from vmio.system.paths import remote_normal
from vmio.system.ports import free_port, wait_for_port
from vmio.targets import placement
from vmio.targets.base import Endpoint, Env, Facts, Notes, nothing_to_watch
from vmio.targets.kind import Checks
from vmio.targets.traits import RemoteTraits


def check_remote_writes(target: RemoteTarget, destroy: Sequence[str]) -> None:
    """Refuse a write to any path on a fio server's host unless ``--destroy-data`` names it exactly as the
    spec writes it. vmio cannot see the remote host's files: a device, a data file, ``/proc/self/root/...``
    or a path relative to the server's folder may each be somebody's data, and no spelling of it tells."""
    named = set(destroy)
    for host, path in zip(target.hosts, target.paths, strict=True):
        if path not in named:
            normal = remote_normal(path)
            shown = (
                repr(path) if path == normal else f"{path!r} (that is {normal!r} if no link is on the way)"
            )
            raise UnsafeTargetError(
                f"refusing to write to {shown} on {host}: vmio cannot check a remote device or file for data, "
                f"so every write to a remote target needs its path named as the spec writes it. If its data "
                f"may be destroyed, add --destroy-data {shlex.quote(path)}"
            )


class RemoteRig:
    """Remote fio servers: only this host's CPU can be sampled."""

    fio_env = None

    def __init__(self, target: RemoteTarget, env: Env) -> None:
        self.target = target
        self.probes: list[Probe] = [CpuProbe(env.proc_root)]

    def endpoints(self, workload: Workload) -> list[Endpoint]:
        return placement.endpoints(self.target, workload)

    def facts(self) -> Facts:
        """Each remote path with ``fio_disks`` to be filled from the disks fio names there (measure)."""
        storage = [
            {"path": path, "host": host, "fio_disks": None}
            for host, path in zip(self.target.hosts, self.target.paths, strict=True)
        ]
        return Facts(host={"storage": storage})

    def watch(self, campaign: str, point_key: str) -> contextlib.AbstractContextManager[Notes]:
        return nothing_to_watch()


class LocalFioServer:
    """``fio --server`` on 127.0.0.1 and a free port, for tests and single-host demos of remote targets."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.guard = PortGuard()  # vmio's user only, as a VM's forwarded port
        self.guard.add(self.port)
        try:
            self.proc = fiorun.serve("127.0.0.1", self.port)
        except BaseException:
            self.guard.close()
            raise
        if not wait_for_port("127.0.0.1", self.port, 10):
            self.proc.stop()
            self.guard.close()
            raise ToolError(f"fio --server did not listen on 127.0.0.1:{self.port} within 10 s")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> LocalFioServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.stop()
        self.guard.close()


class RemoteKind(RemoteTraits):
    """``kind = "remote"``: hosts running ``fio --server``; vmio cannot see their files."""

    def preflight(self, target: Target, checks: Checks) -> None:
        if checks.writes:
            check_remote_writes(_remote(target), checks.destroy)

    @contextlib.contextmanager
    def open(self, target: Target, env: Env) -> Iterator[RemoteRig]:
        yield RemoteRig(_remote(target), env)

    def size(self, target: Target) -> int | None:
        return _remote(target).size  # a fio server's device or file: only the spec can tell

    def label(self, target: Target) -> str:
        return ""


def _remote(target: Target) -> RemoteTarget:
    assert isinstance(target, RemoteTarget), target  # found by its kind: the spec built it as this class
    return target


KIND = RemoteKind()
