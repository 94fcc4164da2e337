"""Build and cache the boot-to-fio guest: a kernel plus one initramfs holding busybox, fio and drivers.

The image lives in ``$XDG_CACHE_HOME/vmio/guest/<key>/`` (default ``~/.cache``) as ``vmlinuz``,
``initramfs.img`` and ``manifest.json``; the key hashes the inputs' versions (see ``Versions``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from vmio.errors import InputError
from vmio.fio import run as fiorun
from vmio.guest import inputs, kmod, pvh, stubs
from vmio.guest.cpio import CpioWriter
from vmio.guest.kmod import read_module, resolve_modules
from vmio.system.files import check_place, check_trusted
from vmio.system.process import Runner

# Bump when the image layout changes (2: uncompressed initramfs; 3: fio's engine libraries stubbed,
# busybox's applet links in the image; 4: an ELF vmlinux for PVH boot beside the bzImage; 5: the guest_block
# tracer ``vmio-trace``).
FORMAT = 5
FIO_PORT = 8765
# in the cache's root: apt's answer for the kernel package, kept while apt's state is unchanged
APT_ANSWER = "apt-kernel.json"
READY_MARKER = "VMIO-READY"


@dataclass(frozen=True)
class GuestImage:
    """A built guest: where its files are, its key, size and the versions it was built from."""

    path: Path
    key: str
    versions: inputs.Versions
    size: int
    modules: tuple[str, ...]

    @property
    def kernel(self) -> Path:
        return self.path / "vmlinuz"

    @property
    def boot_kernel(self) -> Path:
        """What QEMU's ``-kernel`` gets: the PVH-bootable ELF when the image has one, else the bzImage."""
        elf = self.path / "vmlinux"
        return elf if elf.is_file() else self.kernel

    @property
    def initrd(self) -> Path:
        return self.path / "initramfs.img"

    def to_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "key": self.key,
            "kernel": str(self.kernel),
            "boot_kernel": str(self.boot_kernel),
            "initrd": str(self.initrd),
            "size": self.size,
            "versions": asdict(self.versions),
            "modules": list(self.modules),
            "fio_port": FIO_PORT,
            "ready_marker": READY_MARKER,
        }


def cache_root(env: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/vmio/guest`` (default ``~/.cache/vmio/guest``)."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".cache")
    return Path(base) / "vmio" / "guest"


def script(name: str) -> str:
    return (resources.files("vmio.guest") / name).read_text()


def versions(
    source: inputs.KernelSource, runner: Runner, lean: bool = True, root: Path | None = None
) -> inputs.Versions:
    """The inputs' versions (the cache key); apt's answer for the kernel kept in the cache ``root``."""
    modules = ",".join(kmod.WANTED_MODULES)
    scripts = hashlib.sha256(
        (
            script("init.sh")
            + script("agent.sh")
            + script("trace.sh")
            + f"format={FORMAT}"
            + f"modules={modules}"
            + f"stubs={stubs.fingerprint() if _stubbing(lean) else 'none'}"
            + (f"pvh={pvh.tools_for_pvh()}" if lean else "lean=no")
        ).encode()
    )
    return inputs.Versions(
        kernel=source.version(runner, (root or cache_root()) / APT_ANSWER),
        busybox=inputs.busybox_version(runner),
        fio=inputs.fio_version(runner),
        init=scripts.hexdigest()[:16],
    )


def _stubbing(lean: bool) -> bool:
    return lean and stubs.available()


def load(path: Path) -> GuestImage:
    """The image whose manifest is in ``path``; its files boot as root's VM, so no other user may have been
    able to change them or their folders (``files.check_trusted``, exit 3)."""
    for part in (path, path / "manifest.json", path / "vmlinuz", path / "vmlinux", path / "initramfs.img"):
        if part == path or part.exists():
            check_trusted(part, "the cached guest image", verb="boot")
    data = json.loads((path / "manifest.json").read_text())
    return GuestImage(
        path=path,
        key=data["key"],
        versions=inputs.Versions(**data["versions"]),
        size=int(data["size"]),
        modules=tuple(data["modules"]),
    )


def find(
    source: inputs.KernelSource | None = None,
    *,
    root: Path | None = None,
    runner: Runner | None = None,
    lean: bool = True,
) -> GuestImage | None:
    """The cached image for the current inputs, or None when it has not been built."""
    runner = runner or Runner()
    key = versions(source or inputs.KernelSource(), runner, lean, root).key()
    path = (root or cache_root()) / key
    return load(path) if (path / "manifest.json").is_file() else None


def build(
    source: inputs.KernelSource | None = None,
    *,
    root: Path | None = None,
    force: bool = False,
    runner: Runner | None = None,
    lean: bool = True,
) -> GuestImage:
    """The guest image for the current inputs, built (into the cache) unless it is there already.

    ``lean=False`` builds the image as it was before its boot was made fast, for comparing boot
    times: the real libraries of fio's network engines instead of stubs (see ``stubs``; an ~85 MiB
    initramfs instead of ~8), no PVH ``vmlinux`` (see ``pvh``), busybox's links made at boot."""
    runner = runner or Runner()
    source = source or inputs.KernelSource()
    vers = versions(source, runner, lean, root)
    final = (root or cache_root()) / vers.key()
    if (final / "manifest.json").is_file() and not force:
        return load(final)
    check_place(final, new=True)  # the cache's folders (wherever XDG_CACHE_HOME puts it) are the user's own
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; a waiting one then finds the image
        if (final / "manifest.json").is_file() and not force:
            return load(final)
        return _build_locked(source, runner, vers, final, lean)


def _build_locked(
    source: inputs.KernelSource, runner: Runner, vers: inputs.Versions, final: Path, lean: bool
) -> GuestImage:
    with tempfile.TemporaryDirectory(prefix="build-", dir=final.parent) as tmp:
        work = Path(tmp)
        staged = work / "image"
        staged.mkdir()
        modules = _assemble(source, runner, work, staged, lean)
        size = sum(f.stat().st_size for f in staged.iterdir())
        image = GuestImage(final, vers.key(), vers, size, tuple(p.name for p in modules))
        manifest = {**image.to_json(), "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (staged / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if final.exists():
            shutil.rmtree(final)
        staged.rename(final)
    return load(final)


def _assemble(source: inputs.KernelSource, runner: Runner, work: Path, out: Path, lean: bool) -> list[Path]:
    if source.kernel is None:
        kernel, moddir = inputs.fetch_debian_kernel(runner, work)
        modules = resolve_modules(moddir)
    else:
        kernel = source.kernel
        modules = resolve_modules(source.modules) if source.modules else []
    shutil.copyfile(kernel, out / "vmlinuz")
    if lean:
        pvh.extract_pvh(kernel, out / "vmlinux")
    busybox = inputs.find_busybox(runner, work)
    fio = shutil.which("fio")
    if fio is None:
        raise InputError("fio is not installed; install the Debian package 'fio'")
    libs, replaced = _fio_libraries(runner, Path(fio), work / "stubs" if _stubbing(lean) else None)
    # Uncompressed: under TCG the guest kernel inflating the former ~90 MB cost ~1.4 s of CPU per boot
    # (gzip -1; zstd ~0.5 s); unpacking the ~8 MB it is now costs ~0.1 s.
    with open(out / "initramfs.img", "wb") as raw:
        writer = CpioWriter(raw)
        _write_tree(writer, busybox, Path(fio), libs, modules, replaced, applet_links=lean)
        writer.close()
    return modules


def _fio_libraries(runner: Runner, fio: Path, stub_dir: Path | None) -> tuple[list[Path], dict[Path, Path]]:
    """The libraries fio needs in the guest, and where each stub goes (stub file -> the real library's
    path, which it takes in the image). Without ``stub_dir``: the real libraries, nothing replaced."""
    libs = inputs.shared_libraries(runner, str(fio))
    if stub_dir is None:
        return libs, {}
    real = stubs.build(runner, fio, libs, stub_dir)
    env = {"LD_LIBRARY_PATH": str(stub_dir)}
    if not fiorun.loads(runner, str(fio), env):  # the loader refused a stub: keep the real libraries
        return libs, {}
    libs = inputs.shared_libraries(runner, str(fio), env=env)
    return libs, {stub_dir / name: path for name, path in real.items()}


def _write_tree(
    w: CpioWriter,
    busybox: Path,
    fio: Path,
    libs: list[Path],
    modules: list[Path],
    replaced: dict[Path, Path] | None = None,
    applet_links: bool = True,
) -> None:
    replaced = replaced or {}
    for d in (
        "bin",
        "sbin",
        "usr",
        "usr/bin",
        "usr/sbin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "run",
        "etc",
        "etc/vmio",
        "lib",
        "lib/modules",
    ):
        w.directory(d)
    w.char_device("dev/console", 5, 1)
    w.char_device("dev/null", 1, 3, 0o666)
    w.file("bin/busybox", busybox.read_bytes(), 0o755)
    w.symlink("bin/sh", "busybox")
    w.file("usr/bin/fio", fio.read_bytes(), 0o755)
    placed = [(replaced.get(lib, lib), lib) for lib in libs]  # (path in the guest, file read)
    for where, lib in placed:
        _parents(w, where.parent)
        w.file(str(where), lib.read_bytes(), 0o755)
    lib_dirs = ":".join(sorted({str(where.parent) for where, _ in placed}))
    # busybox's applets as links made here: ``busybox --install -s`` in the guest costs ~0.1 s under TCG.
    for applet in inputs.busybox_applets(busybox) if applet_links else []:
        w.symlink(applet, "/bin/busybox")
    w.file("init", script("init.sh").replace("@LD_LIBRARY_PATH@", lib_dirs).encode(), 0o755)
    w.file("bin/vmio-agent", script("agent.sh").encode(), 0o755)
    w.file("bin/vmio-trace", script("trace.sh").encode(), 0o755)
    listing = []
    for module in modules:
        name = f"lib/modules/{module.name.split('.ko')[0]}.ko"
        w.file(name, read_module(module))
        listing.append("/" + name)
    w.file("etc/vmio/modules", ("\n".join(listing) + "\n").encode() if listing else b"")


def _parents(w: CpioWriter, directory: Path) -> None:
    parts = directory.parts[1:]
    for i in range(1, len(parts) + 1):
        w.directory("/".join(parts[:i]))


def remove_stale(root: Path, keep: str) -> list[Path]:
    """Delete cached images other than ``keep``; return what was removed."""
    removed = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name != keep and (entry / "manifest.json").is_file():
            with contextlib.suppress(OSError):
                shutil.rmtree(entry)
                removed.append(entry)
    return removed
