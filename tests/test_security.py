"""vmio as root beside a hostile local user: each attack replayed for real, and once with its rule switched
off (monkeypatched here, never by a flag) to show the test would see the damage.

The victims are real: an ext4 on a loop device (checked with ``blkid``, ``e2fsck -fn`` and a checksum of
the whole device) or a root-owned file in a folder only root can enter (checked by checksum). The hostile
user is ``nobody``, acting through ``runuser``.

Part 1 (paths): a ``:`` in a path, other spellings of a device, links planted where vmio writes, files vmio
did not create, ``ioengine``, CSV cells, signals. docs/security.md lists each promise beside its test.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import sqlite3
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vmio.advise.live_sample import Seams, diagnose_live
from vmio.campaign import imported
from vmio.cli import main
from vmio.dstore import cluster
from vmio.errors import ToolError, UnsafeTargetError
from vmio.fio import iolog as vmio_iolog
from vmio.fio import jobfile
from vmio.fio import options as fio_options
from vmio.fio import run as fiorun
from vmio.guest import image as guest_image
from vmio.guest.image import READY_MARKER
from vmio.qemu import builds
from vmio.qemu import caps as qemu_caps
from vmio.qemu.running import Monitor, QemuProcess
from vmio.spec import fields, fiofile
from vmio.store import Store, export, integrity
from vmio.system import blockdev, cephclient, files, grants, guard, rbdimage, safety
from vmio.system.process import Runner
from vmio.targets import host as host_module
from vmio.targets import remote
from vmio.targets.remote import LocalFioServer

from conftest import need
from qemu_support import needs_qemu

pytestmark = [pytest.mark.fio, pytest.mark.root]

RULE = pytest.mark.parametrize("rule", ["on", "off"])


# -- victims and the hostile user ---------------------------------------------------------------------------


def checksum(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fs_state(device: str) -> tuple[str, int, str]:
    """What an ext4 device looks like from outside vmio: its blkid type, e2fsck -fn's exit code, its bytes."""
    kind = subprocess.run(["blkid", "-o", "value", "-s", "TYPE", device], capture_output=True, text=True,
                          timeout=30).stdout.strip()  # fmt: skip
    fsck = subprocess.run(["e2fsck", "-fn", device], capture_output=True, timeout=60).returncode
    return kind, fsck, checksum(device)


@pytest.fixture
def ext4(loopdev: str) -> str:
    """A loop device holding an ext4 with a folder in it: somebody's data."""
    need("mkfs.ext4")
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True, timeout=60)
    subprocess.run(
        ["debugfs", "-w", "-R", "mkdir keep", loopdev], check=True, timeout=30, capture_output=True
    )
    assert fs_state(loopdev)[:2] == ("ext4", 0)
    return loopdev


@pytest.fixture
def victim(scratch: Path) -> Path:
    """A root-owned 2 MiB file in a folder only root can enter (the scratch folder is 0700 root)."""
    path = scratch / "root-only.bin"
    path.write_bytes(os.urandom(2 << 20))
    path.chmod(0o600)
    return path


@pytest.fixture
def pub() -> Iterator[Path]:
    """A folder ``nobody`` made first where vmio's examples used to write (``/var/tmp/vmio``): owned by
    nobody, below a 0711 root folder nobody can traverse."""
    need("runuser")
    base = Path(os.environ.get("VMIO_TEST_SCRATCH", "/var/tmp"))
    parent = Path(tempfile.mkdtemp(prefix="vmio-shared-", dir=base))
    parent.chmod(0o711)
    folder = parent / "pub"
    as_nobody("mkdir", "-m", "0755", str(folder), parent=parent)
    try:
        yield folder
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def as_nobody(*argv: str, parent: Path | None = None) -> None:
    """Run ``argv`` as the unprivileged user ``nobody`` (``parent``: let nobody write there for this)."""
    if parent is not None:
        os.chmod(parent, 0o777)
    try:
        subprocess.run(["runuser", "-u", "nobody", "--", *argv], check=True, timeout=30)
    finally:
        if parent is not None:
            os.chmod(parent, 0o711)


def plant(link: Path, target: Path) -> None:
    """``nobody`` plants ``link -> target`` (a symlink needs no access to its target)."""
    as_nobody("ln", "-s", str(target), str(link))
    assert link.is_symlink() and os.lstat(link).st_uid == pwd.getpwnam("nobody").pw_uid


def host_spec(tmp_path: Path, path: str, rw: str = "randwrite", name: str = "sec", extra: str = "") -> Path:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(
        f'[campaign]\nname = "{name}"\n[[target]]\nname = "t"\npath = "{path}"\nsize = "1M"\n'
        f'[[workload]]\nname = "w"\nrw = "{rw}"\nbs = "4k"\nruntime = "1s"\n{extra}'
    )
    return spec


def hostile(pub: Path, name: str, text: str) -> Path:
    """``nobody`` writes the input root is given (a spec, a job file) into their own folder."""
    path = pub / name
    subprocess.run(["runuser", "-u", "nobody", "--", "tee", str(path)], input=text.encode(), check=True,
                   timeout=30, stdout=subprocess.DEVNULL)  # fmt: skip
    return path


def refused(capsys: pytest.CaptureFixture[str], code: int, *words: str) -> None:
    err = capsys.readouterr().err
    assert code == 3, err
    assert err.count("\n") == 1 and all(w in err for w in words), err


def no_check(*args: object, **kwargs: object) -> None:
    return None


@contextlib.contextmanager
def by_name(path: str) -> Iterator[safety.Held]:
    """``safety.hold`` switched off: the target handed on by its name, as before part 4."""

    class ByName(safety.Held):
        @property
        def here(self) -> str:
            return self.path

        @property
        def fio_path(self) -> str:
            return self.path

    yield ByName(-1, path)


# -- Part 1: paths ------------------------------------------------------------------------------------------
# Attack 1: a ':' in a target path


@RULE
def test_a_colon_in_a_host_path_names_one_file(
    rule: str, ext4: str, scratch: Path, pub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``path = "DIR/c.img:/dev/loopN"`` in nobody's spec: fio writes the file of that name, not the device."""
    before = fs_state(ext4)
    if rule == "off":
        monkeypatch.setattr(jobfile, "fio_name", lambda path: path)
        # fio gets the held target's descriptor (part 4), which has no ':'; by name, as calibrate, remote
        # targets and the dry run still hand paths to fio, the escape is what keeps the device safe
        monkeypatch.setattr(host_module, "hold", by_name)
    path = f"{scratch}/c.img:{ext4}"
    spec = hostile(pub, "c.toml", host_spec(tmp_path, path).read_text())
    code = main(["run", str(spec), "--db", str(tmp_path / "c.db")])
    if rule == "on":
        assert code == 0
        assert fs_state(ext4) == before
        assert Path(path).is_file() and Path(path).stat().st_size == 1 << 20 and files.is_marked(path)
    else:
        assert fs_state(ext4)[2] != before[2]  # fio split the name and wrote the device


def test_a_colon_in_a_calibrate_path_names_one_file(ext4: str, scratch: Path, tmp_path: Path) -> None:
    """Calibrate's jobs go through the same ``jobfile.section`` as the run's, whose rule switched off is
    shown failing above (a second calibration just to show it again would cost 9 s)."""
    before = fs_state(ext4)
    path = f"{scratch}/c.img:{ext4}"
    assert (
        main(["calibrate", path, "--db", str(tmp_path / "c.db")]) == 2
    )  # its folder is missing: no traceback
    Path(path).parent.mkdir(parents=True)
    code = main(["calibrate", path, "--size", "1M", "--runtime", "0.05s", "--db", str(tmp_path / "c.db")])
    assert code == 0
    assert fs_state(ext4) == before
    assert Path(path).stat().st_size == 1 << 20 and files.is_marked(path)  # the file of that very name


@RULE
def test_a_colon_in_a_job_file_target_is_escaped_in_the_dry_run(
    rule: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    job = tmp_path / "j.fio"
    job.write_text("[w]\nrw=randwrite\nbs=4k\n")
    if rule == "off":
        monkeypatch.setattr(jobfile, "fio_name", lambda path: path)
    code = main(["run", str(job), "--target", "x.img:/dev/loop1", "--size", "1M", "--dry-run"])
    out = capsys.readouterr().out
    names = [line for line in out.splitlines() if line.startswith("filename=")]
    assert code == 0 and names
    expected = "filename=x.img\\:/dev/loop1" if rule == "on" else "filename=x.img:/dev/loop1"
    assert set(names) == {expected}


@pytest.mark.parametrize("name", ["a:b", "a\\:b", "a\\b:c:", ":lead", "x\\", "two::colons"])
def test_fio_reads_each_escaped_name_back_as_written(name: str, scratch: Path) -> None:
    """The escape is exact: fio (not vmio) creates the file of that very name, and only it."""
    folder = scratch / "names"
    folder.mkdir()
    job = scratch / "n.fio"
    job.write_text(jobfile.section("n", {"filename": str(folder / name), "size": 4096, "rw": "write"}))
    subprocess.run(["fio", "--output=/dev/null", str(job)], check=True, timeout=60, capture_output=True)
    assert [p.name for p in folder.iterdir()] == [name]


def test_a_name_fio_cannot_carry_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(host_spec(tmp_path, "/var/lib/vmio/${HOME}.img", rw="randread")), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and "a fio job file cannot carry" in err and err.count("\n") == 1, err


# Attack 2: other spellings of a device on a remote target


@pytest.mark.parametrize("spelling", ["//dev/{}", "/./dev/{}", "/dev/../dev/{}", "/dev//{}"])
def test_other_spellings_of_a_remote_device_are_refused(
    spelling: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = spelling.format("loop1")
    spec = tmp_path / "r.toml"
    spec.write_text(
        f'[campaign]\nname = "r"\n[[target]]\nname = "r"\nkind = "remote"\nhosts = ["127.0.0.1:9"]\n'
        f'paths = ["{path}"]\nsize = "1M"\n[[workload]]\nname = "w"\nrw = "randwrite"\nruntime = "1s"\n'
    )
    code = main(["run", str(spec), "--db", str(tmp_path / "r.db")])
    refused(
        capsys, code, f"refusing to write to '{path}' (that is '/dev/loop1'", f"add --destroy-data {path}"
    )
    # the device's own name does not stand for another spelling: the flag names the path as the spec does
    code = main(["run", str(spec), "--db", str(tmp_path / "r.db"), "--destroy-data", "/dev/loop1"])
    refused(capsys, code, f"refusing to write to '{path}'", f"add --destroy-data {path}")


@RULE
def test_a_remote_device_spelt_with_two_slashes_is_not_written(
    rule: str, ext4: str, pub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``paths = ["//dev/loopN"]`` in nobody's spec, on a real fio server: refused, the ext4 intact."""
    before = fs_state(ext4)
    if rule == "off":
        monkeypatch.setattr(remote, "check_remote_writes", no_check)  # the remote kind's rule
    with LocalFioServer() as server:
        spec = hostile(
            pub,
            "r.toml",
            f'[campaign]\nname = "r"\n[[target]]\nname = "r"\nkind = "remote"\nhosts = ["{server.address}"]\n'
            f'paths = ["/{ext4}"]\nsize = "1M"\n[[workload]]\nname = "w"\nrw = "randwrite"\nruntime = "1s"\n',
        )
        code = main(["run", str(spec), "--db", str(tmp_path / "r.db")])
    if rule == "on":
        refused(capsys, code, f"refusing to write to '/{ext4}' (that is '{ext4}'", f"--destroy-data /{ext4}")
        assert fs_state(ext4) == before
    else:
        assert fs_state(ext4)[2] != before[2]


# Attack 3: links planted where vmio writes


@RULE
def test_a_planted_target_link_is_refused(
    rule: str, pub: Path, victim: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``pub/a.img -> a root-only file``: a randwrite campaign on pub/a.img must not write through it."""
    plant(pub / "a.img", victim)
    before = checksum(victim)
    if rule == "off":
        monkeypatch.setattr(safety, "check_place", no_check)
        monkeypatch.setattr(safety, "data_in_file", lambda path: [])
    code = main(["run", str(host_spec(tmp_path, str(pub / "a.img"))), "--db", str(tmp_path / "a.db")])
    if rule == "on":
        refused(capsys, code, f"refusing to write '{pub}/a.img'", f"its folder '{pub}' belongs to nobody")
        assert checksum(victim) == before
    else:
        assert checksum(victim) != before


def fixed_temporaries(name: Callable[[str, str], str]) -> Callable[..., tuple[int, str]]:
    """The old way: a fixed temporary name beside the file, opened through whatever is there."""

    def mkstemp(prefix: str, suffix: str, dir: str) -> tuple[int, str]:
        path = os.path.join(dir, name(prefix, suffix))
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600), path

    return mkstemp


@RULE
def test_a_planted_partial_file_link_is_refused(
    rule: str, pub: Path, victim: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``pub/b.img.vmio-partial -> a root-only file``: creating pub/b.img must not fill the root file."""
    plant(pub / "b.img.vmio-partial", victim)
    before = checksum(victim)
    if rule == "off":
        monkeypatch.setattr(safety, "check_place", no_check)
        monkeypatch.setattr(files, "check_place", no_check)
        monkeypatch.setattr(files.tempfile, "mkstemp", fixed_temporaries(lambda p, s: p.strip(".") + s))
    code = main(["run", str(host_spec(tmp_path, str(pub / "b.img"))), "--db", str(tmp_path / "b.db")])
    if rule == "on":
        refused(capsys, code, f"refusing to write '{pub}/b.img'", "belongs to nobody")
        assert checksum(victim) == before and not (pub / "b.img").exists()
    else:
        assert checksum(victim) != before


@pytest.fixture(scope="module")
def formula_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one campaign whose workload name a spreadsheet would run (null engine: no I/O)."""
    folder = tmp_path_factory.mktemp("csv")
    spec = folder / "f.toml"
    spec.write_text(
        f'[campaign]\nname = "f"\n[[target]]\nname = "-t"\npath = "{folder}/f.img"\nsize = "1M"\n'
        '[[workload]]\nname = "=HYPERLINK(\\"http://x\\")"\nrw = "randread"\nioengine = "null"\nruntime = "1s"\n'
    )
    assert main(["run", str(spec), "--db", str(folder / "f.db")]) == 0
    return folder / "f.db"


@RULE
def test_a_planted_export_temporary_is_refused(
    rule: str, pub: Path, victim: Path, formula_store: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``pub/.e.csv.tmp -> a root-only file``: ``vmio export -o pub/e.csv`` must not overwrite it."""
    plant(pub / ".e.csv.tmp", victim)
    before = checksum(victim)
    if rule == "off":
        monkeypatch.setattr(files, "check_place", no_check)
        monkeypatch.setattr(files.tempfile, "mkstemp", fixed_temporaries(lambda p, s: p.rstrip(".") + s))
    code = main(["export", "f", "--format", "csv", "-o", str(pub / "e.csv"), "--db", str(formula_store)])
    if rule == "on":
        refused(capsys, code, f"refusing to write '{pub}/e.csv'", "belongs to nobody")
        assert checksum(victim) == before
    else:
        assert checksum(victim) != before


@RULE
def test_a_planted_run_lock_link_is_refused(
    rule: str, pub: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pub/s.db.run-lock -> a root-only file``: the store's run lock must not truncate it."""
    plant(pub / "s.db.run-lock", victim)
    before = checksum(victim)
    if rule == "on":
        with pytest.raises(UnsafeTargetError, match="belongs to nobody"):
            Store(pub / "s.db")
        assert checksum(victim) == before
    else:
        monkeypatch.setattr(files, "check_place", no_check)
        monkeypatch.setattr(files, "open_lock", lambda path: os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
        with Store(pub / "s.db") as store, store.exclusive_run():
            pass
        assert checksum(victim) != before


def test_a_folder_another_user_controls_is_refused_at_any_level(pub: Path, scratch: Path) -> None:
    """Two levels below nobody's folder (the folder in between is root's), and through a root-owned link
    into it: refused. A group-writable folder of a group other than root's: refused."""
    deep = pub / "root-made"
    deep.mkdir()  # root makes it, but nobody can rename pub's entries: it is nobody's to swap
    with pytest.raises(UnsafeTargetError, match=f"its folder '{pub}' belongs to nobody"):
        files.write_atomic(deep / "e.csv", b"x\n")
    link = scratch / "looks-private"
    link.symlink_to(deep)
    with pytest.raises(UnsafeTargetError, match=f"its folder '{pub}' belongs to nobody"):
        files.write_atomic(link / "e.csv", b"x\n")
    group = scratch / "group"
    group.mkdir()
    os.chown(group, 0, pwd.getpwnam("nobody").pw_gid)
    group.chmod(0o775)
    with pytest.raises(UnsafeTargetError, match="can be written by other users"):
        files.write_atomic(group / "e.csv", b"x\n")
    assert not list(deep.iterdir()) and not list(group.iterdir())


def test_a_sticky_shared_folder_takes_only_vmios_own_new_files(tmp_path: Path, victim: Path) -> None:
    """In a sticky world-writable folder (like /tmp) vmio may create its own new file, never reuse a name
    another user holds there."""
    base = Path(os.environ.get("VMIO_TEST_SCRATCH", "/var/tmp"))
    with tempfile.TemporaryDirectory(prefix="vmio-sticky-", dir=base) as parent:
        sticky = Path(parent) / "s"
        sticky.mkdir(mode=0o1777)
        sticky.chmod(0o1777)
        Path(parent).chmod(0o711)
        files.write_atomic(sticky / "mine.csv", b"x\n")
        assert (sticky / "mine.csv").read_bytes() == b"x\n"
        plant(sticky / "theirs.csv", victim)
        with pytest.raises(UnsafeTargetError, match="can be written by other users"):
            files.write_atomic(sticky / "theirs.csv", b"y\n")


# A regular file vmio did not create is data


@RULE
def test_a_file_vmio_did_not_create_is_data(
    rule: str, scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A user's VM image named by mistake is refused."""
    image = scratch / "users-vm.img"
    image.write_bytes(os.urandom(2 << 20))
    before = checksum(image)
    spec = host_spec(tmp_path, str(image))
    if rule == "off":
        monkeypatch.setattr(safety, "data_in_file", lambda path: [])
    code = main(["run", str(spec), "--db", str(tmp_path / "d.db")])
    if rule == "on":
        refused(capsys, code, "a file vmio did not create", f"--destroy-data {image}")
        assert checksum(image) == before
    else:
        assert checksum(image) != before


def test_destroy_data_names_a_file_by_any_spelling_and_vmios_own_files_are_reused(
    scratch: Path, tmp_path: Path
) -> None:
    image = scratch / "users-vm.img"
    image.write_bytes(os.urandom(2 << 20))
    before = checksum(image)
    spec = host_spec(tmp_path, str(image))
    assert main(["run", str(spec), "--db", str(tmp_path / "d.db"),
                 "--destroy-data", f"{scratch}/./x/..//users-vm.img"]) == 0  # fmt: skip
    assert checksum(image) != before
    own = scratch / "own.img"
    assert main(["run", str(host_spec(tmp_path, str(own), name="own")), "--db", str(tmp_path / "d.db")]) == 0
    assert files.is_marked(own)
    assert main(["run", str(host_spec(tmp_path, str(own), name="own")), "--db", str(tmp_path / "d.db"),
                 "--force"]) == 0  # fmt: skip


# ioengine comes from an allow-list


@RULE
def test_an_external_ioengine_is_refused(
    rule: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if rule == "off":
        monkeypatch.setattr(fields, "ENGINES", (*fields.ENGINES, "external:/tmp/evil.so"))
    spec = host_spec(
        tmp_path, "/var/lib/vmio/x.img", rw="randread", extra='ioengine = "external:/tmp/evil.so"\n'
    )
    code = main(["run", str(spec), "--dry-run"])
    captured = capsys.readouterr()
    if rule == "on":
        assert code == 2 and "ioengine 'external:/tmp/evil.so' is not one vmio runs" in captured.err
    else:
        assert code == 0 and "ioengine=external:/tmp/evil.so" in captured.out


def test_an_external_ioengine_in_a_job_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "j.fio"
    job.write_text("[w]\nrw=randread\nioengine=external:/tmp/evil.so\n")
    code = main(["run", str(job), "--target", "/var/lib/vmio/x.img", "--size", "1M", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and f"{job}:3: ioengine=external:/tmp/evil.so" in err and "vmio does not run" in err, err


# CSV cells a spreadsheet would run


@RULE
def test_csv_cells_are_not_formulas(
    rule: str, formula_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The points and the samples (``.series``: the point key starts ``-t/``)."""
    if rule == "off":
        monkeypatch.setattr(export, "inert", lambda value: value)
    out = tmp_path / "f.csv"
    assert main(["export", "f", "--format", "csv", "-o", str(out), "--db", str(formula_store)]) == 0
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    with (tmp_path / "f.series.csv").open(newline="") as f:
        series = list(csv.DictReader(f))
    cells = [v for row in rows for v in row.values()]
    sampled = [v for row in series for v in row.values()]
    formulas = [c for c in cells + sampled if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert series and series[0]["point"].lstrip("'").startswith("-t/")
    if rule == "on":
        assert formulas == []
        assert '\'=HYPERLINK("http://x")' in cells and "'-t" in cells
        assert any(c.replace(".", "", 1).isdigit() for c in cells)  # numbers stay numbers
        assert all(row["point"].startswith("'-t/") for row in series)
        assert all(float(row["value"]) == float(row["value"]) for row in series)  # numbers stay numbers
    else:
        assert '=HYPERLINK("http://x")' in formulas and series[0]["point"] in formulas


# Signals: every command, not only `vmio run`


@pytest.mark.parametrize(("signum", "code", "word"), [(signal.SIGTERM, 143, "terminated"),
                                                     (signal.SIGINT, 130, "interrupted")])  # fmt: skip
def test_a_signal_ends_any_command_cleanly(
    signum: int, code: int, word: str, scratch: Path, tmp_path: Path
) -> None:
    """``vmio calibrate`` (not ``run``) gets the signal while fio runs: its exit code, and no fio left."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vmio", "calibrate", str(scratch / "s.img"), "--size", "4M",
         "--runtime", "2s", "--db", str(tmp_path / "s.db")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not fio_children(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        fios = fio_children(proc.pid)
        assert fios, "fio never started"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code and word in err, err
        assert not [pid for pid in fios if _alive(pid)]  # fio died with vmio
    finally:
        if proc.poll() is None:
            proc.kill()


def fio_children(pid: int) -> list[int]:
    """fio processes below ``pid``."""
    return [int(e.name) for e in Path("/proc").iterdir()
            if e.name.isdigit() and _is_fio(e) and _ancestor(int(e.name), pid)]  # fmt: skip


def _is_fio(entry: Path) -> bool:
    try:
        return (entry / "cmdline").read_bytes().split(b"\0")[0].endswith(b"fio")
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _ancestor(child: int, pid: int) -> bool:
    while child > 1:
        try:
            stat = Path(f"/proc/{child}/stat").read_text()
        except OSError:
            return False
        child = int(stat.rpartition(")")[2].split()[1])
        if child == pid:
            return True
    return False


# Part 3: a job read as fio reads it; read-only jobs under fio's --readonly ---------------------------------
# (issue 36: docs/security.md, "Part 3: by effect, what fio will do")


def planted_log(path: str, ddirs: tuple[str, ...] = ("write", "read")) -> None:
    """``nobody`` plants a fio I/O log at ``path``: writes over the first MiB (the ext4's superblock and
    group descriptors) and a read after each."""
    lines = ["fio version 2 iolog", "vmio-ops add", "vmio-ops open"]
    lines += [f"vmio-ops {d} {o} 4096" for o in range(0, 1 << 20, 4096) for d in ddirs]
    text = "\n".join([*lines, "vmio-ops close"]) + "\n"
    subprocess.run(["runuser", "-u", "nobody", "--", "tee", path], input=text.encode(), check=True,
                   timeout=30, stdout=subprocess.DEVNULL)  # fmt: skip


def ops_spec(tmp_path: Path, server: str, device: str) -> Path:
    spec = tmp_path / "ops.toml"
    spec.write_text(
        f'[campaign]\nname = "ops"\nseed = 36\n[[target]]\nname = "r"\nkind = "remote"\nhosts = ["{server}"]\n'
        f'paths = ["{device}"]\nsize = "64M"\n'
        '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\nops = 20\ndirect = true\n'
    )
    return spec


def shown(db: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["show", "--json", "--db", str(db)]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return rows


@pytest.mark.parametrize("rule", ["on", "readonly-alone", "off"])
def test_a_planted_log_of_writes_cannot_make_a_read_only_ops_campaign_write(
    rule: str, ext4: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only campaign with ``seed`` and ``ops`` on a remote ``/dev/loopN`` (a real ``fio --server`` on
    loopback) while ``nobody`` has planted a log of writes under the fixed name the old exec job used.

    on: the log goes through fio's own writes into a fresh 0700 folder of a random name, no job holds a
    shell line, the device is intact. readonly-alone: the log's name is the planted one and vmio's own log
    goes elsewhere (the fresh folder switched off): fio replays the planted writes, but under
    ``--readonly`` it skips them. off: ``--readonly`` switched off too: the ext4 is overwritten."""
    planted = f"/tmp/vmio-ops-{os.getpid()}-{rule}-0.iolog"
    planted_log(planted)
    before = fs_state(ext4)
    put_job = vmio_iolog.put_job
    if rule != "on":
        monkeypatch.setattr(vmio_iolog, "private_path", lambda index: planted)
        monkeypatch.setattr(
            vmio_iolog, "put_job", lambda text, path: put_job(text, str(tmp_path / "put.log"))
        )
    if rule == "off":
        monkeypatch.setattr(fiorun, "read_only", lambda text: False)
    try:
        with LocalFioServer() as server:
            db, work = tmp_path / "ops.db", tmp_path / "work"
            code = main(["run", str(ops_spec(tmp_path, server.address, ext4)), "--db", str(db), "--workdir",
                         str(work)])  # fmt: skip
    finally:
        Path(planted).unlink(missing_ok=True)  # vmio removes the log it replayed
    assert code == 0, capsys.readouterr()
    (row,) = shown(db, capsys)
    jobs = {p.name: p.read_text() for p in work.rglob("*.fio")}
    assert not any(word in text for text in jobs.values() for word in ("exec", "/bin/sh", "base64")), jobs
    if rule == "off":
        assert fs_state(ext4) != before and row["write_iops"] > 0
        return
    assert fs_state(ext4) == before and row["status"] == "done" and not row["write_iops"]
    if rule == "on":
        (measured,) = [t for n, t in jobs.items() if n.startswith("job")]
        log = re.search(r"^read_iolog=(/tmp/vmio-[0-9a-f]{32})/ops-0-[0-9a-f]{16}\.iolog$", measured, re.M)
        assert log is not None, measured
        folder = os.stat(log.group(1))  # fio made it for this vmio: root's, 0700
        assert folder.st_uid == 0 and stat.S_IMODE(folder.st_mode) == 0o700
        assert not os.listdir(log.group(1))  # the point's log was removed after it
        put = "".join(
            bytes.fromhex(h).decode() for h in re.findall(r"buffer_pattern=0x(\w+)", jobs["put-iolog-0.fio"])
        )
        lines = put.splitlines()  # what fio wrote there: vmio's log of 20 reads
        assert len(lines) == 3 + 20 + 1 and all(" read " in line for line in lines[3:-1]), put
        os.rmdir(log.group(1))


def spelled(ext4: str) -> list[str]:
    """Remote paths that are the device to a server started in ``/``, none starting with ``/dev/``."""
    return [f"/proc/self/root{ext4}", f"/proc/self/cwd{ext4}", ext4.lstrip("/")]


@RULE
def test_a_write_to_any_remote_path_needs_destroy_data_naming_it(
    rule: str, ext4: str, pub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """nobody's specs write to a remote target through spellings of an ext4 device that do not start with
    ``/dev/`` (the fio server runs in ``/``): each refused, exit 3, the sentence saying what to add; a
    ``--destroy-data`` naming the device otherwise does not do. With the rule off the ext4 is overwritten."""
    before = fs_state(ext4)
    if rule == "off":
        monkeypatch.setattr(remote, "check_remote_writes", no_check)  # the remote kind's rule
    monkeypatch.chdir("/")  # the fio server's folder: a relative path is below /
    with LocalFioServer() as server:
        for i, path in enumerate(spelled(ext4)[: 3 if rule == "on" else 1]):
            spec = hostile(
                pub,
                f"r{i}.toml",
                f'[campaign]\nname = "r{i}"\n[[target]]\nname = "r"\nkind = "remote"\n'
                f'hosts = ["{server.address}"]\npaths = ["{path}"]\nsize = "1M"\n'
                '[[workload]]\nname = "w"\nrw = "randwrite"\nruntime = "1s"\n',
            )
            code = main(["run", str(spec), "--db", str(tmp_path / "r.db"), "--destroy-data", ext4])
            if rule == "on":
                refused(capsys, code, f"refusing to write to '{path}'", f"add --destroy-data {path}")
    if rule == "on":
        assert fs_state(ext4) == before
    else:
        assert fs_state(ext4)[2] != before[2]


@RULE
def test_an_option_and_its_alias_are_read_as_fio_reads_them(
    rule: str, victim: Path, pub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """nobody's job file says ``readwrite=write`` then ``rw=read:4k``: fio takes the last of the two names
    of one option. Refused, exit 2, naming both lines; root's file intact. With fio's names (and
    ``--readonly``) switched off, vmio reads a read, fio writes, and the file is overwritten."""
    job = hostile(pub, "job.fio", "[x]\nreadwrite=write\nrw=read:4k\n")
    before = checksum(victim)
    if rule == "off":
        monkeypatch.setattr(fio_options.InstalledNames, "canonical", lambda self, key: key)
        monkeypatch.setattr(fiorun, "read_only", lambda text: False)
    code = main(["run", str(job), "--target", str(victim), "--runtime", "1s", "--db", str(tmp_path / "a.db")])
    if rule == "on":
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert f"{job}:2: readwrite=write and {job}:3: rw=read:4k in [x] set fio's option 'rw' twice" in err
        assert checksum(victim) == before
        # a [global] value a section overrides is ordinary: the section's own value holds
        good = hostile(pub, "good.fio", "[global]\nrw=write\n[x]\nreadwrite=randread\n")
        assert main(["run", str(good), "--target", str(victim), "--dry-run"]) == 0
        assert "\nrw=randread\n" in capsys.readouterr().out
    else:
        assert checksum(victim) != before


def sections_file(pub: Path, count: int) -> Path:
    return hostile(
        pub, f"s{count}.fio", "[global]\nrw=randread\n" + "".join(f"[j{i}]\n" for i in range(count))
    )


@RULE
def test_a_job_file_of_many_sections_is_refused_past_the_stated_limit(
    rule: str, pub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of ``MAX_SECTIONS + 1`` sections (fio runs them all together): refused at its first section
    past the limit, exit 2. Below it, each section's job names at most a few of the sections fio would run
    beside it, so a dry run's output grows with the file, not its square. Switched off: read whole, and
    a section's note lists every other section."""
    limit = fiofile.MAX_SECTIONS
    if rule == "off":
        monkeypatch.setattr(fiofile, "MAX_SECTIONS", 10 * limit)
    big = sections_file(pub, limit + 1)
    code = main(["run", str(big), "--target", str(tmp_path / "t"), "--size", "1M", "--dry-run"])
    out, err = capsys.readouterr()
    if rule == "on":
        assert code == 2 and err.count("\n") == 1, err
        assert f"{big}:{2 + limit + 1}: [j{limit}] is job section {limit + 1}" in err
        assert f"at most {limit} sections" in err
    else:
        assert code == 0 and out.count("\n## ") == limit + 1
        monkeypatch.setattr(fiofile, "BESIDE_SHOWN", 10 * limit)
    small = sections_file(pub, 300)
    assert main(["run", str(small), "--target", str(tmp_path / "t"), "--size", "1M", "--dry-run"]) == 0
    longest = max(len(line) for line in capsys.readouterr().out.splitlines())
    assert (longest < 200) if rule == "on" else (longest > 300 * 3)


@RULE
def test_a_read_only_job_runs_under_fios_readonly_on_every_launch(
    rule: str, victim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read job replaying a log of writes, on the three ways vmio starts fio (``fio.run``: a local fio, a
    client of a ``fio --server`` on loopback, a background fio; calibrate, dstore and membal use these, a
    libvirt guest's fio takes ``stdin_argv``): under ``--readonly`` fio skips the writes. Off: written."""
    log = tmp_path / "writes.log"
    log.write_text(
        "fio version 2 iolog\nf add\nf open\n"
        + "".join(f"f write {o} 4096\nf read {o} 4096\n" for o in range(0, 1 << 20, 4096))
        + "f close\n"
    )
    job = f"[x]\nrw=randread\nfilename={victim}\nread_iolog={log}\nreplay_redirect={victim}\n"
    before = checksum(victim)
    if rule == "off":
        monkeypatch.setattr(fiorun, "read_only", lambda text: False)
    assert (fiorun.READONLY in fiorun.stdin_argv(job)) == (rule == "on")
    fiorun.run_job(job, timeout=60, runner=Runner())
    after_local = checksum(victim)
    with LocalFioServer() as server:
        fiorun.run_job(job, timeout=60, runner=Runner(), server=server.address)
    after_server = checksum(victim)
    (tmp_path / "bg.fio").write_text(job)
    bg = fiorun.Background([fiorun.Endpoint(None, tmp_path / "bg.fio")], timeout=60, cwd=tmp_path,
                           log=tmp_path / "bg.log")  # fmt: skip
    while bg.running():
        time.sleep(0.1)
    bg.finished()
    if rule == "on":
        assert after_local == after_server == checksum(victim) == before
    else:
        assert after_local != before


# Part 2: isolation ------------------------------------------------------------------------------------
# Nothing vmio starts is usable by another local user: guests' fio servers (a forwarded loopback port that
# only vmio's user may connect to), QMP/agent/console sockets (a 0700 folder), RBD images holding data,
# the throwaway Ceph cluster (cephx), diagnose --live's choice of QEMUs.

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
ATTACK_JOB = "[attack]\nfilename={path}\nrw=write\nbs=64k\nsize=64k\ndirect={direct}\nbuffer_pattern=0x5a\n"


def nobody_runs(argv: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=timeout, cwd="/")


def attack_fio(port: int, job: Path) -> subprocess.CompletedProcess[str]:
    """``nobody`` runs a write job on whatever fio server listens at ``127.0.0.1:port``."""
    return nobody_runs(["fio", f"--client=127.0.0.1,{port}", str(job)], timeout=40)


def job_file(folder: Path, path: str, direct: int = 1) -> Path:
    job = folder / "attack.fio"
    job.write_text(ATTACK_JOB.format(path=path, direct=direct))
    job.chmod(0o644)
    folder.chmod(0o755)
    return job


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (read from /proc)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, pp in parent.items() if pp == pid]
        found += kids
        todo += kids
    return found


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with_fds = Path(f"/proc/{pid}/fd")
    for fd in with_fds.iterdir() if with_fds.is_dir() else []:
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return inodes


def listening(pids: list[int]) -> tuple[set[int], set[str]]:
    """The TCP ports and unix socket paths these processes listen on (/proc/net/tcp*, /proc/net/unix)."""
    inodes = set().union(*(socket_inodes(p) for p in pids)) if pids else set()
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    paths = set()
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 8 and cols[6] in inodes and cols[7].startswith("/"):
            paths.add(cols[7])
    return ports, paths


def qemu_disks(argv: list[str]) -> list[Path]:
    """The disk files a QEMU command line names, as they resolve (vmio hands QEMU its descriptor of each
    backing, ``/proc/PID/fd/N``: docs/security.md, part 4)."""
    return [
        Path(os.path.realpath(part[len("filename=") :]))
        for arg in argv
        for part in arg.split(",")
        if part.startswith("filename=") and Path(part[len("filename=") :]).is_file()
    ]


def ready_vms(timeout: float = 150.0, count: int = 1) -> list[int]:
    """Wait until ``count`` QEMUs this test started have guests whose fio server is up."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        vms = [p for p in descendants(os.getpid()) if "-kernel" in cmdline(p)]  # not a caps probe
        consoles = [
            Path(a.split("path=", 1)[1].split(",")[0]) for p in vms for a in cmdline(p) if "id=console" in a
        ]
        if len(vms) >= count and all(c.is_file() and READY_MARKER in c.read_text(errors="replace")
                                     for c in consoles):  # fmt: skip
            return vms
        time.sleep(0.5)
    raise AssertionError(f"no {count} ready VM(s) within {timeout:g} s")


def attack_running_vms(scratch: Path, count: int = 1) -> tuple[list[Path], dict[Path, str]]:
    """As ``nobody``: a write job against every TCP port the run's processes listen on (vmio's own, which
    runs in this process, among them: its fio relays), and a connect to every unix socket they hold; the
    backing images' digests taken before. Returns (disks, digests)."""
    vms = ready_vms(count=count)
    disks = [d for p in vms for d in qemu_disks(cmdline(p))]
    before = {d: digest(d) for d in disks}
    ports, paths = listening([*vms, os.getpid(), *descendants(os.getpid())])  # vmio's fio relays: here
    assert ports, "the run's QEMUs listen on no TCP port"
    job = job_file(scratch, "/dev/vda")
    for port in sorted(ports):
        done = attack_fio(port, job)
        assert "attack: (groupid" not in done.stdout, f"nobody ran a job on port {port}:\n{done.stdout}"
    assert paths, "the run's QEMUs hold no unix socket"
    for path in sorted(paths):
        probe = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({path!r})"
        refused = nobody_runs(["/usr/bin/python3", "-c", probe])
        assert refused.returncode != 0 and "PermissionError" in refused.stderr, path
    assert {d: digest(d) for d in disks} == before  # while the VMs still run
    return disks, before


def run_in_thread(fn: Callable[[], int]) -> tuple[threading.Thread, list[int]]:
    code: list[int] = []
    thread = threading.Thread(target=lambda: code.append(fn()), daemon=True)
    thread.start()
    return thread, code


@pytest.fixture
def open_scratch() -> Iterator[Path]:
    """A folder ``nobody`` can read (for its job file)."""
    base = Path("/var/tmp") / f"vmio-sec-{os.getpid()}-{os.urandom(3).hex()}"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.fio
def test_a_guarded_fio_server_refuses_other_users_and_the_guard_can_fail(
    open_scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = open_scratch / "victim.bin"
    victim.write_bytes(b"\0" * (64 << 10))
    victim.chmod(0o644)  # root's file; nobody cannot write it itself
    job = job_file(open_scratch, str(victim), direct=0)
    with LocalFioServer() as server:
        done = attack_fio(server.port, job)
    assert done.returncode != 0 and victim.read_bytes() == b"\0" * (64 << 10), done.stdout
    monkeypatch.setattr(guard.PortGuard, "add", lambda self, port: None)  # the rule switched off
    with LocalFioServer() as server:
        done = attack_fio(server.port, job)
    assert done.returncode == 0 and victim.read_bytes() == b"\x5a" * (64 << 10), done.stdout + done.stderr


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.parametrize(
    ("machine", "build"),
    # every machine type, both builds (7.2 is the system's)
    [("q35", None), ("pc", None), ("microvm", "10.0")],
)
def test_nobody_cannot_use_a_campaign_guests_fio_server(
    open_scratch: Path, tmp_path: Path, machine: str, build: str | None
) -> None:
    disk_dir = open_scratch / "disks"
    disk_dir.mkdir(mode=0o700)
    img = disk_dir / "backing.img"
    spec = tmp_path / "vm.toml"
    spec.write_text(
        '[campaign]\nname = "sec"\n\n[[target]]\nname = "vm"\nkind = "qemu"\n'
        f'backing = ["{img}"]\nsize = "32M"\nmachine = "{machine}"\n'
        + (f'qemu = "{build}"\n' if build else "")
        + '\n[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\niodepth = 2\nruntime = "6s"\n'
    )
    # the point's 6 s of fio outlast the attack: with 12 s its guest ran on 12-13 s after the last attack
    thread, code = run_in_thread(lambda: main(["run", str(spec), "--db", str(tmp_path / "sec.db")]))
    try:
        disks, before = attack_running_vms(open_scratch)
        assert img in disks
        # every attack met a running guest (one that had ended would refuse them all for nothing)
        assert [p for p in descendants(os.getpid()) if "-kernel" in cmdline(p)], "the guest ended mid-attack"
    finally:
        thread.join(300)
    assert code == [0]
    assert {d: digest(d) for d in disks} == before  # the randread campaign and nobody wrote nothing


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_nobody_cannot_use_membals_load_run_guests(open_scratch: Path, tmp_path: Path) -> None:
    config = tmp_path / "live.toml"
    config.write_text(
        '[run]\npolicy = "equal"\ninterval = "1s"\nduration = "10s"\n\n'
        '[[vm]]\nfloor = "256M"\nload = "64M"\n\n[[vm]]\nfloor = "256M"\nload = "64M"\n'
    )
    argv = ["membal", "run", "--config", str(config), "--memory", "400M", "--db", str(tmp_path / "m.db")]
    thread, code = run_in_thread(lambda: main(argv))
    try:
        disks, before = attack_running_vms(open_scratch, count=2)
    finally:
        thread.join(300)
    assert code == [0] and disks


# Part 2: RBD images on the suite's Ceph cluster ------------------------------------------------------


def rbd(ref: cluster.ClusterRef, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["rbd", "-c", str(ref.conf), *args], capture_output=True, text=True, timeout=120, **kw
    )


def image_digest(ref: cluster.ClusterRef, image: str) -> str:
    out = subprocess.run(["rbd", "-c", str(ref.conf), "export", "--no-progress", f"{ref.pool}/{image}", "-"],
                         capture_output=True, timeout=120, check=True).stdout  # fmt: skip
    return hashlib.sha256(out).hexdigest()


def profile(ref: cluster.ClusterRef, *extra: str) -> list[str]:
    return ["dstore", "profile", "--conf", str(ref.conf), "--pool", ref.pool, "--bs", "4k",
            "--runtime", "1s", "--ramp", "0s", "--iodepth", "4", "--json", *extra]  # fmt: skip


@pytest.fixture
def rbd_victim(live_cluster: cluster.ClusterRef, tmp_path: Path) -> Iterator[str]:
    """An image with data a user imported (``rbd import``): no vmio mark, used space."""
    name = f"victim-{os.urandom(4).hex()}"
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(4 << 20))
    rbd(live_cluster, "import", "--no-progress", str(data), f"{live_cluster.pool}/{name}", check=True)
    yield name
    rbd(live_cluster, "rm", "--no-progress", f"{live_cluster.pool}/{name}")


@pytest.mark.ceph
def test_dstore_profile_refuses_an_image_holding_data_and_the_rule_can_fail(
    live_cluster: cluster.ClusterRef,
    rbd_victim: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = image_digest(live_cluster, rbd_victim)
    assert main(profile(live_cluster, "--image", rbd_victim)) == 3
    err = capsys.readouterr().err
    assert f"refusing to write to RBD image {live_cluster.pool}/{rbd_victim}" in err
    assert f"--destroy-data rbd:{live_cluster.pool}/{rbd_victim}" in err and "Traceback" not in err
    assert image_digest(live_cluster, rbd_victim) == before
    monkeypatch.setattr(rbdimage, "check_write", lambda *a, **k: None)  # the rule switched off
    assert main(profile(live_cluster, "--image", rbd_victim)) == 0
    assert image_digest(live_cluster, rbd_victim) != before


@pytest.mark.ceph
def test_dstore_profile_on_an_existing_cluster_uses_its_own_scratch_image_and_removes_it(
    live_cluster: cluster.ClusterRef, capsys: pytest.CaptureFixture[str]
) -> None:
    images = set(rbd(live_cluster, "ls", live_cluster.pool, check=True).stdout.split())
    assert main(profile(live_cluster)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["setup"]["image"].startswith("vmio-scratch-") and out["points"][0]["iops"] > 0
    assert set(rbd(live_cluster, "ls", live_cluster.pool, check=True).stdout.split()) == images


@pytest.mark.ceph
def test_rbd_targets_and_rbd_backings_refuse_an_image_holding_data(
    live_cluster: cluster.ClusterRef, rbd_victim: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = image_digest(live_cluster, rbd_victim)
    pool, conf = live_cluster.pool, live_cluster.conf
    workload = '[[workload]]\nname = "w"\nrw = "randwrite"\nbs = "4k"\nruntime = "1s"\n'
    targets = {
        "rbd": f'name = "r"\nkind = "rbd"\npool = "{pool}"\nimage = "{rbd_victim}"\nconf = "{conf}"\n',
        "backing": f'name = "q"\nkind = "qemu"\nbacking = ["rbd:{pool}/{rbd_victim}"]\nconf = "{conf}"\nsize = "4M"\n',
    }
    for kind, target in targets.items():
        spec = tmp_path / f"{kind}.toml"
        spec.write_text(f'[campaign]\nname = "{kind}"\n\n[[target]]\n{target}\n{workload}')
        assert main(["run", str(spec), "--db", str(tmp_path / f"{kind}.db")]) == 3, kind
        err = capsys.readouterr().err
        assert f"--destroy-data rbd:{pool}/{rbd_victim}" in err and "Traceback" not in err, err
    assert image_digest(live_cluster, rbd_victim) == before


# Part 2: the throwaway cluster --------------------------------------------------------------------------


@pytest.mark.ceph
def test_the_throwaway_cluster_refuses_a_client_without_its_key(
    live_cluster: cluster.ClusterRef, tmp_path: Path
) -> None:
    assert live_cluster.root is not None
    assert live_cluster.root.stat().st_mode & 0o777 == 0o700
    assert (live_cluster.root / "keyring").stat().st_mode & 0o777 == 0o600
    mon_host = next(
        line.split("=", 1)[1].strip()
        for line in live_cluster.conf.read_text().splitlines()
        if line.startswith("mon host")
    )
    keyed = subprocess.run(["ceph", "-c", str(live_cluster.conf), "--connect-timeout", "15", "osd", "ls"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert keyed.returncode == 0 and keyed.stdout.split(), keyed.stderr  # the port answers a keyed client
    for auth in ("cephx", "none"):  # no key; or no authentication at all
        conf = tmp_path / f"{auth}.conf"
        conf.write_text(f"[global]\nmon host = {mon_host}\nauth client required = {auth}\n"
                        f"keyring = {tmp_path}/none\n")  # fmt: skip
        conf.chmod(0o644)
        tmp_path.chmod(0o755)
        unkeyed = nobody_runs(["ceph", "-c", str(conf), "--connect-timeout", "10", "osd", "ls"], timeout=60)
        assert unkeyed.returncode != 0 and not unkeyed.stdout.split(), (auth, unkeyed.stdout)


def test_dstore_up_refuses_a_folder_another_user_owns_or_can_write(
    open_scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    theirs = open_scratch / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    shared = open_scratch / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    below = shared / "cluster"  # below a folder anyone can write (not sticky)
    for folder in (theirs, shared, below):
        assert main(["dstore", "up", "--dir", str(folder), "--osds", "1"]) == 3
        err = capsys.readouterr().err
        assert "refusing --dir" in err and "another user" in err and "Traceback" not in err
        assert not (folder / "ceph.conf").exists() and not below.exists()


def test_without_the_folder_rule_dstore_up_writes_into_another_users_folder(
    open_scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = open_scratch / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    written: list[bool] = []

    def stop_before_daemons(runner: object, layout: object, deadline: float) -> None:
        written.append((theirs / "ceph.conf").is_file())
        raise KeyboardInterrupt  # nothing started: `up` tears down what it wrote

    monkeypatch.setattr(cluster, "check_own_folder", lambda root: None)  # the rule switched off
    monkeypatch.setattr(cluster, "_bootstrap", stop_before_daemons)
    with pytest.raises(KeyboardInterrupt):
        cluster.up(theirs, osds=1)
    assert written == [True]  # the conf (and soon the keys) would have sat in nobody's folder


# Part 2: diagnose --live ---------------------------------------------------------------------------------


@pytest.fixture
def foreign_qemu(open_scratch: Path) -> Iterator[tuple[int, socket.socket]]:
    """A process of ``nobody`` named qemu-system-x86_64 whose command line names a QMP socket of its
    choosing; the socket listens (root's test holds it) to see whether vmio connects."""
    path = open_scratch / "chosen.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(4)
    listener.setblocking(False)
    proc = subprocess.Popen([*NOBODY, "bash", "-c", f'exec -a qemu-system-x86_64 /usr/bin/python3 -c "import time; time.sleep(60)" '
             f'-name evil -qmp "unix:{path},server=on,wait=off"'])  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while "qemu-system" not in " ".join(cmdline(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield proc.pid, listener
    finally:
        proc.kill()
        proc.wait(10)
        listener.close()


def connected(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def test_diagnose_live_contacts_no_qemu_of_another_user_unless_named(
    foreign_qemu: tuple[int, socket.socket],
) -> None:
    pid, listener = foreign_qemu
    asked: list[int] = []

    def record(proc: QemuProcess) -> Monitor:  # other QEMUs on this shared host are not disturbed
        asked.append(proc.pid)
        raise ToolError("not asked in this test")

    vms = diagnose_live(0.2, Seams(open_monitor=record))
    assert pid not in {vm.proc.pid for vm in vms} and pid not in asked and not connected(listener)
    named = diagnose_live(0.2, Seams(), pids=[pid])  # named with --pid: asked, over its QMP socket
    assert [vm.proc.pid for vm in named] == [pid] and connected(listener)
    trusting = Seams(open_monitor=record, trusted=frozenset({0, os.getuid(), 65534}))  # the rule off
    diagnose_live(0.2, trusting)
    assert pid in asked


# -- Part 4: what vmio opens, executes and stores (issue 37) ------------------------------------------------
# What vmio opens, executes and stores is what it checked. docs/security.md, "Part 4", lists each rule.


def data_file(path: Path, size: int = 4 << 20) -> Path:
    """Somebody's data: random bytes, no filesystem or partition signature, no vmio mark."""
    path.write_bytes(os.urandom(size))
    return path


@contextlib.contextmanager
def attached(path: Path) -> Iterator[str]:
    dev = subprocess.check_output(["losetup", "-f", "--show", str(path)], text=True, timeout=30).strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False, timeout=30)


@contextlib.contextmanager
def mounted(device: str, at: Path) -> Iterator[Path]:
    at.mkdir()
    subprocess.run(["mount", device, str(at)], check=True, timeout=60)
    try:
        yield at
    finally:
        subprocess.run(["umount", str(at)], check=False, timeout=60)


@RULE
@pytest.mark.parametrize("where", ["data-file", "file-on-ext4"])
def test_a_loop_device_is_judged_by_its_backing_file(
    rule: str,
    where: str,
    ext4: str,
    scratch: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``vmio run job.fio --target /dev/loopN`` over a file holding data (no signature anywhere): refused
    as that file named directly is; with the backing rule switched off the data is overwritten."""
    # file-on-ext4: the backing file lies in a mounted ext4 (itself on a loop device)
    place = contextlib.nullcontext(scratch) if where == "data-file" else mounted(ext4, scratch / "mnt")
    with place as folder:
        data = data_file(folder / "someones.img")
        before = checksum(data)
        job = tmp_path / "w.fio"
        job.write_text("[w]\nrw=randwrite\nbs=4k\ndirect=1\nioengine=psync\n")
        if rule == "off":
            monkeypatch.setattr(safety, "backing_reasons", lambda *a, **k: [])
        with attached(data) as dev:
            code = main(
                ["run", str(job), "--target", dev, "--runtime", "0.2s", "--db", str(tmp_path / "l.db")]
            )
            err = capsys.readouterr().err
            named_directly = main(["run", str(job), "--target", str(data), "--runtime", "0.2s",
                                   "--db", str(tmp_path / "direct.db")])  # fmt: skip  # not a re-run of l.db's
        after = checksum(data)
    assert named_directly == 3  # the file named directly: refused either way
    if rule == "on":
        refused_line = [line for line in err.splitlines() if "refusing" in line]
        assert code == 3 and f"its backing file {data}" in err and len(refused_line) == 1, err
        assert after == before
    else:
        assert code == 0 and after != before


def synthetic_sysfs(root: Path, holder: str, member: str) -> tuple[Path, Path, Path]:
    """A /sys, /proc and /dev where ``holder`` (dm-0 or md0) is built on ``member``, whose bytes hold a real
    ext4 (made by mkfs.ext4, found by blkid): this host has no device-mapper or md to build them."""
    sys_root, proc_root, dev_root = root / "sys", root / "proc", root / "dev"
    for name in (holder, member):
        (sys_root / "block" / name).mkdir(parents=True)
        (sys_root / "class" / "block").mkdir(parents=True, exist_ok=True)
        (sys_root / "class" / "block" / name).symlink_to(sys_root / "block" / name)
    (sys_root / "block" / holder / "slaves").mkdir()
    (sys_root / "block" / holder / "slaves" / member).symlink_to(sys_root / "block" / member)
    (sys_root / "block" / member / "holders").mkdir()
    (sys_root / "block" / member / "holders" / holder).symlink_to(sys_root / "block" / holder)
    (proc_root / "self").mkdir(parents=True)
    (proc_root / "self" / "mounts").write_text("")
    (proc_root / "swaps").write_text("")
    dev_root.mkdir()
    with open(dev_root / holder, "wb") as f:
        f.truncate(8 << 20)  # blank where the holder starts: its own signature check finds nothing
    with open(dev_root / member, "wb") as f:
        f.truncate(8 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(dev_root / member)], check=True, timeout=60)
    return sys_root, proc_root, dev_root


@RULE
@pytest.mark.parametrize(("holder", "member"), [("dm-0", "sdz"), ("md0", "loop9")])
def test_device_mapper_and_md_devices_are_judged_by_their_members(
    rule: str, holder: str, member: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need("mkfs.ext4")
    sys_root, proc_root, dev_root = synthetic_sysfs(tmp_path, holder, member)
    if rule == "off":
        monkeypatch.setattr(safety, "members", lambda *a, **k: [])
    reasons = safety.data_on_device(str(dev_root / holder), Runner(), sys_root, proc_root)
    if rule == "on":
        assert reasons == [f"its member {member}: it has a ext4 filesystem signature"]
        assert safety.data_on_device(str(dev_root / holder), Runner(), sys_root, proc_root,
                                     destroy=[str(dev_root / member)]) == []  # fmt: skip
    else:
        assert reasons == []  # the holder's own first bytes are blank


@RULE
def test_a_partition_is_judged_by_its_disk(
    rule: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blank partition of a disk holding a partition table (and so other partitions' data) is refused.
    Synthetic /sys: this host's loop devices show no partitions (no partition scan in this container)."""
    sys_root, dev_root = tmp_path / "sys", tmp_path / "dev"
    (sys_root / "block" / "sdz" / "sdz1").mkdir(parents=True)
    (sys_root / "block" / "sdz" / "sdz1" / "partition").write_text("1\n")
    (sys_root / "class" / "block").mkdir(parents=True)
    (sys_root / "class" / "block" / "sdz").symlink_to(sys_root / "block" / "sdz")
    (sys_root / "class" / "block" / "sdz1").symlink_to(sys_root / "block" / "sdz" / "sdz1")
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mounts").write_text("")
    (tmp_path / "proc" / "swaps").write_text("")
    dev_root.mkdir()
    with open(dev_root / "sdz", "wb") as f:  # an MBR with one Linux partition of 8 MiB at 1 MiB, by hand
        f.truncate(32 << 20)
        f.seek(446)
        f.write(struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 16384))
        f.seek(510)
        f.write(b"\x55\xaa")
    with open(dev_root / "sdz1", "wb") as f:
        f.truncate(8 << 20)
    if rule == "off":
        monkeypatch.setattr(blockdev, "_disk_of", lambda name, sys_root: name)
    reasons = safety.data_on_device(str(dev_root / "sdz1"), Runner(), sys_root, tmp_path / "proc")
    if rule == "on":
        assert "it has a dos partition table" in reasons, reasons
    else:
        assert reasons == []


# Executed and handed over: only what no other user could have changed


def planted_qemu(folder: Path, proof: Path) -> Path:
    """``nobody``'s "QEMU": it writes who ran it into ``proof`` (a file nobody may write, so only a
    privileged run can), then answers like QEMU."""
    script = f"#!/bin/sh\nid > {proof} 2>/dev/null\necho 'QEMU emulator version 10.0.0'\n"
    return hostile(folder, "qemu-system-x86_64", script)


@RULE
def test_a_qemu_binary_another_user_owns_is_not_run(
    rule: str, pub: Path, scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``qemu = "PUB/qemu-system-x86_64"`` in a spec: nobody's program must not run as root."""
    proof = scratch / "ran"
    binary = planted_qemu(pub, proof)
    as_nobody("chmod", "755", str(binary))
    spec = tmp_path / "q.toml"
    spec.write_text(
        f'[campaign]\nname = "q"\n[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["{scratch}/d.img"]\n'
        f'size = "8M"\nqemu = "{binary}"\n[[workload]]\nname = "w"\nrw = "randread"\nruntime = "1s"\n'
    )
    if rule == "on":
        code = main(["run", str(spec), "--db", str(tmp_path / "q.db")])
        refused(capsys, code, str(pub), "nobody")
        assert not proof.exists()
    else:
        monkeypatch.setattr(builds, "check_trusted", no_check)
        builds.resolve(str(binary))  # what preflight does first
        assert proof.read_text().startswith("uid=0(root)")


@RULE
@pytest.mark.parametrize("variable", ["VMIO_QEMU_CACHE", "XDG_CACHE_HOME"])
def test_a_qemu_build_cache_another_user_controls_is_not_run(
    rule: str, variable: str, pub: Path, scratch: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``VMIO_QEMU_CACHE`` or ``XDG_CACHE_HOME`` naming nobody's folder: ``vmio qemu list`` runs nothing
    from it."""
    proof = scratch / "ran"
    root = pub / "vmio" / "qemu" if variable == "XDG_CACHE_HOME" else pub
    as_nobody("mkdir", "-p", str(root / "10.0.0"))
    binary = planted_qemu(root / "10.0.0", proof)
    as_nobody("chmod", "755", str(binary))
    manifest = {"version": "10.0.0", "path": str(binary), "data_dirs": [], "env": {}}
    hostile(root / "10.0.0", "build.json", json.dumps(manifest))
    monkeypatch.setenv(variable, str(pub))
    if rule == "off":  # both places: the cache's manifests and binaries, and the probe that runs them
        monkeypatch.setattr(builds, "check_trusted", no_check)
        monkeypatch.setattr(qemu_caps, "check_trusted", no_check)
    code = main(["qemu", "list", "--json"])
    err = capsys.readouterr().err
    if rule == "on":
        assert code == 3 and "nobody" in err and str(pub) in err and err.count("\n") == 1, err
        assert not proof.exists()
    else:
        assert proof.read_text().startswith("uid=0(root)")


@RULE
def test_a_guest_image_from_a_cache_another_user_controls_is_not_booted(
    rule: str, pub: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A guest image folder in nobody's cache (``XDG_CACHE_HOME``): its kernel would boot as root's VM."""
    folder = pub / "guest-key"
    as_nobody("mkdir", str(folder))
    manifest = {"key": "k", "versions": {"kernel": "1", "busybox": "1", "fio": "1", "init": "1"},
                "size": 1, "modules": []}  # fmt: skip
    hostile(folder, "manifest.json", json.dumps(manifest))
    hostile(folder, "vmlinuz", "not a kernel")
    if rule == "off":
        monkeypatch.setattr(guest_image, "check_trusted", no_check)
        assert guest_image.load(folder).kernel == folder / "vmlinuz"
        return
    with pytest.raises(UnsafeTargetError, match="belongs to nobody"):
        guest_image.load(folder)


# The folder rule reads POSIX ACLs


@pytest.fixture
def acl_folder() -> Iterator[Path]:
    """A root-owned 0755 folder whose POSIX ACL lets ``nobody`` write (``setfacl -m u:nobody:rwx``)."""
    need("setfacl")
    base = Path("/var/tmp") / f"vmio-acl-{os.getpid()}-{os.urandom(3).hex()}"
    base.mkdir(mode=0o755)
    subprocess.run(["setfacl", "-m", "u:nobody:rwx", str(base)], check=True, timeout=30)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@RULE
def test_a_folder_an_acl_lets_another_user_write_is_refused(
    rule: str, acl_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Mode 0755, owner root, but ``u:nobody:rwx``: nobody can swap the target (see the race below)."""
    assert stat.S_IMODE(acl_folder.stat().st_mode) & 0o022 == 0o020  # the mask, not a group grant
    as_nobody("touch", str(acl_folder / "nobody-was-here"))  # the kernel honours the ACL
    if rule == "off":
        monkeypatch.setattr(grants, "acl_entries", lambda *a, **k: [])  # mode bits only, as before
    code = main(["run", str(host_spec(tmp_path, f"{acl_folder}/t.img")), "--db", str(tmp_path / "a.db")])
    if rule == "on":
        refused(capsys, code, str(acl_folder), "ACL lets nobody write")
    else:
        assert code == 0


SWAPPER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, until = sys.argv[1].encode(), sys.argv[2].encode(), time.monotonic() + float(sys.argv[3])
while time.monotonic() < until:  # RENAME_EXCHANGE: the target and the link trade places, atomically
    libc.renameat2(-100, a, -100, b, 2)
"""


@RULE
def test_the_target_fio_opens_is_the_one_vmio_checked(
    rule: str, acl_folder: Path, victim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nobody`` (let in by the ACL; the folder rule switched off here) swaps the target for a link to a
    root-only file in a tight loop while the points run. vmio holds the target it checked and fio opens
    that object (``/proc/PID/fd/N``): the victim stays intact over 50 points. With the target opened by name
    again (the hold switched off), fio writes through the link."""
    monkeypatch.setattr(grants, "acl_entries", lambda *a, **k: [])  # nobody gets past the folder rule
    target = acl_folder / "t.img"
    assert (
        main(["run", str(host_spec(tmp_path, str(target), name="make")), "--db", str(tmp_path / "m.db")]) == 0
    )
    points = 50 if rule == "on" else 3
    spec = host_spec(tmp_path, str(target), name="race", extra='ioengine = "psync"\n').read_text()
    spec = spec.replace('runtime = "1s"', 'runtime = "50ms"\nramp = "0s"')
    (tmp_path / "race.toml").write_text(spec.replace("[[target]]", f"repetitions = {points}\n[[target]]"))
    db = str(tmp_path / "race.db")
    link = acl_folder / "link"
    as_nobody("ln", "-s", str(victim), str(link))
    before = checksum(victim)
    if rule == "off":

        @contextlib.contextmanager
        def by_name(path: str) -> Iterator[Any]:
            class ByName:
                here = path
                fio_path = path

            yield ByName()

        monkeypatch.setattr(host_module, "hold", by_name)
    swapper = subprocess.Popen([*NOBODY, sys.executable, "-c", SWAPPER, str(target), str(link), "120"])
    try:
        codes, done = [], 0
        # on: until all 50 points ran on the target vmio holds; off: its points again (--force) until fio,
        # opening the name each time, has written through the link (each open is a coin toss)
        while (done < points or rule == "off") and len(codes) < 60 and checksum(victim) == before:
            run = ["run", str(tmp_path / "race.toml"), "--db", db, "--interval", "100ms"]
            codes.append(main(run + (["--force"] if rule == "off" else [])))  # 3: a check saw the link
            with Store(db) as store:
                done = len(store.done_keys("race"))
        assert set(codes) <= {0, 3}, codes
    finally:
        swapper.kill()
        swapper.wait(10)
    if rule == "on":
        assert done == points and checksum(victim) == before
    else:
        assert checksum(victim) != before


# A Ceph configuration or keyring another user wrote


@RULE
def test_a_ceph_conf_another_user_wrote_is_not_handed_to_fio(
    rule: str, pub: Path, victim: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """nobody's ``ceph.conf`` with ``log file = ROOT-ONLY-FILE``: fio's rbd engine (no cluster needed)
    would append its log to root's file."""
    need("fio")
    conf = hostile(pub, "ceph.conf", f"[global]\nmon host = 127.0.0.1:1\nclient mount timeout = 2\n"
                   f"log file = {victim}\nauth client required = none\n")  # fmt: skip
    spec = tmp_path / "r.toml"
    spec.write_text(
        f'[campaign]\nname = "r"\n[[target]]\nname = "r"\nkind = "rbd"\npool = "p"\nimage = "i"\n'
        f'conf = "{conf}"\n[[workload]]\nname = "w"\nrw = "randread"\nruntime = "1s"\n'
    )
    before = checksum(victim)
    if rule == "off":
        monkeypatch.setattr(cephclient, "check_conf", no_check)
    code = main(["run", str(spec), "--db", str(tmp_path / "r.db")])
    if rule == "on":
        refused(capsys, code, str(conf), "nobody")
        assert checksum(victim) == before
    else:
        assert checksum(victim) != before  # librados, inside root's fio, wrote its log there


@RULE
def test_a_keyring_another_user_wrote_is_not_used(
    rule: str, pub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nmon host = 127.0.0.1:1\n")
    keyring = hostile(pub, "keyring", "[client.admin]\n\tkey = AQBsecretsecretsecretsecretsecret==\n")
    client = cephclient.CephClient("admin", keyring)
    if rule == "off":
        monkeypatch.setattr(cephclient, "check_trusted", no_check)
        with cephclient.client_conf(conf, client) as used:
            assert f"keyring = {keyring}" in used.read_text()
        return
    with pytest.raises(UnsafeTargetError, match="belongs to nobody"):
        cephclient.check_conf(conf, client)


# Errors name a file, they do not quote it


@RULE
@pytest.mark.parametrize("kind", ["shadow", "keyring"])
def test_an_error_names_a_file_it_does_not_quote(
    rule: str, kind: str, scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``[[workload]] fio = "/etc/shadow"`` (a root-only file of that shape here) and a Ceph keyring: the
    error names the file and line, never a byte of what is in it."""
    secret = "AQBsecretsecretsecretsecretsecret=="
    text = {
        "shadow": f"root:$6${secret}:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n",
        "keyring": f'[client.admin]\n\tkey = {secret}\n\tcaps mon = "allow *"\n',
    }[kind]
    path = scratch / kind
    path.write_text(text)
    path.chmod(0o600)
    spec = tmp_path / "f.toml"
    spec.write_text(f'[campaign]\nname = "f"\n[[target]]\nname = "t"\npath = "{scratch}/t.img"\nsize = "1M"\n'
                    f'[[workload]]\nname = "w"\nfio = "{path}"\n')  # fmt: skip
    if rule == "off":
        monkeypatch.setattr(fiofile, "quotable", lambda key: True)
    code = main(["run", str(spec), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and err.count("\n") == 1, err
    if rule == "on":
        assert "secret" not in err and "bin:" not in err and "allow" not in err, err
    elif kind == "keyring":
        assert secret in err  # the keyring's key printed, as before
    # (a shadow-shaped file has no section: its message quoted nothing before the line was named only)


# Imports are finite or refused


def fio_json(tmp_path: Path, iops: str) -> Path:
    """A real fio json+ document (the example a client/server run wrote) with one figure replaced."""
    text = (Path(__file__).parent / "data" / "fio-examples" / "client-server-2hosts.jsonplus").read_text()
    head, sep, rest = text.partition('"iops" : ')
    number = rest.split(",", 1)[0]
    path = tmp_path / f"iops-{iops}.json"
    path.write_text(head + sep + iops + rest[len(number) :])
    return path


@RULE
@pytest.mark.parametrize("iops", ["1e999", "NaN", "-1"])
def test_an_import_is_finite_or_refused(
    rule: str, iops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    bad = fio_json(tmp_path, iops)
    if rule == "off":
        monkeypatch.setattr(imported, "check_numbers", lambda doc, where, at="": None)
        monkeypatch.setattr(imported, "check_record", lambda rec, where: None)
        monkeypatch.setattr(imported.import_checks, "check_document", lambda doc, path: None)
    code = main(["import", str(bad), "--campaign", "bad", "--db", str(db)])
    err = capsys.readouterr().err
    if rule == "on":
        assert code == 2 and str(bad) in err and "iops" in err and "nothing was imported" in err, err
        assert not db.exists()  # no store, no campaign, no row
        assert main(["import", str(fio_json(tmp_path, "5")), "--campaign", "good", "--db", str(db)]) == 0
        assert main(["import", str(bad), "--campaign", "bad", "--db", str(db)]) == 2
        capsys.readouterr()
        assert main(["ls", "--db", str(db), "--json"]) == 0
        assert [c["name"] for c in json.loads(capsys.readouterr().out)] == ["good"]
    else:
        # stored (or half-stored: the store holds what it cannot read), or refused only after the write by the
        # store's own check of what it holds (NaN), never before the transaction as the rule refuses it
        assert code == 0 or db.exists() or "nothing was imported" not in err, err


@RULE
def test_a_damaged_row_names_its_campaign_and_the_command_that_removes_it(
    rule: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store an older vmio (or another program) left with ``read_iops = inf`` in one campaign: every
    command names that campaign and ``vmio rm``; after it, the store reads again."""
    db = str(tmp_path / "s.db")
    assert main(["import", str(fio_json(tmp_path, "5")), "--campaign", "good", "--db", db]) == 0
    assert main(["import", str(fio_json(tmp_path, "6")), "--campaign", "old one", "--db", db]) == 0
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE run SET read_iops = 9e999 WHERE campaign_id = "
                    "(SELECT id FROM campaign WHERE name = 'old one')")  # fmt: skip
    capsys.readouterr()
    if rule == "off":
        monkeypatch.setattr(integrity, "campaign_of", lambda *a: None)
    commands = [["ls"], ["show", "good"], ["report", "good", "-o", str(tmp_path / "r.html")],
                ["export", "good", "--format", "csv", "-o", str(tmp_path / "e.csv")]]  # fmt: skip
    for argv in commands:
        assert main([*argv, "--db", db]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "read_iops = inf" in err, err
        if rule == "on":
            assert "campaign 'old one'" in err and f"`vmio rm 'old one' --db {db}`" in err, err
        else:
            assert "old one" not in err
    if rule == "on":
        assert main(["rm", "old one", "--db", db]) == 0
        assert main(["show", "good", "--db", db, "--json"]) == 0
