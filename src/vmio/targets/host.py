"""The bare host as a target: a file vmio creates and fully writes, or a block device; fio runs here."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from vmio.errors import InputError, UnsafeTargetError
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe
from vmio.spec import HostTarget, Target, Workload
from vmio.system import device_facts, files
from vmio.system.blockdev import Loop, device_chain, loop_device, reported_device, size_of
from vmio.system.safety import check_target_write, hold, is_block_device, named
from vmio.targets import placement
from vmio.targets.base import Endpoint, Env, Facts, Notes, nothing_to_watch
from vmio.targets.kind import Checks, check_paths
from vmio.targets.traits import HostTraits

CHUNK = 4 << 20


def prepare_file(path: str | Path, size: int, destroy: Sequence[str] = ()) -> bool:
    """Make ``path`` a file of ``size`` bytes whose every block is written (no holes, no unwritten
    extents, so reads reach the device), marked as vmio's (``files.mark``). Returns True when it had to
    write. A file vmio made before, of the right size or larger, is kept as it is; any other existing file
    is data: it is refused (``UnsafeTargetError``) unless ``destroy`` names it. The file is written under a
    private temporary name beside ``path`` and renamed into place."""
    path = Path(path)
    ours = files.is_marked(path)
    try:
        if path.is_file() and path.stat().st_size >= size:
            return False  # writes to it were allowed or refused before (``safety.check_target_write``)
        if os.path.lexists(path) and not ours and not named(str(path), destroy):
            raise UnsafeTargetError(
                f"refusing to replace {str(path)!r}: it is a file vmio did not create. "
                f"If its data may be destroyed, pass --destroy-data {path}"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        pattern = os.urandom(CHUNK)
        with files.temporary_beside(path) as (fd, tmp):
            written = 0
            while written < size:
                n = min(CHUNK, size - written)
                written += os.write(fd, pattern[:n])
            os.fsync(fd)
            os.fchmod(fd, 0o644)
            files.mark(fd)
            os.replace(tmp, path)
    except OSError as exc:
        raise InputError(
            f"cannot create the target file {str(path)!r} of {size} bytes: {exc.strerror}"
        ) from exc
    return True


def prepare(target: HostTarget, destroy: Sequence[str] = ()) -> int | None:
    """Ready a host target; return the size fio should use (None: the whole block device)."""
    if is_block_device(target.path):
        return target.size
    if target.size is None:
        if Path(target.path).is_file():
            return Path(target.path).stat().st_size
        raise InputError(
            f'target {target.name!r}: {target.path!r} does not exist; give its size (e.g. size = "1G") '
            "so vmio can create it"
        )
    prepare_file(target.path, target.size, destroy)
    return target.size


class HostRig:
    """A host target made ready: its file written (with ``loop = true`` attached as a direct-I/O loop
    device, detached when ``stack`` closes), the devices under it sampled with the host's CPU."""

    fio_env = None

    def __init__(self, target: HostTarget, env: Env, stack: contextlib.ExitStack) -> None:
        self.size = prepare(target, env.destroy)
        self.loop: Loop | None = None
        if target.loop:
            self.loop = stack.enter_context(loop_device(target.path, env.runner, env.sys_root))
            target = dataclasses.replace(target, path=self.loop.device)
        held = stack.enter_context(hold(target.path))  # resolved and opened once; fio opens this object
        if env.writes:
            check_target_write(target.path, env.destroy, env.runner, env.sys_root, env.proc_root, held.here)
        self.opened = {"path": target.path, "fio_filename": held.fio_path}
        self.env = env
        chain = device_chain(held.here, env.sys_root, env.proc_root)
        self.device = reported_device(held.here, chain)
        self.target = dataclasses.replace(target, path=held.fio_path)
        self.probes: list[Probe] = [DiskProbe(d, env.proc_root) for d in chain]
        self.probes.append(CpuProbe(env.proc_root))

    def endpoints(self, workload: Workload) -> list[Endpoint]:
        eps = placement.endpoints(self.target, workload, size=self.size)
        opened = str(self.opened["path"])
        return [
            dataclasses.replace(ep, place=dataclasses.replace(ep.place, opened_from=opened)) for ep in eps
        ]

    def facts(self) -> Facts:
        # the storage under the object fio opens (the held descriptor: its link names the file as it is now,
        # whatever another user did to the name since), shown under the path as the user named it
        held = device_facts.of_path(str(self.opened["fio_filename"]), self.env.sys_root, self.env.proc_root)
        storage = [{**held, "path": self.opened["path"]}]
        host = loop_facts([self.loop] if self.loop else [])
        return Facts(device=self.device, host={**host, "target_opened": self.opened, "storage": storage})

    def watch(self, campaign: str, point_key: str) -> contextlib.AbstractContextManager[Notes]:
        return nothing_to_watch()


def loop_facts(loops: list[Loop]) -> dict[str, object]:
    """What a run records of the loop devices vmio attached for its target (none: nothing)."""
    if not loops:
        return {}
    return {
        "loop_devices": [
            {"device": lp.device, "backing": lp.backing, "direct_io": lp.direct_io} for lp in loops
        ]
    }


class HostKind(HostTraits):
    """``kind = "host"``: a file (created to its size) or block device on this host, fio run here."""

    def preflight(self, target: Target, checks: Checks) -> None:
        t = _host(target)
        if t.size is None and not Path(t.path).exists() and t.path not in checks.made:
            raise InputError(  # before any point starts (and any progress line is printed)
                f'target {t.name!r}: {t.path!r} does not exist; give its size (e.g. size = "1G") '
                "so vmio can create it"
            )
        check_paths([t.path], checks)

    @contextlib.contextmanager
    def open(self, target: Target, env: Env) -> Iterator[HostRig]:
        with contextlib.ExitStack() as stack:
            yield HostRig(_host(target), env, stack)

    def size(self, target: Target) -> int | None:
        t = _host(target)
        return t.size if t.size is not None else size_of(t.path)

    def label(self, target: Target) -> str:
        return ""


def _host(target: Target) -> HostTarget:
    assert isinstance(target, HostTarget), target  # found by its kind: the spec built it as this class
    return target


KIND = HostKind()
