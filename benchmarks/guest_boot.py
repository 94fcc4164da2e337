"""Launch-to-ready time of the vmio guest per QEMU build x machine type, and the image's size.

    .venv/bin/python benchmarks/guest_boot.py [--boots 5] [--accel auto|kvm|tcg] [--disk]
        [--builds system,10.0] [--machines q35,pc,microvm] [--old-image] [--json]

For every QEMU build vmio can use (default: all of ``vmio qemu list``) and machine type, boots the guest
``--boots`` times and prints launch-to-ready (the ``VMIO-READY`` marker on the console, fio listening):
the median, min-max and interquartile range, and the CPU time QEMU spent until ready (all its threads,
from ``/proc``). The boots are interleaved (one of each build x machine per round), so a load that other
processes put on the host in the meantime spreads over all columns alike; the host's load average is
printed before and after, and the CPU time, which such load hardly changes, is the figure to compare
on a busy host. ``--old-image`` adds the guest as it booted before (``build(lean=False)``: fio's real
engine libraries, an ~85 MiB initramfs; the compressed bzImage; busybox's links made at boot; the crypto
self-tests run; every driver loaded) as a second image column: an A/B in one run.

Goals: microvm <= 2 s median with TCG (<= 0.5 s with KVM); a cached image found again in < 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from vmio.guest import GuestImage, build
from vmio.qemu import VM, Disk, VMConfig, builds, probe_caps, resolve_accel
from vmio.qemu.caps import QemuCaps

MACHINES = ("q35", "pc", "microvm")


@dataclass
class Column:
    build: str  # "10.0.2 (vmio)"
    machine: str
    image: str  # "new" | "old"
    caps: QemuCaps
    guest: GuestImage
    ready: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def label(self) -> str:
        return f"{self.build:<16} {self.machine:<8} {self.image:<4}"


def qemu_cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    quartiles = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    return (
        f"{statistics.median(values):6.2f} s  {min(values):5.2f}-{max(values):5.2f}  "
        f"IQR {quartiles[0]:5.2f}-{quartiles[2]:5.2f}"
    )


# The old boot also ran the kernel's crypto self-tests and loaded every driver of the image (both now
# skipped on the kernel command line; a later parameter overrides an earlier one).
OLD_APPEND = ("cryptomgr.notests=0", "vmio.skip_modules=")


def boot(column: Column, accel: str, disks: tuple[Disk, ...], workdir: Path) -> None:
    append = OLD_APPEND if column.image == "old" else ()
    config = VMConfig(disks=disks, accel=accel, machine=column.machine, extra_append=append)
    launched = time.monotonic()
    try:
        with VM(config, column.guest, caps=column.caps, workdir=workdir, boot_timeout=60) as vm:
            ready = time.monotonic() - launched
            cpu = qemu_cpu_seconds(vm.pid)
    except Exception as exc:  # a failed boot is a figure too; the others carry on
        column.failures.append(str(exc).splitlines()[0])
        return
    column.ready.append(ready)
    column.cpu.append(cpu)


def describe(image: GuestImage, name: str) -> str:
    return (
        f"{name} image {image.key}: initramfs {image.initrd.stat().st_size / 2**20:.1f} MiB, "
        f"-kernel {image.boot_kernel.name} {image.boot_kernel.stat().st_size / 2**20:.1f} MiB "
        f"({'PVH ELF' if image.boot_kernel != image.kernel else 'bzImage'}, {image.versions.kernel})"
    )


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--boots", type=int, default=5)
    parser.add_argument("--accel", default="tcg", choices=["auto", "kvm", "tcg"])
    parser.add_argument("--disk", action="store_true", help="attach a 64 MiB virtio-blk disk")
    parser.add_argument("--builds", help="comma-separated QEMU versions (default: every build vmio can use)")
    parser.add_argument("--machines", default=",".join(MACHINES))
    parser.add_argument(
        "--old-image", action="store_true", help="also boot the image with fio's real engine libraries"
    )
    parser.add_argument("--json", action="store_true", help="print the columns as JSON at the end")
    args = parser.parse_args()

    started = time.monotonic()
    images = {"new": build()}
    print(f"{describe(images['new'], 'new')}; built or found in {time.monotonic() - started:.1f} s")
    again = time.monotonic()
    build()  # cached: finds the image by its key without rebuilding
    print(f"cached guest image found again in {time.monotonic() - again:.2f} s (goal < 10 s)")
    if args.old_image:
        images["old"] = build(lean=False)
        print(describe(images["old"], "old"))

    wanted = [w for w in (args.builds or "").split(",") if w]
    chosen = [builds.resolve(w) for w in wanted] if wanted else builds.available()
    columns: list[Column] = []
    accel = None
    for qemu in chosen:
        caps = probe_caps(qemu.path, env=qemu.env, data_dirs=qemu.data_dirs, source=qemu.source)
        if accel is None:
            choice = resolve_accel(args.accel, images["new"], caps)
            accel = choice.accel
            print(f"accelerator {choice.accel} ({choice.reason})")
        for machine in args.machines.split(","):
            if machine not in caps.machines:
                print(f"QEMU {caps.version_string} has no machine {machine!r}; skipped")
                continue
            for name, image in images.items():
                columns.append(Column(f"{qemu.version} ({qemu.source})", machine, name, caps, image))
    assert accel is not None, "no QEMU build to boot"

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="vmio-boot-") as tmp:
        disks: tuple[Disk, ...] = ()
        if args.disk:
            path = Path(tmp) / "disk.img"
            with open(path, "wb") as f:
                f.truncate(64 << 20)
            disks = (Disk(path),)
        for rnd in range(args.boots):
            for i, column in enumerate(columns):
                boot(column, accel, disks, Path(tmp) / f"r{rnd}c{i}")
                last = (
                    f"{column.ready[-1]:.2f} s (QEMU CPU {column.cpu[-1]:.2f} s)"
                    if column.ready
                    else "failed"
                )
                print(f"round {rnd + 1} {column.label()} ready {last}", flush=True)
    load_after = os.getloadavg()

    print(f"\nlaunch-to-ready, accelerator {accel}, {args.boots} boots each; host load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after ({os.cpu_count()} CPUs)")  # fmt: skip
    print(
        f"{'build':<16} {'machine':<8} {'img':<4} {'wall: median  min-max  IQR':<41} QEMU CPU until ready: median"
    )
    for column in columns:
        cpu = f"{statistics.median(column.cpu):5.2f} s" if column.cpu else "-"
        failed = f"  ({len(column.failures)} failed: {column.failures[0]})" if column.failures else ""
        print(f"{column.label()} {spread(column.ready):<41} {cpu}{failed}")
    micro = [c for c in columns if c.machine == "microvm" and c.image == "new" and c.ready]
    for column in micro:
        median = statistics.median(column.ready)
        goal = 2.0 if accel == "tcg" else 0.5
        verdict = "met" if median <= goal else "NOT met"
        print(f"goal microvm <= {goal:g} s ({accel}) on {column.build}: {median:.2f} s, {verdict}")
    if args.json:
        rows = [{"build": c.build, "qemu_version": c.caps.version_string, "machine": c.machine, "image": c.image,
                 "image_key": c.guest.key, "accel": accel, "ready_s": c.ready, "qemu_cpu_s": c.cpu,
                 "failures": c.failures, "load_before": load_before[0], "load_after": load_after[0]}
                for c in columns]  # fmt: skip
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
