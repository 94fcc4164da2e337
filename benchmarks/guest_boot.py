"""Launch-to-ready time of the vmio guest and its image size.

    .venv/bin/python benchmarks/guest_boot.py [--boots 5] [--accel auto|kvm|tcg] [--disk]

Prints each boot, the median and spread (min-max, and the interquartile range), the accelerator used
(and why), the QEMU version and the image size. Goals: <= 8 s with TCG, <= 1.5 s with KVM; a cached image found again in < 10 s; a
guest that never comes up killed within 20 s of launch with an 8 s boot timeout.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from vmio.guest import build
from vmio.qemu import VM, Disk, VMConfig, probe_caps, resolve_accel


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--boots", type=int, default=5)
    parser.add_argument("--accel", default="auto", choices=["auto", "kvm", "tcg"])
    parser.add_argument("--disk", action="store_true", help="attach a 64 MiB virtio-blk disk")
    args = parser.parse_args()

    started = time.monotonic()
    image = build()
    print(
        f"guest image {image.key}: {image.size / 2**20:.1f} MiB "
        f"(kernel {image.kernel.stat().st_size / 2**20:.1f} MiB, "
        f"initramfs {image.initrd.stat().st_size / 2**20:.1f} MiB), "
        f"built or found in {time.monotonic() - started:.1f} s"
    )
    again = time.monotonic()
    build()  # cached: finds the image by its key without rebuilding
    print(f"cached guest image found again in {time.monotonic() - again:.2f} s (goal < 10 s)")
    caps = probe_caps()
    choice = resolve_accel(args.accel, image, caps)
    print(f"QEMU {caps.version_string}; accelerator {choice.accel} ({choice.reason})")

    times = []
    with tempfile.TemporaryDirectory(prefix="vmio-boot-") as tmp:
        disks: tuple[Disk, ...] = ()
        if args.disk:
            path = Path(tmp) / "disk.img"
            with open(path, "wb") as f:
                f.truncate(64 << 20)
            disks = (Disk(path),)
        for i in range(args.boots):
            config = VMConfig(disks=disks, accel=choice.accel)
            launched = time.monotonic()
            with VM(config, image, caps=caps, workdir=Path(tmp) / f"boot{i}") as vm:
                ready = time.monotonic() - launched
            stopped = time.monotonic() - launched - ready
            times.append(ready)
            print(f"boot {i + 1}: ready {ready:.2f} s (marker {vm.boot_seconds:.2f} s), stop {stopped:.2f} s")
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    print(
        f"launch-to-ready: median {statistics.median(times):.2f} s, min {min(times):.2f} s, "
        f"max {max(times):.2f} s, IQR {quartiles[0]:.2f}-{quartiles[2]:.2f} s over {len(times)} boots "
        f"({choice.accel})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
