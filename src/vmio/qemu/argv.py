"""A ``VMConfig`` + guest image + run directory -> the exact QEMU argv (a list, never a shell string).

Disks are ``-blockdev`` pairs (protocol ``file``/``host_device`` under a ``raw`` format node that carries
the ``offset``/``size`` range) and a ``-device`` for the bus. Threads are named (``debug-threads=on``):
``CPU n/TCG`` or ``CPU n/KVM``, ``IO iothreadN``, and the main loop.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import InputError
from vmio.guest.image import FIO_PORT, GuestImage
from vmio.qemu.caps import QemuCaps
from vmio.qemu.vmconfig import Accel, Bus, Cache, Disk, Machine, VMConfig

AGENT_PORT_NAME = "vmio.agent"
TRACE_PORT_NAME = "vmio.trace"


@dataclass(frozen=True)
class Runtime:
    """Where a running VM keeps its console log, sockets and QEMU's own output; its forwarded port."""

    workdir: Path
    host_port: int

    @property
    def console(self) -> Path:
        return self.workdir / "console.log"

    @property
    def qmp(self) -> Path:
        return self.workdir / "qmp.sock"

    @property
    def agent(self) -> Path:
        return self.workdir / "agent.sock"

    @property
    def trace(self) -> Path:
        """The socket of the guest's tracer (``VMConfig.trace_port``)."""
        return self.workdir / "trace.sock"

    @property
    def qemu_log(self) -> Path:
        return self.workdir / "qemu.log"


def _esc(value: object) -> str:
    """Escape a value for QEMU's key=value option syntax (a comma is written twice)."""
    return str(value).replace(",", ",,")


# QEMU 7.2's emulated NVMe now and then leaves a queue's commands unprocessed (seen under TCG with every
# aio mode; likely its shadow-doorbell support). The guest recovers by aborting them at its I/O timeout:
# 2 s instead of 30 keeps such a stall a latency outlier rather than a failed run. It is in the argv, and
# only for builds that need it (``QemuCaps.nvme_stalls``); 10.0 ran the same point without a stall.
NVME_IO_TIMEOUT = "nvme_core.io_timeout=2"


def microvm_tcg_clock(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """microvm has no HPET or ACPI PM timer, so under TCG the guest kernel cannot calibrate its TSC and
    hangs at boot. TCG's guest TSC is the host's: give the kernel the host's frequency (and skip the
    timer check, which needs a reference clock too)."""
    match = (
        re.search(r"^cpu MHz\s*:\s*([\d.]+)", cpuinfo.read_text(), re.MULTILINE)
        if cpuinfo.is_file()
        else None
    )
    return ([f"tsc_early_khz={round(float(match[1]) * 1000)}"] if match else []) + ["no_timer_check"]


@dataclass(frozen=True)
class IothreadPlan:
    """How many I/O threads a VM really gets for ``iothreads`` on this build, and why if fewer."""

    iothreads: int
    mapped: bool  # one disk's queues spread over several I/O threads (iothread-vq-mapping)
    reason: str | None = None


def plan_iothreads(bus: Bus | str, iothreads: int, caps: QemuCaps) -> IothreadPlan:
    """virtio-blk (QEMU >= 9.0) and virtio-scsi (>= 10.0) spread one disk's queues over several I/O
    threads; elsewhere more than one I/O thread would sit idle, so the VM gets one and the reason."""
    if iothreads <= 1:
        return IothreadPlan(iothreads, False)
    bus = Bus(bus)
    if bus in (Bus.VIRTIO_BLK, Bus.BLOCK):
        if caps.iothread_vq_mapping:
            return IothreadPlan(iothreads, True)
        need = "virtio-blk's iothread-vq-mapping (QEMU >= 9.0)"
    elif bus == Bus.VIRTIO_SCSI:
        if caps.scsi_vq_mapping:
            return IothreadPlan(iothreads, True)
        need = "virtio-scsi's iothread-vq-mapping (QEMU >= 10.0)"
    else:
        need = f"a way to spread one {bus} disk's queues over I/O threads"
    return IothreadPlan(
        1, False, f"iothreads = {iothreads} fell back to 1: QEMU {caps.version_string} has no {need}"
    )


def nvme_timeout_needed(config: VMConfig, caps: QemuCaps | None) -> bool:
    """The short NVMe I/O timeout: for NVMe guests of builds whose emulated NVMe stalls (or unknown)."""
    return config.bus == Bus.NVME and (caps is None or caps.nvme_stalls)


# Drivers the guest image carries that a VM without their hardware need not load (each insmod is ~15 ms
# of TCG CPU at boot): the PCI transport on microvm, the MMIO one elsewhere, the SCSI stack without
# virtio-scsi. Names are the module files' (``scsi_mod.ko`` -> ``scsi_mod``).
PCI_MODULES = ("virtio_pci", "virtio_pci_modern_dev", "virtio_pci_legacy_dev")
MMIO_MODULES = ("virtio_mmio",)
SCSI_MODULES = ("virtio_scsi", "sd_mod", "scsi_mod", "scsi_common")


def skipped_modules(config: VMConfig) -> list[str]:
    """The guest's modules this VM's hardware does not need."""
    skip = list(PCI_MODULES if config.mmio else MMIO_MODULES)
    if config.bus != Bus.VIRTIO_SCSI:
        skip += SCSI_MODULES
    return skip


def kernel_cmdline(config: VMConfig, caps: QemuCaps | None = None) -> str:
    parts = [
        "console=ttyS0",
        "panic=-1",
        f"loglevel={config.loglevel}",
        "scsi_mod.scan=sync",
        # The crypto self-tests run at every boot (~0.3 s of TCG CPU); the guest's I/O path uses no crypto.
        "cryptomgr.notests=1",
        f"vmio.fio_port={FIO_PORT}",
        f"vmio.disk_wait={config.disk_wait}",
        "vmio.skip_modules=" + ",".join(skipped_modules(config)),
    ]
    if config.disks:
        parts.append("vmio.disks=" + ",".join(config.guest_devices()))
    if config.agent_interval is not None:
        parts.append(f"vmio.agent={config.agent_interval:g}")
    if nvme_timeout_needed(config, caps):
        parts.append(NVME_IO_TIMEOUT)
    if config.mmio and config.accel == Accel.TCG:
        parts += microvm_tcg_clock()
    return " ".join([*parts, *config.extra_append])


def build_argv(config: VMConfig, image: GuestImage, runtime: Runtime, caps: QemuCaps) -> list[str]:
    """The full QEMU command line for ``config``; ``config.accel`` must be resolved (kvm or tcg)."""
    if config.accel == Accel.AUTO:
        raise InputError("accel = 'auto' must be resolved to 'kvm' or 'tcg' before building argv")
    kvm = config.accel == Accel.KVM
    argv = [
        caps.binary,
        "-name",
        f"{config.name},debug-threads=on",
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        *[arg for d in caps.data_dirs for arg in ("-L", d)],
        *(["-bios", "qboot.rom"] if config.mmio else []),
        "-machine",
        _machine(config),
        "-accel",
        str(config.accel),
        "-cpu",
        "host" if kvm else "max",
        "-smp",
        str(config.vcpus),
        "-m",
        f"{config.memory // 2**20}M",
        "-kernel",
        str(image.boot_kernel),
        "-initrd",
        str(image.initrd),
        "-append",
        kernel_cmdline(config, caps),
        "-chardev",
        f"file,id=console,path={_esc(runtime.console)}",
        "-serial",
        "chardev:console",
        "-qmp",
        f"unix:{_esc(runtime.qmp)},server=on,wait=off",
        "-netdev",
        f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{runtime.host_port}-:{FIO_PORT}",
        "-device",
        f"{_virtio('net', config)},netdev=net0",
    ]
    for iothread in config.iothread_ids:
        argv += ["-object", f"iothread,id={iothread}"]
    argv += disk_args(config, caps)
    if config.balloon:
        argv += ["-device", f"{_virtio('balloon', config)},id=balloon0"]
    if config.agent_interval is not None or config.trace_port:
        argv += ["-device", f"{_virtio('serial', config)},id=vser0"]
    if config.agent_interval is not None:
        argv += [
            "-chardev",
            f"socket,id=agent,path={_esc(runtime.agent)},server=on,wait=off",
            "-device",
            f"virtserialport,bus=vser0.0,chardev=agent,name={AGENT_PORT_NAME}",
        ]
    if config.trace_port:
        argv += [
            "-chardev",
            f"socket,id=trace,path={_esc(runtime.trace)},server=on,wait=off",
            "-device",
            f"virtserialport,bus=vser0.0,chardev=trace,name={TRACE_PORT_NAME}",
        ]
    argv += config.extra_args
    return argv


def _machine(config: VMConfig) -> str:
    if config.machine == Machine.MICROVM:
        # virtio-mmio devices are found through ACPI (the Debian cloud kernel has no virtio_mmio.device=
        # command-line support); no option ROMs, an RTC for the guest clock, the ISA serial console.
        # Firmware: qboot (every Debian QEMU ships it), the minimal one microvm is made for; backports'
        # SeaBIOS 1.16.3 bios-microvm.bin never reaches the kernel under TCG.
        return "microvm,x-option-roms=off,rtc=on,isa-serial=on,acpi=on"
    return str(config.machine)


def _virtio(kind: str, config: VMConfig) -> str:
    """``virtio-KIND-pci`` on PCI machines, ``virtio-KIND-device`` (MMIO) on microvm."""
    return f"virtio-{kind}-{'device' if config.mmio else 'pci'}"


def disk_args(config: VMConfig, caps: QemuCaps) -> list[str]:
    """``-blockdev``/``-device`` arguments for every disk of ``config``."""
    args: list[str] = []
    for i, disk in enumerate(config.disks):
        if config.bus == Bus.VFIO:
            args += ["-device", f"vfio-pci,host={disk.path},id=vfio{i}"]
            continue
        args += blockdev_args(i, disk, config)
        args += device_args(i, config, caps)
    return args


def blockdev_args(i: int, disk: Disk, config: VMConfig) -> list[str]:
    """A protocol node (``proto<i>``) and a raw format node (``disk<i>``) with the byte range."""
    if disk.is_rbd:
        return _rbd_blockdev(i, disk, config)
    is_block = disk.path.is_block_device()
    if config.bus == Bus.BLOCK and not is_block:
        raise InputError(f"bus = 'block' needs a host block device; {str(disk.path)!r} is not one")
    cache = Cache(config.cache)
    ranged = disk.offset > 0 or disk.size is not None
    proto = [
        f"driver={'host_device' if is_block else 'file'}",
        f"filename={_esc(disk.path)}",
        f"node-name=proto{i}",
        f"cache.direct={'on' if cache.direct else 'off'}",
        "cache.no-flush=off",
        f"aio={config.aio}",
    ]
    if ranged:
        proto.append("locking=off")  # several VMs share one backing file, each on its own range
    raw = ["driver=raw", f"file=proto{i}", f"node-name=disk{i}"]
    if disk.offset:
        raw.append(f"offset={disk.offset}")
    if disk.size is not None:
        raw.append(f"size={disk.size}")
    if disk.read_only:
        proto.append("read-only=on")
        raw.append("read-only=on")
    return ["-blockdev", ",".join(proto), "-blockdev", ",".join(raw)]


def _rbd_blockdev(i: int, disk: Disk, config: VMConfig) -> list[str]:
    """A disk on a Ceph RBD image through QEMU's rbd driver (Debian's qemu-block-extra)."""
    pool, _, image = str(disk.path).partition("/")
    if not pool or not image:
        raise InputError(f"RBD disk {str(disk.path)!r} is not POOL/IMAGE")
    proto = {
        "driver": "rbd",
        "node-name": f"proto{i}",
        "pool": pool,
        "image": image,
        "conf": str(disk.rbd_conf),
        "user": disk.rbd_user,
        "cache": {"direct": Cache(config.cache).direct, "no-flush": False},
    }
    raw: dict[str, object] = {"driver": "raw", "file": f"proto{i}", "node-name": f"disk{i}"}
    if disk.offset:
        raw["offset"] = disk.offset
    if disk.size is not None:
        raw["size"] = disk.size
    return [
        "-blockdev",
        json.dumps(proto, separators=(",", ":")),
        "-blockdev",
        json.dumps(raw, separators=(",", ":")),
    ]


def _iothread_for(i: int, config: VMConfig) -> str | None:
    ids = config.iothread_ids
    return ids[i % len(ids)] if ids else None


def device_args(i: int, config: VMConfig, caps: QemuCaps) -> list[str]:
    """The guest-visible device for disk ``i`` on ``config.bus``."""
    wce = "on" if Cache(config.cache).write_cache else "off"
    iothread = _iothread_for(i, config)
    plan = plan_iothreads(config.bus, config.iothreads, caps)  # not mapped: disk i on iothread i mod n
    mapping = [{"iothread": t} for t in config.iothread_ids]
    if config.bus in (Bus.VIRTIO_BLK, Bus.BLOCK):
        if plan.mapped:
            dev = {
                "driver": _virtio("blk", config),
                "id": f"vdisk{i}",
                "drive": f"disk{i}",
                "num-queues": config.queues,
                "write-cache": wce,
                "iothread-vq-mapping": mapping,
            }
            return ["-device", json.dumps(dev, separators=(",", ":"))]
        opts = [f"drive=disk{i}", f"id=vdisk{i}", f"num-queues={config.queues}", f"write-cache={wce}"]
        return ["-device", ",".join([_virtio("blk", config), *opts, *_iothread_opt(iothread)])]
    if config.bus == Bus.VIRTIO_SCSI:
        hd = f"scsi-hd,drive=disk{i},id=sdisk{i},bus=scsi{i}.0,channel=0,scsi-id=0,lun=0,write-cache={wce}"
        if plan.mapped:
            ctrl_dev = {
                "driver": _virtio("scsi", config),
                "id": f"scsi{i}",
                "num_queues": config.queues,
                "iothread-vq-mapping": mapping,
            }
            return ["-device", json.dumps(ctrl_dev, separators=(",", ":")), "-device", hd]
        ctrl = [
            _virtio("scsi", config),
            f"id=scsi{i}",
            f"num_queues={config.queues}",
            *_iothread_opt(iothread),
        ]
        return ["-device", ",".join(ctrl), "-device", hd]
    opts = [
        "nvme",
        f"drive=disk{i}",
        f"id=nvme{i}",
        f"serial=vmio{config.index}n{i}",
        f"max_ioqpairs={config.queues}",
    ]
    if iothread is not None:
        if not caps.has_prop("nvme", "iothread"):
            raise InputError(
                f"bus = 'nvme' with iothreads = {config.iothreads!r}: QEMU "
                f"{caps.version_string} has no iothread for nvme; use iothreads = 0"
            )
        opts.append(f"iothread={iothread}")
    return ["-device", ",".join(opts)]


def _iothread_opt(iothread: str | None) -> list[str]:
    return [] if iothread is None else [f"iothread={iothread}"]
