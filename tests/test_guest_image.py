"""The guest image: module resolution, cpio layout, build and cache, the CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from io import BytesIO
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.errors import InputError
from vmio.guest import image, stubs
from vmio.guest.cpio import CpioWriter
from vmio.guest.inputs import APT_PLACES, KernelSource, Versions, debian_kernel_package, shared_libraries
from vmio.guest.kmod import modinfo_depends, module_name, resolve_modules
from vmio.qemu import probe_caps
from vmio.system.process import Runner

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


# -- a fast boot: fio's engine libraries stubbed, a PVH kernel, busybox's links in the image -----------


@pytest.mark.skipif(not stubs.available(), reason="needs gcc")
def test_fio_runs_on_the_stub_libraries_and_a_stubbed_engine_says_so(tmp_path: Path) -> None:
    runner = Runner()
    fio = Path(shutil.which("fio") or "fio")
    replaced = stubs.build(runner, fio, shared_libraries(runner, str(fio)), tmp_path / "stubs")
    assert {"librbd.so.1", "librados.so.2", "libgfapi.so.0"} <= set(replaced)
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path / "stubs")}
    # the dynamic loader (fio binds every symbol at start) resolves fio against the stubs alone
    ldd = subprocess.run(["ldd", str(fio)], env=env, capture_output=True, text=True, timeout=60).stdout
    assert f"librbd.so.1 => {tmp_path / 'stubs' / 'librbd.so.1'}" in ldd
    assert "libceph-common" not in ldd and "libicudata" not in ldd
    version = subprocess.run([str(fio), "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("fio-")
    job = [str(fio), "--name=x", "--ioengine=rbd", "--pool=p", "--rbdname=i", "--size=1M", "--clientname=a"]
    done = subprocess.run(job, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 127
    assert "fio called into librados.so.2, which the guest image leaves out" in done.stderr


def test_stub_version_script_keeps_fio_s_symbol_versions() -> None:
    code, script = stubs.source("libgfapi.so.0", {"glfs_new": "GFAPI_3.4.0", "glfs_fsync": "GFAPI_6.0"})
    assert "void glfs_new(void)" in code and "void glfs_fsync(void)" in code
    assert script.splitlines() == [
        "GFAPI_3.4.0 { global: glfs_new; local: *; };",
        "GFAPI_6.0 { global: glfs_fsync; } GFAPI_3.4.0;",
    ]
    assert stubs.source("librbd.so.1", {"rbd_open": ""})[1] == "{ global: rbd_open; local: *; };\n"


def test_the_lean_image_has_its_own_cache_key() -> None:
    runner = Runner()
    source = KernelSource(kernel=Path(shutil.which("fio") or "/bin/sh"))  # any file: no download
    assert image.versions(source, runner, lean=True).key() != image.versions(source, runner, lean=False).key()


@pytest.mark.qemu
@needs_qemu
def test_image_is_small_and_links_busybox(tmp_path_factory: pytest.TempPathFactory) -> None:
    built = session_guest(tmp_path_factory)
    entries = read_cpio(built.initrd.read_bytes())
    assert built.initrd.stat().st_size < 20 << 20  # was ~85 MiB with fio's real engine libraries
    rbd = next(data for name, (_, data) in entries.items() if name.endswith("/librbd.so.1"))
    assert len(rbd) < 64 << 10
    assert entries["bin/mount"][1] == b"/bin/busybox" and entries["usr/bin/awk"][1] == b"/bin/busybox"


@pytest.mark.qemu
@needs_qemu
@pytest.mark.skipif(
    shutil.which("lz4") is None, reason="needs lz4 (Debian's kernel payload is LZ4; make test installs it)"
)
def test_the_kernel_boots_through_pvh(tmp_path_factory: pytest.TempPathFactory) -> None:
    built = session_guest(tmp_path_factory)
    assert built.boot_kernel.name == "vmlinux"
    notes = subprocess.run(
        ["readelf", "-n", str(built.boot_kernel)], capture_output=True, text=True, timeout=60
    )
    assert re.search(r"Xen\s+0x[0-9a-f]+\s+Unknown note type: \(0x00000012\)", notes.stdout)


class CountingRunner(Runner):
    """The real runner, counting the ``apt-cache`` runs."""

    def __init__(self) -> None:
        super().__init__()
        self.apt = 0

    def run(self, argv, **kwargs):  # type: ignore[no-untyped-def]
        self.apt += argv[0] == "apt-cache"
        return super().run(argv, **kwargs)


def test_apts_answer_for_the_kernel_is_remembered_while_apts_state_is_unchanged(tmp_path: Path) -> None:
    asked = debian_kernel_package(Runner())  # apt-cache's own answer, nothing remembered
    etc = tmp_path / "etc-apt"
    (etc / "preferences.d").mkdir(parents=True)
    places = (str(etc), *APT_PLACES[1:])
    kept = tmp_path / "apt-kernel.json"
    runner = CountingRunner()
    assert debian_kernel_package(runner, kept, places) == asked and runner.apt == 1
    assert debian_kernel_package(runner, kept, places) == asked and runner.apt == 1  # remembered
    (etc / "preferences.d" / "pin").write_text("Package: *\n")  # apt's configuration changed: asked again
    assert debian_kernel_package(runner, kept, places) == asked and runner.apt == 2
    assert debian_kernel_package(runner, kept, places) == asked and runner.apt == 2
    forged = {**json.loads(kept.read_text()), "image": "linux-image-forged", "version": "0"}
    kept.write_text(json.dumps(forged))
    kept.chmod(0o666)  # another user could have written it: not believed
    assert debian_kernel_package(runner, kept, places) == asked and runner.apt == 3
    kept.chmod(0o644)
    assert debian_kernel_package(runner, kept, places) == asked and runner.apt == 3  # written anew
