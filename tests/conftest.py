"""Shared fixtures: real fio, real loop devices, real stores, at small scale."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.store import Store


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"needs {tool}, which is not installed (make test installs it)")


@pytest.fixture
def fio() -> str:
    need("fio")
    return "fio"


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(":memory:") as s:
        yield s


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder on a real disk (not tmpfs), so O_DIRECT works."""
    base = Path(os.environ.get("VMIO_TEST_SCRATCH", "/var/tmp"))
    base.mkdir(parents=True, exist_ok=True)
    path = Path(subprocess.check_output(["mktemp", "-d", str(base / "vmio-test.XXXXXX")], text=True).strip())
    yield path
    shutil.rmtree(path, ignore_errors=True)


def make_loop(image: Path, size: int) -> str:
    with open(image, "wb") as f:
        f.truncate(size)
    return subprocess.check_output(["losetup", "-f", "--show", str(image)], text=True, timeout=30).strip()


@pytest.fixture
def loopdev(scratch: Path) -> Iterator[str]:
    """A blank 64 MiB loop device over a file in ``scratch``."""
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    need("losetup")
    dev = make_loop(scratch / "loop.img", 64 << 20)
    yield dev
    subprocess.run(["losetup", "-d", dev], check=False, timeout=30)
