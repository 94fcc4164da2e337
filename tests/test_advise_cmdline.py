"""What a QEMU command line says, read back from vmio's own argv builder, libvirt-style JSON and older forms."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from vmio.guest import GuestImage, Versions
from vmio.qemu import Disk, QemuCaps, Runtime, VMConfig, build_argv
from vmio.qemu.cmdline import CmdDisk, parse, split_opts
from vmio.qemu.running import file_of, find_qemus

IMAGE = GuestImage(Path("/cache/g"), "k", Versions("k", "b", "f", "i"), 1, ())
RUNTIME = Runtime(Path("/run/vm,x"), 40000)


def caps(**props: set[str]) -> QemuCaps:
    return QemuCaps(
        "qemu-system-x86_64", (9, 1, 0), "QEMU 9.1.0", {k: frozenset(v) for k, v in props.items()}
    )


def test_vmio_argv_read_back() -> None:
    config = VMConfig(index=3, disks=(Disk(Path("/img/a,b.raw"), offset=1 << 20, size=1 << 30),), iothreads=1,
                      vcpus=2, accel="tcg")  # fmt: skip
    cmd = parse(tuple(build_argv(config, IMAGE, RUNTIME, caps())))
    assert (cmd.name, cmd.accel, cmd.vcpus, cmd.iothreads) == ("vmio-3", "tcg", 2, ("iothread0",))
    assert cmd.qmp == "/run/vm,x/qmp.sock"  # the comma was written twice in the argv
    assert cmd.disks == (CmdDisk("vdisk0", "disk0", "/img/a,b.raw", "virtio-blk", "iothread0"),)


def test_scsi_controller_iothread_nvme_and_vq_mapping() -> None:
    scsi = parse(tuple(build_argv(VMConfig(disks=(Disk(Path("/a")),), bus="virtio-scsi", iothreads=1), IMAGE,
                                  RUNTIME, caps())))  # fmt: skip
    assert scsi.disks == (CmdDisk("sdisk0", "disk0", "/a", "virtio-scsi", "iothread0"),)
    nvme = parse(tuple(build_argv(VMConfig(disks=(Disk(Path("/n")),), bus="nvme"), IMAGE, RUNTIME, caps())))
    assert nvme.disks == (CmdDisk("nvme0", "disk0", "/n", "nvme"),)
    mapped = VMConfig(disks=(Disk(Path("/m")),), iothreads=2, queues=2)
    vq = caps(**{"virtio-blk-pci": {"iothread", "iothread-vq-mapping"}})
    (disk,) = parse(tuple(build_argv(mapped, IMAGE, RUNTIME, vq))).disks
    assert disk.vq_mapping and disk.iothread == "iothread0" and disk.path == "/m"


def test_libvirt_style_json_and_monitor_chardev() -> None:
    argv = (
        "/usr/bin/qemu-system-x86_64", "-name", "guest=db1,debug-threads=on", "-machine", "pc-q35-7.2,accel=kvm",
        "-smp", "4,sockets=4,cores=1,threads=1",
        "-chardev", "socket,id=charmonitor,path=/var/lib/libvirt/qemu/domain-1-db1/monitor.sock,server=on,wait=off",
        "-mon", "chardev=charmonitor,id=monitor,mode=control",
        "-object", '{"qom-type":"iothread","id":"iothread1"}',
        "-blockdev", '{"driver":"host_device","filename":"/dev/nvme1n1","node-name":"libvirt-1-storage"}',
        "-blockdev", '{"node-name":"libvirt-1-format","driver":"raw","file":"libvirt-1-storage"}',
        "-device", '{"driver":"virtio-blk-pci","iothread":"iothread1","drive":"libvirt-1-format","id":"virtio-disk0"}',
        "-device", '{"driver":"vfio-pci","host":"0000:03:00.0","id":"hostdev0"}',
    )  # fmt: skip
    cmd = parse(argv)
    assert (cmd.name, cmd.accel, cmd.vcpus) == ("db1", "kvm", 4)
    assert cmd.qmp == "/var/lib/libvirt/qemu/domain-1-db1/monitor.sock" and cmd.iothreads == ("iothread1",)
    assert cmd.disks == (
        CmdDisk("virtio-disk0", "libvirt-1-format", "/dev/nvme1n1", "block", "iothread1"),
        CmdDisk("hostdev0", "", "0000:03:00.0", "vfio"),
    )


def test_old_forms_drive_if_virtio_enable_kvm_and_no_monitor() -> None:
    argv = ("qemu-system-x86_64", "-enable-kvm", "-drive", "file=/var/img/old.qcow2,if=virtio,cache=none",
            "-mon", "chardev=hmp")  # fmt: skip
    cmd = parse(argv)
    assert cmd.accel == "kvm" and cmd.qmp is None and cmd.vcpus == 1
    assert cmd.disks == (CmdDisk(None, "drive0", "/var/img/old.qcow2", "virtio-blk"),)


@given(st.lists(st.tuples(st.from_regex(r"[a-z][a-z-]{0,8}", fullmatch=True),
                          st.text(st.characters(blacklist_characters="\0"), max_size=12)),  # fmt: skip
                min_size=1, max_size=5, unique_by=lambda kv: kv[0]))  # fmt: skip
def test_split_opts_reads_back_escaped_values(pairs: list[tuple[str, str]]) -> None:
    text = ",".join(f"{k}={v.replace(',', ',,')}" for k, v in pairs)
    assert split_opts("drv," + text, "driver") == {"driver": "drv", **dict(pairs)}


def test_json_pseudo_filenames() -> None:
    name = "json:" + json.dumps(
        {"driver": "raw", "offset": 4096, "file": {"driver": "file", "filename": "/x.img"}}
    )
    assert file_of(name) == ("/x.img", "file")
    assert file_of("/plain.img") == ("/plain.img", None)
    assert file_of("json:{not json") == (None, None) and file_of("") == (None, None)


def test_find_qemus_in_a_proc_tree(tmp_path: Path) -> None:
    for pid, argv in ((10, ["/usr/bin/qemu-system-x86_64", "-name", "a", "-qmp", "unix:/q.sock,server,nowait"]),
                      (11, ["/usr/bin/python3", "qemu-system-x86_64"]), (12, [])):  # fmt: skip
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (tmp_path / "self").mkdir()
    (found,) = find_qemus(tmp_path)
    assert found.pid == 10 and found.exe == "/usr/bin/qemu-system-x86_64" and found.cmd.qmp == "/q.sock"
    assert split_opts("unix:/q.sock,server,nowait", "addr") == {"addr": "unix:/q.sock", "server": "on",
                                                                 "wait": "off"}  # fmt: skip
