"""A small synchronous QMP client over PyPI ``qemu.qmp``, with its own event loop and a timeout per call; calls
from several threads take turns."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from qemu.qmp import QMPClient, QMPError

from vmio.errors import ToolError

T = TypeVar("T")


class QMPConnection:
    """One QMP session on a unix socket. ``execute`` returns the command's ``return`` value."""

    def __init__(self, path: Path, *, name: str = "vmio", timeout: float = 10.0) -> None:
        self.path = path
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()  # one call at a time on the loop, from whichever thread calls
        self._client: QMPClient | None = None
        self._name = name

    def connect(self) -> None:
        async def go() -> QMPClient:
            client = QMPClient(self._name)
            await client.connect(str(self.path))
            return client

        self._client = self._run(go(), f"connect to QMP at {str(self.path)!r}")

    def execute(self, command: str, arguments: dict[str, object] | None = None) -> Any:
        if self._client is None:
            raise ToolError(f"QMP {command!r}: not connected to {str(self.path)!r}")
        return self._run(self._client.execute(command, arguments), f"QMP {command!r}")

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            if self._client is not None:
                self._run(self._client.disconnect(), "QMP disconnect")
        except ToolError:
            pass  # the peer is gone already; nothing left to close
        finally:
            self._client = None
            self._loop.close()

    def _run(self, awaitable: Awaitable[T], what: str) -> T:
        async def bounded() -> T:
            return await asyncio.wait_for(awaitable, self.timeout)

        try:
            with self._lock:  # a point's log watcher (campaign.layers) calls from its own thread
                return self._loop.run_until_complete(bounded())
        except (TimeoutError, QMPError, OSError, EOFError) as exc:
            raise ToolError(f"{what} failed: {exc!r}") from exc
