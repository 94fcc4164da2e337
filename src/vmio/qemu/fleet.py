"""Several VMs booted together and torn down together; each gets its own fio server port.

with Fleet([VMConfig(index=i, disks=...) for i in range(2)], image, caps=caps) as fleet:
    run(["fio", *fleet.fio_client_args(["job.fio"])])   # one fio client drives every VM
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from vmio.errors import InputError
from vmio.guest.image import GuestImage
from vmio.qemu.caps import QemuCaps
from vmio.qemu.vm import VM
from vmio.qemu.vmconfig import Bus, VMConfig
from vmio.system.ports import free_port


def check_disjoint(configs: Sequence[VMConfig]) -> None:
    """Refuse two writable disks that overlap on the same backing path (ranges are [offset, offset+size))."""
    seen: dict[str, list[tuple[int, float, str]]] = {}
    for config in configs:
        if config.bus == Bus.VFIO:
            continue
        for disk in config.disks:
            end = float("inf") if disk.size is None else disk.offset + disk.size
            key = str(disk.path.resolve())
            for start, other_end, owner in seen.get(key, []):
                if disk.offset < other_end and start < end and not disk.read_only:
                    raise InputError(
                        f"{config.name} and {owner} both use {key!r} over overlapping ranges; "
                        "give each VM its own file or its own offset/size range"
                    )
            seen.setdefault(key, []).append((disk.offset, end, config.name))


class Fleet:
    """VMs launched from the calling thread, waited for together, always all torn down."""

    def __init__(
        self,
        configs: Sequence[VMConfig],
        image: GuestImage,
        *,
        caps: QemuCaps,
        workdir: Path | None = None,
        boot_timeout: float = 90.0,
    ) -> None:
        names = [c.name for c in configs]
        if len(set(names)) != len(names):
            raise InputError(f"VM indexes must differ; got names {names!r}")
        check_disjoint(configs)
        self.vms: list[VM] = []
        try:
            for c in configs:
                self.vms.append(
                    VM(
                        c,
                        image,
                        caps=caps,
                        boot_timeout=boot_timeout,
                        host_port=self._new_port(),
                        workdir=None if workdir is None else workdir / c.name,
                    )
                )
        except BaseException:
            self.shutdown()
            raise

    def _new_port(self) -> int:
        """A free port no VM of this fleet has taken yet."""
        taken = {vm.runtime.host_port for vm in self.vms}
        port = free_port()
        while port in taken:
            port = free_port()
        return port

    def start(self, poll: float = 0.05) -> Fleet:
        """Launch every VM, then wait until all are ready; on any failure tear all down and re-raise."""
        try:
            for vm in self.vms:
                vm.launch()
            pending = list(self.vms)
            while pending:
                pending = [vm for vm in pending if not vm.poll_ready()]
                if pending:
                    time.sleep(poll)
        except BaseException:
            self.shutdown()
            raise
        return self

    def shutdown(self) -> None:
        """Every VM asked to quit, then each waited for and torn down (they end together)."""
        for vm in self.vms:
            vm.ask_quit()
        for vm in self.vms:
            vm.shutdown()

    def fio_client_args(self, job_files: Sequence[str | Path]) -> list[str]:
        """``--client=127.0.0.1,PORT JOB...`` for each VM, for one fio client that starts them together."""
        args: list[str] = []
        for vm in self.vms:
            args += [f"--client={vm.fio_client}", *map(str, job_files)]
        return args

    def __enter__(self) -> Fleet:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()
