"""Loopback ports for the servers vmio starts (fio servers, QEMU's forwarded port, Ceph's monitor)."""

from __future__ import annotations

import socket
import time

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(host: str, port: int, deadline_s: float) -> bool:
    """True once something accepts connections on ``host:port``; False after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False
