"""Host side of the guest agent: records of the guest's /proc/vmstat and /proc/meminfo.

A VM started with ``VMConfig(agent_interval=SECONDS)`` runs ``vmio-agent`` in the guest, which writes a
record every interval to the virtio-serial port ``vmio.agent``; QEMU exposes it as the unix socket
``vm.runtime.agent``. Records are framed by ``--- vmio <uptime>`` and ``--- end``.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import ToolError

_HEADER = "--- vmio "
_END = "--- end"


@dataclass(frozen=True)
class AgentRecord:
    """One sample: guest uptime (s), /proc/vmstat counters, /proc/meminfo values in bytes."""

    uptime: float
    vmstat: dict[str, int]
    meminfo: dict[str, int]


def parse_record(lines: list[str]) -> AgentRecord:
    """A record from its lines, header first, without the end marker."""
    uptime = float(lines[0][len(_HEADER) :].split()[0])
    vmstat: dict[str, int] = {}
    meminfo: dict[str, int] = {}
    for line in lines[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(":"):
            scale = 1024 if parts[-1] == "kB" else 1
            meminfo[parts[0][:-1]] = int(parts[1]) * scale
        elif len(parts) == 2 and parts[1].isdigit():
            vmstat[parts[0]] = int(parts[1])
    return AgentRecord(uptime, vmstat, meminfo)


def split_records(text: str) -> tuple[list[AgentRecord], str]:
    """Complete records in ``text`` (partial ones before the first header are dropped) and the rest."""
    records = []
    current: list[str] | None = None
    lines = text.split("\n")
    rest = lines.pop()  # an unfinished last line
    consumed = 0
    for i, line in enumerate(lines):
        if line.startswith(_HEADER):
            current = [line]
        elif line == _END and current is not None:
            records.append(parse_record(current))
            current = None
            consumed = i + 1
        elif current is not None:
            current.append(line)
    leftover = "\n".join(lines[consumed:] + [rest])
    return records, leftover


def read_agent_records(path: Path, count: int = 1, timeout: float = 10.0) -> list[AgentRecord]:
    """Connect to a VM's agent socket and return the next ``count`` complete records."""
    deadline = time.monotonic() + timeout
    records: list[AgentRecord] = []
    buffer = ""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
            while len(records) < count:
                if time.monotonic() > deadline:
                    raise TimeoutError
                chunk = sock.recv(65536)
                if not chunk:
                    raise ToolError(f"agent socket {str(path)!r} closed after {len(records)} records")
                found, buffer = split_records(buffer + chunk.decode(errors="replace"))
                records += found
        except OSError as exc:  # TimeoutError is an OSError
            message = f"no {count} agent records from {str(path)!r} within {timeout:g} s: {exc!r}"
            raise ToolError(message) from exc
    return records[:count]
