"""Host side of the guest's tracer (``vmio-trace``, the guest_block layer: docs/layers.md).

A VM started with ``VMConfig(trace_port=True)`` runs ``vmio-trace`` in the guest on the virtio-serial port
``vmio.trace``; QEMU exposes it as the unix socket ``vm.runtime.trace`` (in the VM's 0700 folder). The
host writes one command a line; the guest answers with its output and ``--- vmio-trace end RC``.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from vmio.errors import ToolError

_END = "--- vmio-trace end "
TIMEOUT_S = 30.0  # a command under TCG on a loaded host (reading a large table) can take seconds


class GuestTracer:
    """One VM's tracer, reached through its socket (connected on first use, kept until ``close``)."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name
        self._sock: socket.socket | None = None
        self._buffer = b""

    def command(self, line: str, timeout: float = TIMEOUT_S) -> tuple[int, str]:
        """Send ``line``; the guest's exit status and output. ``ToolError`` when no answer comes."""
        deadline = time.monotonic() + timeout
        try:
            sock = self._connect(timeout)
            sock.sendall(line.encode() + b"\n")
            while True:
                text = self._buffer.decode(errors="replace")
                at = text.find(_END)
                if at >= 0 and "\n" in text[at:]:
                    end = text.index("\n", at)
                    self._buffer = text[end + 1 :].encode()
                    return int(text[at + len(_END) : end].strip() or 1), text[:at].rstrip("\n")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                sock.settimeout(left)
                chunk = sock.recv(65536)
                if not chunk:
                    raise ToolError(f"{self.name}: the guest's tracer closed its port")
                self._buffer += chunk
        except OSError as exc:  # TimeoutError is an OSError
            self.close()
            what = f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError) else repr(exc)
            raise ToolError(
                f"{self.name}: the guest's tracer did not answer {line.split()[0]!r}: {what}"
            ) from exc

    def connect(self, timeout: float = TIMEOUT_S) -> None:
        """Connect now (``ToolError`` if the socket does not answer): while the host is connected the guest's
        tracer waits in a read, instead of polling a port that reads as ended."""
        try:
            self._connect(timeout)
        except OSError as exc:
            raise ToolError(f"{self.name}: the guest's tracer's socket did not answer: {exc!r}") from exc

    def _connect(self, timeout: float) -> socket.socket:
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(str(self.path))
            except OSError:
                sock.close()
                raise
            self._sock, self._buffer = sock, b""
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
