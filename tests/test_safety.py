"""Writes to a device holding data are refused unless the user names it in --destroy-data."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.store import Store
from vmio.system.process import Runner
from vmio.system.safety import data_on_device

from conftest import need

pytestmark = [pytest.mark.fio, pytest.mark.root]


def spec(tmp_path: Path, device: str, rw: str) -> Path:
    path = tmp_path / f"{rw}.toml"
    path.write_text(
        f'[campaign]\nname = "{rw}"\n[[target]]\nname = "dev"\npath = "{device}"\n'
        f'[[workload]]\nname = "w"\nrw = "{rw}"\nbs = "4k"\nruntime = "1s"\n'
    )
    return path


@pytest.fixture
def ext4_loop(loopdev: str) -> str:
    need("mkfs.ext4")
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True, timeout=60)
    subprocess.run(
        ["debugfs", "-w", "-R", "mkdir keep", loopdev], check=True, timeout=30, capture_output=True
    )
    return loopdev


def fs_intact(device: str) -> bool:
    fsck = subprocess.run(["e2fsck", "-fn", device], capture_output=True, text=True, timeout=60)
    listing = subprocess.run(["debugfs", "-R", "ls -l /", device], capture_output=True, text=True, timeout=30)
    return fsck.returncode == 0 and " keep" in listing.stdout


def test_blank_device_has_no_reasons(loopdev: str) -> None:
    assert data_on_device(loopdev, Runner()) == []


def test_write_to_ext4_is_refused_and_the_filesystem_is_intact(
    ext4_loop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    assert main(["run", str(spec(tmp_path, ext4_loop, "randwrite")), "--db", str(db)]) == 3
    err = capsys.readouterr().err
    assert f"refusing to write to {ext4_loop}" in err and "ext4 filesystem signature" in err
    assert f"--destroy-data {ext4_loop}" in err and "Traceback" not in err
    assert fs_intact(ext4_loop)
    with Store(db) as store:
        assert store.campaigns() == []  # nothing half-written


def test_reads_are_allowed(ext4_loop: str, tmp_path: Path) -> None:
    assert main(["run", str(spec(tmp_path, ext4_loop, "randread")), "--db", str(tmp_path / "r.db")]) == 0
    assert fs_intact(ext4_loop)


def test_destroy_data_naming_the_device_allows_the_write(ext4_loop: str, tmp_path: Path) -> None:
    args = ["run", str(spec(tmp_path, ext4_loop, "randwrite")), "--db", str(tmp_path / "d.db")]
    assert main([*args, "--destroy-data", "/dev/some-other-disk"]) == 3
    assert main([*args, "--destroy-data", ext4_loop]) == 0


def test_mounted_device_is_named(ext4_loop: str, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", ext4_loop, str(mnt)], capture_output=True, timeout=30).returncode != 0:
        pytest.skip("cannot mount ext4 here")
    try:
        reasons = data_on_device(ext4_loop, Runner())
        assert any(f"is mounted on {mnt}" in r for r in reasons)
    finally:
        subprocess.run(["umount", str(mnt)], check=True, timeout=30)
