"""The vmio guest: a small initramfs that boots straight to ``fio --server``.

build(source=None, *, root=None, force=False, runner=None, lean=True) -> GuestImage
    lean=False: the image as it booted before (fio's real engine libraries, no PVH kernel), for A/B
find(source=None, *, root=None, runner=None, lean=True) -> GuestImage | None
cache_root() -> Path
GuestImage(path, key, versions, size, modules) with .kernel (bzImage), .boot_kernel (the PVH ELF
    ``vmlinux`` when there is one, else the bzImage: what QEMU's -kernel gets), .initrd, .to_json()
KernelSource(kernel: Path | None = None, modules: Path | None = None)
FIO_PORT (8765, the guest's fio server port), READY_MARKER ("VMIO-READY", on the serial console)
"""

import typing as _typing

from vmio.lazy import exports as _exports

if _typing.TYPE_CHECKING:
    from vmio.guest.image import FIO_PORT, READY_MARKER, GuestImage, build, cache_root, find
    from vmio.guest.inputs import KernelSource, Versions

# The names above are imported on first use (PEP 562), so that one module of the package (``guest.cpio``
# for a libvirt canary's initramfs) comes without the image builder and the fio it packs.
_LAZY = {
    "FIO_PORT": "vmio.guest.image",
    "GuestImage": "vmio.guest.image",
    "KernelSource": "vmio.guest.inputs",
    "READY_MARKER": "vmio.guest.image",
    "Versions": "vmio.guest.inputs",
    "build": "vmio.guest.image",
    "cache_root": "vmio.guest.image",
    "find": "vmio.guest.image",
}


__getattr__, __dir__ = _exports(__name__, _LAZY, globals())


__all__ = [
    "FIO_PORT",
    "READY_MARKER",
    "GuestImage",
    "KernelSource",
    "Versions",
    "build",
    "cache_root",
    "find",
]
