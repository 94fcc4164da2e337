"""The guest image: module resolution, cpio layout, build and cache, the CLI."""

from __future__ import annotations

import json
import stat
from io import BytesIO
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.errors import InputError
from vmio.guest import image
from vmio.guest.cpio import CpioWriter
from vmio.guest.inputs import KernelSource, Versions
from vmio.guest.kmod import modinfo_depends, module_name, resolve_modules
from vmio.qemu import probe_caps

from qemu_support import needs_qemu, session_guest


def read_cpio(data: bytes) -> dict[str, tuple[int, bytes]]:
    """name -> (mode, data) for every entry of a newc archive (a reader independent of the writer)."""
    entries: dict[str, tuple[int, bytes]] = {}
    pos = 0
    while True:
        assert data[pos : pos + 6] == b"070701"
        fields = [int(data[pos + 6 + 8 * i : pos + 14 + 8 * i], 16) for i in range(13)]
        mode, filesize, namesize = fields[1], fields[6], fields[11]
        name_start = pos + 110
        name = data[name_start : name_start + namesize - 1].decode()
        body = name_start + namesize + (-(110 + namesize) % 4)
        if name == "TRAILER!!!":
            return entries
        entries[name] = (mode, data[body : body + filesize])
        pos = body + filesize + (-filesize % 4)


def test_cpio_writer_round_trip() -> None:
    out = BytesIO()
    writer = CpioWriter(out)
    writer.directory("/bin")
    writer.file("bin/hello", b"abcde", 0o755)
    writer.symlink("bin/sh", "busybox")
    writer.char_device("dev/console", 5, 1)
    writer.file("bin/hello", b"ignored duplicate")
    writer.close()
    entries = read_cpio(out.getvalue())
    assert entries["bin/hello"] == (stat.S_IFREG | 0o755, b"abcde")
    assert entries["bin/sh"][1] == b"busybox"
    assert stat.S_ISCHR(entries["dev/console"][0])
    assert stat.S_ISDIR(entries["bin"][0])


def test_module_name_normalises_dashes_and_suffixes() -> None:
    assert module_name("kernel/drivers/char/hw_random/virtio-rng.ko.xz") == "virtio_rng"
    assert module_name("nvme-core.ko") == "nvme_core"


def test_resolve_modules_reads_modules_dep_and_builtins(tmp_path: Path) -> None:
    kdir = tmp_path / "kernel"
    kdir.mkdir()
    for name in ("a.ko", "b-x.ko", "c.ko"):
        (kdir / name).write_bytes(b"")
    dep = "kernel/a.ko: kernel/b-x.ko kernel/c.ko\nkernel/b-x.ko: kernel/c.ko\nkernel/c.ko:\n"
    (tmp_path / "modules.dep").write_text(dep)
    (tmp_path / "modules.builtin").write_text("kernel/drivers/nvme.ko\n")
    order = resolve_modules(tmp_path, ("a", "nvme"))
    assert [p.name for p in order] == ["c.ko", "b-x.ko", "a.ko"]
    with pytest.raises(InputError, match="'missing' is neither built in"):
        resolve_modules(tmp_path, ("missing",))


def test_versions_key_changes_with_any_input() -> None:
    base = Versions("k1", "b1", "fio-3.33", "i1")
    others = [
        ("k2", "b1", "fio-3.33", "i1"),
        ("k1", "b2", "fio-3.33", "i1"),
        ("k1", "b1", "fio-3.34", "i1"),
        ("k1", "b1", "fio-3.33", "i2"),
    ]
    keys = {base.key(), *(Versions(*o).key() for o in others)}
    assert len(keys) == 5


def test_missing_kernel_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nonexistent"):
        image.build(KernelSource(kernel=tmp_path / "nonexistent"), root=tmp_path)


def test_cli_rejects_modules_without_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["guest", "build", "--initrd-modules", "/lib/modules"]) == 2
    assert "--initrd-modules needs --kernel" in capsys.readouterr().err


@pytest.mark.qemu
@needs_qemu
def test_build_makes_a_bootable_layout_and_caches(tmp_path_factory: pytest.TempPathFactory) -> None:
    built = session_guest(tmp_path_factory)
    assert built.kernel.stat().st_size > 1 << 20
    files = [built.kernel, built.initrd] + ([built.boot_kernel] if built.boot_kernel != built.kernel else [])
    assert built.size == sum(f.stat().st_size for f in files)
    assert built.versions.fio.startswith("fio-")
    entries = read_cpio(built.initrd.read_bytes())
    assert {"init", "bin/busybox", "usr/bin/fio", "bin/vmio-agent", "dev/console"} <= set(entries)
    assert "lib64/ld-linux-x86-64.so.2" in entries
    module_list = entries["etc/vmio/modules"][1].decode().split()
    names = [Path(m).name for m in module_list]
    for wanted in ("virtio_pci.ko", "virtio_blk.ko", "virtio_scsi.ko", "virtio_net.ko", "virtio_balloon.ko"):
        assert wanted in names
    assert names.index("virtio.ko") < names.index("virtio_blk.ko")  # dependencies load first
    for listed in module_list:
        deps = modinfo_depends(entries[listed.lstrip("/")][1])
        for dep in deps:  # every dependency is loaded earlier (or built in)
            if f"{dep}.ko" in names:
                assert names.index(f"{dep}.ko") < names.index(Path(listed).name)
    files = {f: f.stat().st_mtime_ns for f in built.path.rglob("*") if f.is_file()}
    again = session_guest(tmp_path_factory)
    # found by its key, not rebuilt: the same files, untouched (its speed is a goal in benchmarks/)
    assert again.key == built.key and again.path == built.path
    assert {f: f.stat().st_mtime_ns for f in again.path.rglob("*") if f.is_file()} == files


@pytest.mark.qemu
@needs_qemu
def test_cli_info_json_shows_the_cached_image(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    built = session_guest(tmp_path_factory)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg"))
    assert main(["guest", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["key"] == built.key and info["path"] == str(built.path) and info["size"] == built.size
    assert main(["guest", "probe", "--json", "--fresh"]) == 0
    probe = json.loads(capsys.readouterr().out)
    assert probe["guest"] == built.key and probe["qemu_version"] == probe_caps().version_string
    assert probe["accel"] in ("kvm", "tcg") and probe["reason"]
    stale = built.path.parent / "0123456789abcdef"
    stale.mkdir()
    (stale / "manifest.json").write_text("{}")
    assert main(["guest", "build", "--prune"]) == 0
    assert f"removed {stale}" in capsys.readouterr().out and not stale.exists() and built.path.exists()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("empty-cache")))
    assert main(["guest", "info"]) == 1
    assert "vmio guest build" in capsys.readouterr().out


@pytest.mark.qemu
@needs_qemu
def test_build_with_a_given_kernel_and_no_modules(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    debian = session_guest(tmp_path_factory)
    own = image.build(KernelSource(kernel=debian.kernel), root=tmp_path)
    assert own.key != debian.key and own.versions.kernel.startswith(f"file:{debian.kernel}")
    assert own.modules == () and own.kernel.read_bytes() == debian.kernel.read_bytes()
    entries = read_cpio(own.initrd.read_bytes())
    assert entries["etc/vmio/modules"][1] == b"" and "usr/bin/fio" in entries
