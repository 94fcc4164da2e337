"""Host side of the guest agent: records of the guest's /proc/vmstat and /proc/meminfo.

A VM started with ``VMConfig(agent_interval=SECONDS)`` runs ``vmio-agent`` in the guest, which writes a
record every interval to the virtio-serial port ``vmio.agent``; QEMU exposes it as the unix socket
``vm.runtime.agent``. Records are framed by ``--- vmio <uptime>`` and ``--- end``.

Each record also carries the read counters of the guest's processes (by default every process but the
agent itself; ``vmio.hits=fio,NAME`` names only some), one line each: ``pio PID COMM RCHAR READ_BYTES`` from ``/proc/PID/io``: bytes read through
read syscalls and bytes fetched from storage. Their difference is what the page cache served.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import ToolError

_HEADER = "--- vmio "
_END = "--- end"


_PIO = "pio"


@dataclass(frozen=True)
class ProcIO:
    """One guest process's read counters (``/proc/PID/io``), in bytes since it started."""

    pid: int
    comm: str
    rchar: int  # read through read syscalls (read, pread, readv ...): page-cache hits and misses
    read_bytes: int  # fetched from storage on its behalf: misses (and readahead)


@dataclass(frozen=True)
class AgentRecord:
    """One sample: guest uptime (s), /proc/vmstat counters, /proc/meminfo values in bytes, and the read
    counters of the workload's processes."""

    uptime: float
    vmstat: dict[str, int]
    meminfo: dict[str, int]
    procs: tuple[ProcIO, ...] = ()

    @property
    def read_chars(self) -> int:
        """Bytes the workload's processes read through syscalls (reaped children included)."""
        return sum(p.rchar for p in self.procs)

    @property
    def read_bytes(self) -> int:
        """Bytes fetched from storage for the workload's processes."""
        return sum(p.read_bytes for p in self.procs)


def parse_pio(line: str) -> ProcIO | None:
    """``pio PID COMM RCHAR READ_BYTES`` (COMM may hold spaces); None when the line is not one."""
    parts = line.split()
    if len(parts) < 5 or parts[0] != _PIO:
        return None
    pid, rchar, read_bytes = parts[1], parts[-2], parts[-1]
    if not (pid.isdigit() and rchar.isdigit() and read_bytes.isdigit()):
        return None
    comm = line.split(None, 2)[2].rsplit(None, 2)[0]
    return ProcIO(int(pid), comm, int(rchar), int(read_bytes))


def parse_record(lines: list[str]) -> AgentRecord:
    """A record from its lines, header first, without the end marker."""
    uptime = float(lines[0][len(_HEADER) :].split()[0])
    vmstat: dict[str, int] = {}
    meminfo: dict[str, int] = {}
    procs: list[ProcIO] = []
    for line in lines[1:]:
        parts = line.split()
        if parts and parts[0] == _PIO:
            proc = parse_pio(line)
            if proc is not None:
                procs.append(proc)
        elif len(parts) >= 2 and parts[0].endswith(":"):
            scale = 1024 if parts[-1] == "kB" else 1
            meminfo[parts[0][:-1]] = int(parts[1]) * scale
        elif len(parts) == 2 and parts[1].isdigit():
            vmstat[parts[0]] = int(parts[1])
    return AgentRecord(uptime, vmstat, meminfo, tuple(procs))


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
