"""A writer for the ``newc`` cpio format the Linux kernel unpacks as an initramfs.

Entries need no root: device nodes such as ``/dev/console`` are written as headers only.
"""

from __future__ import annotations

import stat
from typing import BinaryIO

_MAGIC = b"070701"


class CpioWriter:
    """Writes directories, files, symlinks and device nodes; ``close()`` writes the trailer."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._ino = 0
        self._names: set[str] = set()

    def directory(self, name: str, mode: int = 0o755) -> None:
        self._entry(name, stat.S_IFDIR | mode, b"", nlink=2)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def char_device(self, name: str, major: int, minor: int, mode: int = 0o600) -> None:
        self._entry(name, stat.S_IFCHR | mode, b"", rdev=(major, minor))

    def has(self, name: str) -> bool:
        return name.strip("/") in self._names

    def close(self) -> None:
        self._entry("TRAILER!!!", 0, b"", nlink=1, record=False)
        self._out.flush()

    def _entry(
        self,
        name: str,
        mode: int,
        data: bytes,
        *,
        nlink: int = 1,
        rdev: tuple[int, int] = (0, 0),
        record: bool = True,
    ) -> None:
        name = name.strip("/")
        if record:
            if name in self._names:
                return
            self._names.add(name)
        self._ino += 1
        raw_name = name.encode() + b"\0"
        fields = (self._ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1], len(raw_name), 0)
        header = _MAGIC + b"".join(b"%08X" % f for f in fields)
        self._out.write(header + raw_name + _pad(len(header) + len(raw_name)))
        self._out.write(data + _pad(len(data)))


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 4)
