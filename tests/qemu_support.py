"""Shared helpers for the guest/QEMU tests: one guest build per session, fio client runs, tool checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from vmio.guest import GuestImage, build
from vmio.qemu import QemuCaps, probe_caps

TOOLS = ("qemu-system-x86_64", "fio", "apt-get", "dpkg-deb", "ldd")
MISSING = [tool for tool in TOOLS if not shutil.which(tool)]
needs_qemu = pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)} (not installed)")


def session_guest(factory: pytest.TempPathFactory) -> GuestImage:
    """The guest built once per test session under the session's base temp dir (cached on disk)."""
    return build(root=factory.getbasetemp() / "xdg" / "vmio" / "guest")


def caps() -> QemuCaps:
    return probe_caps()


def job_file(path: Path, device: str, rw: str = "randread", size: str = "8M") -> Path:
    path.write_text(
        "[check]\n"
        f"filename={device}\nrw={rw}\nbs=4k\nsize={size}\nruntime=1\ntime_based=1\n"
        "direct=1\nioengine=libaio\niodepth=4\n"
    )
    return path


def fio_client(args: Sequence[str], timeout: float = 60.0) -> list[dict[str, object]]:
    """Run ``fio --output-format=json ARGS`` on the host; return its ``client_stats`` job entries."""
    done = subprocess.run(
        ["fio", "--output-format=json", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    start = done.stdout.index("\n{") + 1
    stats: list[dict[str, object]] = json.loads(done.stdout[start:])["client_stats"]
    return [s for s in stats if s.get("jobname") != "All clients"]


def read_ios(entry: dict[str, object]) -> int:
    read = entry["read"]
    assert isinstance(read, dict)
    return int(read["total_ios"])


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"
