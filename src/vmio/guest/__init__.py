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

from vmio.guest.image import FIO_PORT, READY_MARKER, GuestImage, build, cache_root, find
from vmio.guest.inputs import KernelSource, Versions

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
