"""Kernel modules for the guest: find them, read their dependencies, order them for loading.

Debian's kernel package does not ship ``modules.dep`` (``depmod`` writes it at install time), so when
it is missing the dependencies are read from each module's ``.modinfo`` ELF section, which is what
``depmod`` itself reads.
"""

from __future__ import annotations

import gzip
import lzma
import struct
import subprocess
from pathlib import Path

from vmio.errors import InputError

#: The drivers a vmio guest needs: virtio transport, disks, network, balloon, serial agent, NVMe.
WANTED_MODULES = (
    "virtio_pci",
    "virtio_mmio",  # microvm: virtio devices on MMIO transports, found through ACPI
    "virtio_blk",
    "virtio_scsi",
    "sd_mod",
    "virtio_net",
    "virtio_balloon",
    "virtio_console",
    "nvme",
)

_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")


def module_name(path: Path | str) -> str:
    """The kernel's name for a module file: ``.../virtio-rng.ko.xz`` -> ``virtio_rng``."""
    name = Path(path).name
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.replace("-", "_")


def index_modules(moddir: Path) -> dict[str, Path]:
    """Map module name -> file for every module under ``moddir`` (a ``/lib/modules/<release>``)."""
    found: dict[str, Path] = {}
    for path in sorted(moddir.rglob("*.ko*")):
        if path.name.endswith(_SUFFIXES):
            found[module_name(path)] = path
    return found


def builtin_modules(moddir: Path) -> set[str]:
    """Names of drivers compiled into the kernel (``modules.builtin``)."""
    listing = moddir / "modules.builtin"
    if not listing.is_file():
        return set()
    return {module_name(line) for line in listing.read_text().split() if line}


def read_module(path: Path) -> bytes:
    """The ELF bytes of a module file, decompressed when it is ``.xz``, ``.gz`` or ``.zst``."""
    if path.name.endswith(".xz"):
        return lzma.decompress(path.read_bytes())
    if path.name.endswith(".gz"):
        return gzip.decompress(path.read_bytes())
    if path.name.endswith(".zst"):
        done = subprocess.run(["zstd", "-dc", str(path)], capture_output=True, timeout=60, check=True)
        return done.stdout
    return path.read_bytes()


def modinfo_depends(elf: bytes) -> list[str]:
    """The ``depends=`` list of a module's ``.modinfo`` section (64-bit little-endian ELF)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise InputError("not a 64-bit ELF kernel module")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def section(i: int) -> tuple[int, int, int]:
        base = shoff + i * shentsize
        (name,) = struct.unpack_from("<I", elf, base)
        offset, size = struct.unpack_from("<QQ", elf, base + 0x18)
        return name, offset, size

    _, str_off, _ = section(shstrndx)
    for i in range(shnum):
        name, offset, size = section(i)
        end = elf.index(b"\0", str_off + name)
        if elf[str_off + name : end] == b".modinfo":
            for field in elf[offset : offset + size].split(b"\0"):
                if field.startswith(b"depends="):
                    return [d for d in field[8:].decode().split(",") if d]
            return []
    return []


def read_modules_dep(moddir: Path) -> dict[str, list[str]] | None:
    """``modules.dep`` as name -> dependency names, or None when the file is absent."""
    listing = moddir / "modules.dep"
    if not listing.is_file():
        return None
    deps: dict[str, list[str]] = {}
    for line in listing.read_text().splitlines():
        target, _, rest = line.partition(":")
        deps[module_name(target)] = [module_name(d) for d in rest.split()]
    return deps


def resolve_modules(moddir: Path, wanted: tuple[str, ...] = WANTED_MODULES) -> list[Path]:
    """Module files for ``wanted`` and their dependencies, dependencies first; built-ins skipped."""
    if not moddir.is_dir():
        raise InputError(f"module directory {str(moddir)!r} does not exist; give a /lib/modules/<release>")
    files = index_modules(moddir)
    builtin = builtin_modules(moddir)
    dep_table = read_modules_dep(moddir)
    order: list[Path] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name in builtin:
            return
        seen.add(name)
        if name not in files:
            raise InputError(f"kernel module {name!r} is neither built in nor under {str(moddir)!r}")
        deps = dep_table.get(name, []) if dep_table is not None else modinfo_depends(read_module(files[name]))
        for dep in deps:
            visit(dep)
        order.append(files[name])

    for name in wanted:
        visit(name)
    return order
