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
from vmio.guest import inputs, kmod
from vmio.guest.cpio import CpioWriter
from vmio.guest.kmod import read_module, resolve_modules
from vmio.system.process import Runner

FORMAT = 2  # bump when the image layout changes (2: uncompressed initramfs)
FIO_PORT = 8765
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
    def initrd(self) -> Path:
        return self.path / "initramfs.img"

    def to_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "key": self.key,
            "kernel": str(self.kernel),
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


def versions(source: inputs.KernelSource, runner: Runner) -> inputs.Versions:
    modules = ",".join(kmod.WANTED_MODULES)
    scripts = hashlib.sha256(
        (script("init.sh") + script("agent.sh") + f"format={FORMAT}" + f"modules={modules}").encode()
    )
    return inputs.Versions(
        kernel=source.version(runner),
        busybox=inputs.busybox_version(runner),
        fio=inputs.fio_version(runner),
        init=scripts.hexdigest()[:16],
    )


def load(path: Path) -> GuestImage:
    """The image whose manifest is in ``path``."""
    data = json.loads((path / "manifest.json").read_text())
    return GuestImage(
        path=path,
        key=data["key"],
        versions=inputs.Versions(**data["versions"]),
        size=int(data["size"]),
        modules=tuple(data["modules"]),
    )


def find(
    source: inputs.KernelSource | None = None, *, root: Path | None = None, runner: Runner | None = None
) -> GuestImage | None:
    """The cached image for the current inputs, or None when it has not been built."""
    runner = runner or Runner()
    key = versions(source or inputs.KernelSource(), runner).key()
    path = (root or cache_root()) / key
    return load(path) if (path / "manifest.json").is_file() else None


def build(
    source: inputs.KernelSource | None = None,
    *,
    root: Path | None = None,
    force: bool = False,
    runner: Runner | None = None,
) -> GuestImage:
    """The guest image for the current inputs, built (into the cache) unless it is there already."""
    runner = runner or Runner()
    source = source or inputs.KernelSource()
    vers = versions(source, runner)
    final = (root or cache_root()) / vers.key()
    if (final / "manifest.json").is_file() and not force:
        return load(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; a waiting one then finds the image
        if (final / "manifest.json").is_file() and not force:
            return load(final)
        return _build_locked(source, runner, vers, final)


def _build_locked(
    source: inputs.KernelSource, runner: Runner, vers: inputs.Versions, final: Path
) -> GuestImage:
    with tempfile.TemporaryDirectory(prefix="build-", dir=final.parent) as tmp:
        work = Path(tmp)
        staged = work / "image"
        staged.mkdir()
        modules = _assemble(source, runner, work, staged)
        size = sum(f.stat().st_size for f in staged.iterdir())
        image = GuestImage(final, vers.key(), vers, size, tuple(p.name for p in modules))
        manifest = {**image.to_json(), "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (staged / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if final.exists():
            shutil.rmtree(final)
        staged.rename(final)
    return load(final)


def _assemble(source: inputs.KernelSource, runner: Runner, work: Path, out: Path) -> list[Path]:
    if source.kernel is None:
        kernel, moddir = inputs.fetch_debian_kernel(runner, work)
        modules = resolve_modules(moddir)
    else:
        kernel = source.kernel
        modules = resolve_modules(source.modules) if source.modules else []
    shutil.copyfile(kernel, out / "vmlinuz")
    busybox = inputs.find_busybox(runner, work)
    fio = shutil.which("fio")
    if fio is None:
        raise InputError("fio is not installed; install the Debian package 'fio'")
    libs = inputs.shared_libraries(runner, fio)
    # Uncompressed: under TCG the guest kernel inflating ~90 MB costs ~1.4 s of CPU per boot (gzip -1;
    # zstd ~0.5 s), more than reading the larger file costs; the image is ~95 MB on disk instead of ~45.
    with open(out / "initramfs.img", "wb") as raw:
        writer = CpioWriter(raw)
        _write_tree(writer, busybox, Path(fio), libs, modules)
        writer.close()
    return modules


def _write_tree(w: CpioWriter, busybox: Path, fio: Path, libs: list[Path], modules: list[Path]) -> None:
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
    for lib in libs:
        _parents(w, lib.parent)
        w.file(str(lib), lib.read_bytes(), 0o755)
    lib_dirs = ":".join(sorted({str(lib.parent) for lib in libs}))
    w.file("init", script("init.sh").replace("@LD_LIBRARY_PATH@", lib_dirs).encode(), 0o755)
    w.file("bin/vmio-agent", script("agent.sh").encode(), 0o755)
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
