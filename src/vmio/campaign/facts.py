"""The facts that make a measurement trustworthy: kernel, CPU, cores, tool versions, load."""

from __future__ import annotations

import os
import platform
import re
import socket
from pathlib import Path

from vmio.fio import run as fiorun
from vmio.system.process import Runner
from vmio.version import vmio_version


def collect(proc_root: str | Path = "/proc", runner: Runner | None = None) -> dict[str, object]:
    """The host's facts, stored as JSON with each run (``run.host_json``)."""
    proc = Path(proc_root)
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "cpu_model": _cpu_model(proc),
        "cores": os.cpu_count(),
        "memory_bytes": _mem_total(proc),
        "loadavg": list(os.getloadavg()),
        "fio_version": fio_version(runner or Runner()),
        "python": platform.python_version(),
        "vmio_version": vmio_version(),
    }


def fio_version(runner: Runner) -> str | None:
    return fiorun.version(runner)


def _cpu_model(proc: Path) -> str | None:
    try:
        text = (proc / "cpuinfo").read_text()
    except OSError:
        return None
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else None


def _mem_total(proc: Path) -> int | None:
    try:
        text = (proc / "meminfo").read_text()
    except OSError:
        return None
    match = re.search(r"^MemTotal:\s*(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None
