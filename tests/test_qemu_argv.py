"""VM configuration checks and the exact QEMU argv for each disk path (no VM is started)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from vmio.errors import InputError
from vmio.guest import GuestImage, Versions
from vmio.qemu import Disk, QemuCaps, Runtime, VMConfig, build_argv, check_disjoint
from vmio.qemu.caps import (
    PROBED_DEVICES,
    QEMU_BINARY,
    parse_device_help,
    parse_device_list,
    parse_machine_list,
    parse_version,
    probe_caps,
)

from qemu_support import needs_qemu

IMAGE = GuestImage(Path("/cache/g"), "k", Versions("k", "b", "f", "i"), 1, ())
RUNTIME = Runtime(Path("/run/vm"), 40000)


def caps(**props: set[str]) -> QemuCaps:
    base = {"virtio-blk-pci": {"iothread", "num-queues"}, "nvme": {"max_ioqpairs"}}
    base.update(props)
    return QemuCaps(
        "/usr/bin/qemu-system-x86_64",
        (7, 2, 0),
        "QEMU emulator version 7.2.0",
        {k: frozenset(v) for k, v in base.items()},
    )


def option(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def test_virtio_blk_with_range_iothread_and_cache_modes() -> None:
    disk = Disk(Path("/data/shared.img"), offset=1 << 30, size=1 << 30)
    argv = build_argv(
        VMConfig(index=3, disks=(disk,), iothreads=1, queues=4, vcpus=2, memory=1 << 30),
        IMAGE,
        RUNTIME,
        caps(),
    )
    assert argv[:3] == ["/usr/bin/qemu-system-x86_64", "-name", "vmio-3,debug-threads=on"]
    assert option(argv, "-blockdev") == [
        "driver=file,filename=/data/shared.img,node-name=proto0,cache.direct=on,cache.no-flush=off,aio=native,"
        "locking=off",
        "driver=raw,file=proto0,node-name=disk0,offset=1073741824,size=1073741824",
    ]
    assert "iothread,id=iothread0" in option(argv, "-object")
    assert "virtio-blk-pci,drive=disk0,id=vdisk0,num-queues=4,write-cache=on,iothread=iothread0" in option(
        argv, "-device"
    )
    assert option(argv, "-smp") == ["2"] and option(argv, "-m") == ["1024M"]
    assert "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:40000-:8765" in option(argv, "-netdev")
    assert "unix:/run/vm/qmp.sock,server=on,wait=off" in option(argv, "-qmp")
    assert "vmio.disks=/dev/vda" in option(argv, "-append")[0]


def test_the_agent_and_the_tracer_share_one_virtio_serial_device() -> None:
    """The guest_block tracer's port (docs/layers.md) beside the agent's, on one virtio-serial device; each
    port's socket in the VM's own folder."""
    argv = build_argv(VMConfig(agent_interval=1, trace_port=True), IMAGE, RUNTIME, caps())
    devices = option(argv, "-device")
    assert devices.count("virtio-serial-pci,id=vser0") == 1
    assert "virtserialport,bus=vser0.0,chardev=agent,name=vmio.agent" in devices
    assert "virtserialport,bus=vser0.0,chardev=trace,name=vmio.trace" in devices
    assert "socket,id=trace,path=/run/vm/trace.sock,server=on,wait=off" in option(argv, "-chardev")
    alone = build_argv(VMConfig(trace_port=True), IMAGE, RUNTIME, caps())
    assert "virtio-serial-pci,id=vser0" in option(alone, "-device")
    assert not any("vser0" in d for d in option(build_argv(VMConfig(), IMAGE, RUNTIME, caps()), "-device"))


def test_iothread_vq_mapping_only_when_qemu_has_it() -> None:
    config = VMConfig(disks=(Disk(Path("/d.img")),), iothreads=2, queues=4)
    old = build_argv(config, IMAGE, RUNTIME, caps())
    assert not any("iothread-vq-mapping" in a for a in old)
    new = build_argv(config, IMAGE, RUNTIME, caps(**{"virtio-blk-pci": {"iothread", "iothread-vq-mapping"}}))
    [device] = [json.loads(d) for d in option(new, "-device") if d.startswith("{")]
    assert device["iothread-vq-mapping"] == [{"iothread": "iothread0"}, {"iothread": "iothread1"}]


def test_scsi_nvme_and_writethrough() -> None:
    scsi = build_argv(
        VMConfig(
            disks=(Disk(Path("/a")), Disk(Path("/b"))),
            bus="virtio-scsi",
            iothreads=1,
            cache="writethrough",
            aio="threads",
        ),
        IMAGE,
        RUNTIME,
        caps(),
    )
    devices = option(scsi, "-device")
    assert "virtio-scsi-pci,id=scsi1,num_queues=1,iothread=iothread0" in devices
    assert "scsi-hd,drive=disk1,id=sdisk1,bus=scsi1.0,channel=0,scsi-id=0,lun=0,write-cache=off" in devices
    proto = option(scsi, "-blockdev")[0]
    assert "cache.direct=off" in proto and "aio=threads" in proto
    nvme = build_argv(VMConfig(disks=(Disk(Path("/a")),), bus="nvme", queues=2), IMAGE, RUNTIME, caps())
    assert "nvme,drive=disk0,id=nvme0,serial=vmio0n0,max_ioqpairs=2" in option(nvme, "-device")
    with pytest.raises(InputError, match="no iothread for nvme"):
        build_argv(VMConfig(disks=(Disk(Path("/a")),), bus="nvme", iothreads=1), IMAGE, RUNTIME, caps())


def test_block_bus_refuses_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "f.img"
    path.write_bytes(b"\0" * 512)
    with pytest.raises(InputError, match="needs a host block device"):
        build_argv(VMConfig(disks=(Disk(path),), bus="block"), IMAGE, RUNTIME, caps())


def test_vfio_passes_the_pci_address() -> None:
    argv = build_argv(VMConfig(disks=(Disk(Path("0000:01:00.0")),), bus="vfio"), IMAGE, RUNTIME, caps())
    assert "vfio-pci,host=0000:01:00.0,id=vfio0" in option(argv, "-device")
    with pytest.raises(InputError, match="not a PCI address"):
        VMConfig(disks=(Disk(Path("/dev/nvme0n1")),), bus="vfio")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bus": "ide"}, "bus = 'ide' is not accepted; use one of virtio-blk"),
        ({"cache": "unsafe"}, "cache = 'unsafe'"),
        ({"aio": "native", "cache": "writeback"}, "aio = 'native' needs O_DIRECT"),
        ({"iothreads": -1}, "iothreads = -1"),
        ({"memory": 64 << 20}, "at least 256 MiB"),
        ({"accel": "hvf"}, "accel = 'hvf'"),
    ],
)
def test_bad_config_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        VMConfig(**kwargs)  # type: ignore[arg-type]


def test_disk_ranges_must_be_sector_aligned_and_disjoint() -> None:
    with pytest.raises(InputError, match="offset 100"):
        Disk(Path("/a"), offset=100)
    a = VMConfig(index=0, disks=(Disk(Path("/x.img"), offset=0, size=1 << 20),))
    b = VMConfig(index=1, disks=(Disk(Path("/x.img"), offset=1 << 20, size=1 << 20),))
    check_disjoint([a, b])
    c = VMConfig(index=2, disks=(Disk(Path("/x.img"), offset=512 << 10),))
    with pytest.raises(InputError, match="vmio-2 and vmio-0 both use"):
        check_disjoint([a, b, c])


def test_version_and_device_help_parsing() -> None:
    assert parse_version("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7)") == (7, 2, 22)
    assert parse_version("QEMU emulator version 9.0") == (9, 0, 0)
    text = "virtio-blk-pci options:\n  iothread-vq-mapping=<IOThreadVirtQueueMappingList>\n  drive=<str>\n"
    assert parse_device_help(text) == {"iothread-vq-mapping", "drive"}


def test_nvme_guests_get_a_short_io_timeout() -> None:
    from pathlib import Path

    from vmio.qemu import Disk, VMConfig, kernel_cmdline

    disk = (Disk(Path("/var/tmp/x.img")),)
    assert "nvme_core.io_timeout=2" in kernel_cmdline(VMConfig(disks=disk, bus="nvme")).split()
    assert "nvme_core.io_timeout" not in kernel_cmdline(VMConfig(disks=disk, bus="virtio-blk"))


def test_guests_skip_the_drivers_of_hardware_they_do_not_have() -> None:
    from pathlib import Path

    from vmio.guest import kmod
    from vmio.qemu import Disk, VMConfig, kernel_cmdline

    def skipped(config: VMConfig) -> set[str]:
        arg = next(a for a in kernel_cmdline(config).split() if a.startswith("vmio.skip_modules="))
        return set(arg.split("=", 1)[1].split(","))

    disk = (Disk(Path("/var/tmp/x.img")),)
    micro = skipped(VMConfig(disks=disk, machine="microvm"))
    assert {"virtio_pci", "scsi_mod"} <= micro and "virtio_mmio" not in micro and "virtio_blk" not in micro
    scsi = skipped(VMConfig(disks=disk, bus="virtio-scsi"))
    assert "virtio_mmio" in scsi and not scsi & {"virtio_pci", "virtio_scsi", "sd_mod", "scsi_mod"}
    for config in (VMConfig(disks=disk, bus="nvme"), VMConfig(disks=disk, machine="pc")):
        assert "virtio_pci" not in skipped(config) and "virtio_blk" not in skipped(config)
    wanted = set(kmod.WANTED_MODULES)  # what a VM's devices need is never skipped
    assert not micro & wanted - {"virtio_pci", "virtio_scsi", "sd_mod", "nvme"}


@needs_qemu
def test_probed_caps_are_what_qemu_says_to_each_question_asked_alone() -> None:
    """``probe_caps`` asks QEMU its seven questions at once; each asked alone here, one after another."""
    caps = probe_caps(QEMU_BINARY)
    ask = [caps.binary, "-machine", "none", "-device"]
    alone = subprocess.run  # one QEMU at a time, nothing of vmio's runner
    assert (
        caps.version_text
        == alone([caps.binary, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    )
    assert caps.devices == parse_device_list(alone([*ask, "help"], capture_output=True, text=True).stdout)
    machines = alone([caps.binary, "-machine", "help"], capture_output=True, text=True).stdout
    assert caps.machines == parse_machine_list(machines)
    for driver in PROBED_DEVICES:
        done = alone([*ask, f"{driver},help"], capture_output=True, text=True)
        assert caps.device_props[driver] == parse_device_help(done.stdout + done.stderr), driver
    assert caps.device_props["virtio-blk-pci"] and "pc" in {m.split("-")[0] for m in caps.machines}
