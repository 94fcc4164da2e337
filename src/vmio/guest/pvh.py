"""The guest kernel as an uncompressed ELF with a PVH entry point, for a faster boot under TCG.

A bzImage boots through its real-mode setup code and decompressor (which also applies the kernel's
relocations); under TCG that is ~0.4 s of the guest's boot. QEMU boots an ELF ``vmlinux`` that carries a
PVH entry note (``XEN_ELFNOTE_PHYS32_ENTRY``, Debian's kernels have one) directly in 32-bit protected
mode, on every machine type (qboot on microvm, SeaBIOS's ``pvh.bin`` on q35/pc). The ELF is taken out
of the bzImage: the setup header says where the compressed payload is; its first bytes say how it is
compressed (gzip, xz and LZMA in the standard library; zstd and LZ4 with their command-line tools).
"""

from __future__ import annotations

import gzip
import lzma
import shutil
import struct
import subprocess
from pathlib import Path

XEN_ELFNOTE_PHYS32_ENTRY = 18
PT_NOTE = 4

# Payload magic -> the command that decompresses it from stdin (None: the standard library does).
_FORMATS: tuple[tuple[bytes, str, tuple[str, ...] | None], ...] = (
    (b"\x1f\x8b", "gzip", None),
    (b"\xfd7zXZ\x00", "xz", None),
    (b"\x5d\x00\x00", "lzma", None),
    (b"\x28\xb5\x2f\xfd", "zstd", ("zstd", "-dc")),
    (b"\x02\x21\x4c\x18", "lz4", ("lz4", "-dc")),
)


def payload(bzimage: bytes) -> bytes | None:
    """The compressed kernel inside a bzImage (boot protocol >= 2.08), or None when it is not one."""
    if len(bzimage) < 0x250 or bzimage[0x202:0x206] != b"HdrS":
        return None
    (protocol,) = struct.unpack_from("<H", bzimage, 0x206)
    if protocol < 0x208:
        return None
    setup_sects = bzimage[0x1F1] or 4
    start = (setup_sects + 1) * 512
    offset, length = struct.unpack_from("<II", bzimage, 0x248)
    return bzimage[start + offset : start + offset + length]


def tools_for_pvh() -> str:
    """Which decompressors this host has (for the image's cache key: it decides whether a vmlinux is
    made)."""
    return ",".join(sorted(name for _, name, cmd in _FORMATS if cmd is None or shutil.which(cmd[0])))


def decompress(data: bytes) -> bytes | None:
    """The decompressed payload, or None when its format is unknown or its tool is missing."""
    for magic, name, cmd in _FORMATS:
        if not data.startswith(magic):
            continue
        if name == "gzip":
            return gzip.decompress(data)
        if name in ("xz", "lzma"):
            # The kernel's payload may carry trailing bytes (its size) after the stream.
            return lzma.LZMADecompressor(lzma.FORMAT_AUTO).decompress(data)
        if cmd is None or shutil.which(cmd[0]) is None:
            return None
        done = subprocess.run(list(cmd), input=data, capture_output=True, timeout=120, check=False)
        return done.stdout if done.stdout.startswith(b"\x7fELF") else None
    return None


def has_pvh_entry(elf: bytes) -> bool:
    """Whether a 64-bit little-endian ELF has the Xen PVH entry note QEMU boots from."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return False
    (phoff,) = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        base = phoff + i * phentsize
        (p_type,) = struct.unpack_from("<I", elf, base)
        if p_type != PT_NOTE:
            continue
        offset, _, _, size = struct.unpack_from("<QQQQ", elf, base + 8)
        pos, end = offset, offset + size
        while pos + 12 <= end:
            namesz, descsz, kind = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12 : pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and kind == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def extract_pvh(bzimage: Path, out: Path) -> bool:
    """Write the bzImage's kernel as an ELF to ``out`` when it can be booted through PVH; True if done."""
    packed = payload(bzimage.read_bytes())
    elf = decompress(packed) if packed else None
    if elf is None or not has_pvh_entry(elf):
        return False
    out.write_bytes(elf)
    return True
