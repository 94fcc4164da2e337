"""One QEMU VM running the vmio guest: launch, wait for the ready marker, control over QMP, tear down.

    with VM(VMConfig(disks=(Disk(Path("disk.img")),)), image, caps=caps) as vm:
        run(["fio", f"--client={vm.fio_client}", "job.fio"])

A guest that does not print ``VMIO-READY`` before its deadline, or whose QEMU exits, raises
``GuestBootError`` with the console tail; the VM is always torn down (QMP quit, SIGTERM, SIGKILL).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import Any

from vmio.errors import GuestBootError, ToolError, VmioError, tail_lines
from vmio.fio.relay import RunRelay
from vmio.guest.image import READY_MARKER, GuestImage
from vmio.qemu import lifecycle
from vmio.qemu.argv import Runtime, build_argv
from vmio.qemu.caps import QemuCaps
from vmio.qemu.qmp import QMPConnection
from vmio.qemu.vmconfig import Accel, VMConfig
from vmio.system.guard import PortGuard
from vmio.system.ports import free_port


class VMState(Enum):
    CREATED = "created"
    LAUNCHED = "launched"  # QEMU runs; the guest is booting
    READY = "ready"  # the guest printed the ready marker; fio --server listens
    FAILED = "failed"  # did not become ready; QEMU already stopped
    STOPPED = "stopped"


_ALLOWED = {
    VMState.CREATED: {VMState.LAUNCHED, VMState.STOPPED},
    VMState.LAUNCHED: {VMState.READY, VMState.FAILED, VMState.STOPPED},
    VMState.READY: {VMState.STOPPED},
    VMState.FAILED: {VMState.STOPPED},
    VMState.STOPPED: set(),
}


class VM:
    """A VM as a context manager; ``config.accel`` must be 'kvm' or 'tcg' (see ``accel.resolve_accel``)."""

    def __init__(
        self,
        config: VMConfig,
        image: GuestImage,
        *,
        caps: QemuCaps,
        workdir: Path | None = None,
        boot_timeout: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        host_port: int | None = None,
    ) -> None:
        if config.accel == Accel.AUTO:
            raise VmioError("VM needs accel 'kvm' or 'tcg'; resolve 'auto' with vmio.qemu.resolve_accel")
        self.config = config
        self.image = image
        self.caps = caps
        self.boot_timeout = boot_timeout
        self._clock = clock
        self._own_workdir = workdir is None
        workdir = workdir or Path(tempfile.mkdtemp(prefix=f"{config.name}-"))
        workdir.mkdir(parents=True, exist_ok=True)
        workdir.chmod(0o700)  # QMP, agent and console: vmio's user only
        self.runtime = Runtime(workdir, host_port or free_port())
        self.guard = PortGuard()  # the forwarded fio port and its relay's: vmio's user only
        self.relay: RunRelay | None = None  # fio's clients reach the guest's server through it (fio.relay)
        try:
            self.argv = build_argv(config, image, self.runtime, caps)
        except BaseException:
            if self._own_workdir:
                shutil.rmtree(workdir, ignore_errors=True)
            raise
        self.state = VMState.CREATED
        self._proc: subprocess.Popen[bytes] | None = None
        self._qmp: QMPConnection | None = None
        self._deadline = 0.0
        self.launched_at = 0.0
        self.ready_at = 0.0
        self._port_retries = 0
        self._quit_asked = False

    # -- facts the caller records -------------------------------------------------------------
    @property
    def accel(self) -> str:
        return str(self.config.accel)

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise VmioError(f"{self.config.name} has not been launched")
        return self._proc.pid

    @property
    def fio_client(self) -> str:
        """The ``--client=`` value for the host's fio: ``127.0.0.1,PORT``, the port of the relay that hands
        the guest's fio server each client's jobs with its RUN (``fio.relay``: no second lost waiting for
        it), or QEMU's forwarded port before launch."""
        if self.relay is not None:
            return self.relay.address
        return f"127.0.0.1,{self.runtime.host_port}"

    @property
    def boot_seconds(self) -> float:
        return self.ready_at - self.launched_at

    def guest_devices(self) -> list[str]:
        return self.config.guest_devices()

    # -- lifecycle ----------------------------------------------------------------------------
    def _to(self, new: VMState) -> None:
        if new not in _ALLOWED[self.state]:
            raise VmioError(f"{self.config.name}: cannot go from {self.state.value} to {new.value}")
        self.state = new

    def launch(self) -> None:
        """Start QEMU (does not wait). Call from a thread that outlives the VM (parent-death signal)."""
        self._to(VMState.LAUNCHED)
        self.launched_at = self._clock()
        self._deadline = self.launched_at + self.boot_timeout
        try:
            self.guard.add(self.runtime.host_port)
            self.relay = RunRelay(self.runtime.host_port, self.guard)
        except BaseException:
            self.state = VMState.FAILED
            raise
        try:
            self._proc = lifecycle.spawn(self.argv, self.runtime.qemu_log, self.caps.env)
        except OSError as exc:
            self.state = VMState.FAILED
            raise GuestBootError(f"cannot start QEMU: {exc.strerror}", argv=self.argv) from exc

    def poll_ready(self) -> bool:
        """One non-blocking check: True once ready; raise ``GuestBootError`` on exit or past the deadline."""
        if self.state == VMState.READY:
            return True
        if self.state != VMState.LAUNCHED or self._proc is None:
            raise VmioError(f"{self.config.name}: poll_ready in state {self.state.value}")
        if READY_MARKER in lifecycle.read_tail(self.runtime.console, 1 << 20):
            self.ready_at = self._clock()
            self._connect_qmp()
            self._to(VMState.READY)
            return True
        code = self._proc.poll()
        if code is not None and self._port_lost():
            return False
        if code is not None:
            self._fail(f"QEMU for {self.config.name} exited with code {code} before the guest was ready")
        if self._clock() > self._deadline:
            self._fail(
                f"guest {self.config.name} did not print {READY_MARKER} within {self.boot_timeout:g} s "
                f"(accel {self.accel}) and was killed"
            )
        return False

    def _port_lost(self) -> bool:
        """QEMU exited because another process took the forwarded port first: relaunch on a new one."""
        qemu_said = lifecycle.read_tail(self.runtime.qemu_log)
        if self._port_retries >= 2 or "host forwarding rule" not in qemu_said:
            return False
        self._port_retries += 1
        self.guard.remove(self.runtime.host_port)
        self.runtime = Runtime(self.runtime.workdir, free_port())
        self.guard.add(self.runtime.host_port)
        if self.relay is not None:
            self.relay.upstream = self.runtime.host_port
        self.argv = build_argv(self.config, self.image, self.runtime, self.caps)
        self.runtime.console.unlink(missing_ok=True)
        self._proc = lifecycle.spawn(self.argv, self.runtime.qemu_log, self.caps.env)
        return True

    def wait_ready(self, poll: float = 0.05) -> None:
        while not self.poll_ready():
            time.sleep(poll)

    def start(self) -> VM:
        self.launch()
        self.wait_ready()
        return self

    def _connect_qmp(self) -> None:
        qmp = QMPConnection(self.runtime.qmp, name=self.config.name)
        try:
            qmp.connect()
        except ToolError as exc:
            qmp.close()
            self._fail(f"guest {self.config.name} is ready but QMP does not answer: {exc}")
        self._qmp = qmp

    def _fail(self, message: str) -> None:
        self._to(VMState.FAILED)
        self._stop_process()
        code = self._proc.returncode if self._proc else None
        raise GuestBootError(message, argv=self.argv, returncode=code, output=self.failure_output())

    def failure_output(self) -> str:
        """Console tail, then QEMU's own messages; what a failed run records."""
        console = tail_lines(lifecycle.read_tail(self.runtime.console), 40)
        qemu = tail_lines(lifecycle.read_tail(self.runtime.qemu_log), 10)
        return console + (f"\n[qemu]\n{qemu}" if qemu else "")

    def exited(self) -> str | None:
        """How this VM's QEMU ended, if it has (``None`` while it runs or before launch)."""
        code = self._proc.poll() if self._proc is not None else None
        if code is None:
            return None
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return f"QEMU for {self.config.name} (pid {self._proc.pid if self._proc else '?'}) exited ({how})"

    def console_tail(self, lines: int = 30) -> str:
        return tail_lines(lifecycle.read_tail(self.runtime.console), lines)

    def ask_quit(self) -> None:
        """Ask QEMU to quit (QMP) without waiting for it; ``shutdown`` then waits. A fleet asks all its VMs
        first, so they end together rather than one after another."""
        if self._qmp is not None and self._proc is not None and self._proc.poll() is None:
            self._qmp_quit()
            self._quit_asked = True

    def _stop_process(self) -> None:
        if self._proc is not None:
            quit_fn = self._qmp_quit if self._qmp is not None else None
            if quit_fn is not None and self._quit_asked:
                quit_fn = _asked_already  # only the wait for it left
            lifecycle.stop(self._proc, quit_fn)
        if self._qmp is not None:
            self._qmp.close()
            self._qmp = None

    def _qmp_quit(self) -> None:
        # QEMU may close the socket before it answers; the process wait decides.
        with contextlib.suppress(ToolError):
            self.qmp("quit")

    def shutdown(self) -> None:
        """Tear down whatever state the VM is in (idempotent)."""
        if self.state != VMState.STOPPED:
            self._stop_process()
            self._to(VMState.STOPPED)
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        self.guard.close()
        if self._own_workdir:
            shutil.rmtree(self.runtime.workdir, ignore_errors=True)

    def __enter__(self) -> VM:
        try:
            return self.start()
        except BaseException:
            self.shutdown()
            raise

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    # -- QMP ----------------------------------------------------------------------------------
    def qmp(self, command: str, arguments: dict[str, object] | None = None) -> Any:
        if self._qmp is None:
            raise VmioError(f"{self.config.name}: no QMP session (state {self.state.value})")
        return self._qmp.execute(command, arguments)

    def query_status(self) -> str:
        """QEMU's run state: 'running', 'paused', ..."""
        return str(self.qmp("query-status")["status"])

    def balloon(self, target_bytes: int) -> None:
        """Ask the guest's balloon driver to bring its memory to ``target_bytes``."""
        self.qmp("balloon", {"value": int(target_bytes)})

    def query_balloon(self) -> int:
        """The guest's current memory (bytes) as the balloon reports it."""
        return int(self.qmp("query-balloon")["actual"])


def _asked_already() -> None:
    """QMP quit sent already (``VM.ask_quit``)."""


def with_accel(config: VMConfig, accel: str) -> VMConfig:
    return replace(config, accel=Accel(accel))
