"""A ballooned guest as the live controller drives it: its balloon over QMP and its agent's records.

The agent writes to a virtio-serial port; while no host client listens its writes block, so a record read
by connecting afresh can be old. ``AgentStream`` therefore stays connected and keeps every record as it
arrives; ``drain`` returns what came since the last call without waiting.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from vmio.errors import ToolError
from vmio.qemu import VM
from vmio.qemu.agent import AgentRecord, split_records


class AgentStream:
    """A connection to one VM's agent socket that collects records without blocking."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._buffer = ""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(str(path))
        except OSError as exc:
            self._sock.close()
            raise ToolError(f"cannot connect to the agent socket {str(path)!r}: {exc.strerror}") from exc
        self._sock.setblocking(False)

    def drain(self) -> list[AgentRecord]:
        """The complete records received since the last call (possibly none)."""
        chunks = []
        while True:
            try:
                chunk = self._sock.recv(1 << 16)
            except BlockingIOError:
                break
            except OSError as exc:
                raise ToolError(f"agent socket {str(self.path)!r} failed: {exc!r}") from exc
            if not chunk:
                raise ToolError(f"agent socket {str(self.path)!r} was closed by QEMU")
            chunks.append(chunk.decode(errors="replace"))
        records, self._buffer = split_records(self._buffer + "".join(chunks))
        return records

    def wait(self, count: int, timeout: float, poll: float = 0.05) -> list[AgentRecord]:
        """At least ``count`` new records, waiting up to ``timeout`` seconds."""
        deadline = self._clock() + timeout
        got: list[AgentRecord] = []
        while len(got) < count:
            got += self.drain()
            if len(got) >= count:
                break
            if self._clock() > deadline:
                raise ToolError(f"no {count} agent records from {str(self.path)!r} within {timeout:g} s")
            time.sleep(poll)
        return got

    def close(self) -> None:
        self._sock.close()


class Guest(Protocol):
    """What the controller needs of a VM."""

    name: str
    memory: int  # boot memory: the balloon's ceiling

    def set_target(self, target: int) -> None: ...

    def actual(self) -> int: ...

    def records(self) -> list[AgentRecord]: ...


class BalloonedVM:
    """A running :class:`~vmio.qemu.VM` started with ``agent_interval`` and a balloon."""

    def __init__(self, vm: VM) -> None:
        if vm.config.agent_interval is None or not vm.config.balloon:
            raise ToolError(f"{vm.config.name} needs a balloon and the agent (VMConfig.agent_interval)")
        self.vm = vm
        self.name = vm.config.name
        self.memory = vm.config.memory
        self.stream = AgentStream(vm.runtime.agent)

    def set_target(self, target: int) -> None:
        self.vm.balloon(target)

    def actual(self) -> int:
        return self.vm.query_balloon()

    def records(self) -> list[AgentRecord]:
        return self.stream.drain()

    def close(self) -> None:
        self.stream.close()
