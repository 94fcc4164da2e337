"""libvirt, where most KVM hosts are run: the ``<iothreads>``/``<disk>`` XML that ``advise`` (and ``tune``,
which prints the same advice) emits, wrapped in a whole domain, against libvirt's own schema
(``virt-xml-validate``); then Debian's ``libvirtd`` started here, a TCG domain (type ``qemu``, no network)
with vmio's guest and the advised disk, and ``vmio diagnose --live`` reading its disks and iothreads
through libvirt. The daemons (a session fixture in conftest) are stopped at the end of the run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vmio.advise.config_guideline import Requirements, advise
from vmio.advise.disk_config import Config, libvirt_xml
from vmio.advise.inventory import HostFacts
from vmio.advise.text import format_advice
from vmio.cli import main

QEMU = "/usr/bin/qemu-system-x86_64"
CONFIGS = {
    "virtio-blk+iothread": Config("a", "virtio-blk", iothreads=2, image="/var/tmp/x.img"),
    "virtio-blk+vq-mapping": Config("b", "virtio-blk", iothreads=4, vq_mapping=True, image="/var/tmp/x.img"),
    "virtio-scsi": Config(
        "c", "virtio-scsi", iothreads=1, image="/var/tmp/x.img", cache="writeback", aio="threads"
    ),
    "block": Config("d", "virtio-blk", iothreads=1, passthrough="block", device="sdb"),
    "vfio": Config("e", "virtio-blk", passthrough="vfio", pci_address="0000:01:00.0"),
}


def domain_xml(fragment: str, name: str, kernel: str = "", initrd: str = "", cmdline: str = "") -> str:
    """A whole TCG domain around advise's fragment: ``<iothreads>`` at the top, devices in ``<devices>``."""
    parts = list(ET.fromstring(f"<x>{fragment}</x>"))
    dom = ET.Element("domain", type="qemu")
    ET.SubElement(dom, "name").text = name
    ET.SubElement(dom, "memory", unit="MiB").text = "256"
    ET.SubElement(dom, "vcpu").text = "1"
    dom.extend(p for p in parts if p.tag == "iothreads")
    os_ = ET.SubElement(dom, "os")
    ET.SubElement(os_, "type", arch="x86_64", machine="pc").text = "hvm"
    if kernel:
        ET.SubElement(os_, "kernel").text = kernel
        ET.SubElement(os_, "initrd").text = initrd
        ET.SubElement(os_, "cmdline").text = cmdline
    devices = ET.SubElement(dom, "devices")
    ET.SubElement(devices, "emulator").text = QEMU
    devices.extend(p for p in parts if p.tag != "iothreads")
    ET.SubElement(devices, "serial", type="pty")
    ET.SubElement(devices, "memballoon", model="none")  # no <interface>: the domain has no network
    return ET.tostring(dom, encoding="unicode")


def validate(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "domain.xml"
    path.write_text(text)
    return subprocess.run(
        ["virt-xml-validate", str(path), "domain"], capture_output=True, text=True, timeout=60
    )


needs_validate = pytest.mark.skipif(
    shutil.which("virt-xml-validate") is None or shutil.which("virsh") is None,
    reason="needs virt-xml-validate and virsh (libvirt-clients)",
)


@needs_validate
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_advised_xml_validates_against_libvirts_schema(config: str, tmp_path: Path) -> None:
    """Each configuration's XML, written for this host's libvirt, is what this host's schema accepts."""
    fragment = libvirt_xml(CONFIGS[config], _libvirt_version())
    done = validate(domain_xml(fragment, f"v-{config}"), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def _libvirt_version() -> tuple[int, int, int]:
    text = subprocess.run(["virsh", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    major, minor, micro = ([*text.split("."), "0", "0"])[:3]
    return int(major), int(minor), int(micro)


def _queue_mapping(fragment: str) -> list[str]:
    """The iothread ids inside the disk's ``<driver><iothreads>`` (libvirt >= 10.0's queue mapping)."""
    return [t.get("id", "") for d in ET.fromstring(f"<x>{fragment}</x>").iter("driver")
            for t in d.findall("iothreads/iothread")]  # fmt: skip


VQ_FACTS = HostFacts(
    "9.0.0",
    frozenset({"virtio-blk-pci", "virtio-scsi-pci"}),
    {
        "virtio-blk-pci": frozenset({"iothread", "iothread-vq-mapping"}),
        "virtio-scsi-pci": frozenset({"iothread"}),
    },
    cpus=8,
)


@needs_validate
def test_advise_writes_the_xml_this_hosts_libvirt_takes(tmp_path: Path) -> None:
    """QEMU 9.0 spreads a disk's queues over 4 iothreads; the XML follows the libvirt version it is for: the
    mapping from libvirt 10.0.0 on, one iothread for the queues before, said in the advice."""
    here = _libvirt_version()
    text = ".".join(map(str, here))
    advice = advise(dataclasses.replace(VQ_FACTS, libvirt_version=text), Requirements())
    assert advice.config.vq_mapping and advice.config.iothreads == 4  # QEMU's side keeps the mapping
    done = validate(domain_xml(advice.libvirt_xml, "v-here"), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # this host's schema takes what was advised
    step = next(s for s in advice.path if s.node == "libvirt")
    if here < (10, 0, 0):
        assert _queue_mapping(advice.libvirt_xml) == []
        driver = ET.fromstring(advice.libvirt_xml.split("\n", 1)[1]).find("driver")
        assert driver is not None and (driver.get("iothread"), driver.get("queues")) == ("1", "4")
        assert step.answer.startswith(f"no: libvirt {text} lacks <driver><iothreads> (needs 10.0.0)")
        assert f"libvirt XML (for this host's libvirt: libvirt {text} lacks" in format_advice(advice)
    else:
        assert _queue_mapping(advice.libvirt_xml) == ["1", "2", "3", "4"]
    # a newer libvirt gets the mapping itself, an older one a plain iothread (the version is the seam)
    newer = advise(dataclasses.replace(VQ_FACTS, libvirt_version="10.0.0"), Requirements())
    assert _queue_mapping(newer.libvirt_xml) == ["1", "2", "3", "4"]
    assert next(s for s in newer.path if s.node == "libvirt").answer.startswith("yes: libvirt 10.0.0")
    assert "<iothreads>4</iothreads>" in newer.libvirt_xml
    older = advise(dataclasses.replace(VQ_FACTS, libvirt_version="9.10.0"), Requirements())
    assert _queue_mapping(older.libvirt_xml) == [] and "<iothreads>1</iothreads>" in older.libvirt_xml
    assert validate(domain_xml(older.libvirt_xml, "v-older"), tmp_path).returncode == 0
    if here < (10, 0, 0):  # and this host's schema still refuses the mapping: the fallback is needed here
        assert validate(domain_xml(newer.libvirt_xml, "v-newer"), tmp_path).returncode != 0


@needs_validate
def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    """A disk outside ``<devices>`` or an unknown cache mode: libvirt's schema refuses both."""
    fragment = libvirt_xml(CONFIGS["virtio-blk+iothread"])
    wrong = domain_xml("", "w").replace("<os>", fragment + "<os>")
    assert validate(wrong, tmp_path).returncode != 0
    bad_cache = domain_xml(fragment.replace('cache="none"', 'cache="fast"'), "w")
    assert validate(bad_cache, tmp_path).returncode != 0


def _virsh(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["virsh", "-c", "qemu:///system", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.qemu
@pytest.mark.root
@pytest.mark.slow
def test_diagnose_live_reads_a_libvirt_domain(libvirtd: str, capsys: pytest.CaptureFixture[str]) -> None:
    from vmio.guest import build

    guest = build()
    files = Path(tempfile.mkdtemp(prefix="vmio-libvirt-", dir="/var/tmp"))  # readable by libvirt-qemu
    name = f"vmio-test-{os.getpid()}"
    try:
        files.chmod(0o755)
        for src, dst in ((guest.kernel, "vmlinuz"), (guest.initrd, "initramfs.img")):
            shutil.copyfile(src, files / dst)
            (files / dst).chmod(0o644)
        image = files / "disk.img"
        with open(image, "wb") as f:
            f.truncate(16 << 20)
        fragment = libvirt_xml(Config(name, "virtio-blk", iothreads=2, image=str(image)))
        xml = domain_xml(fragment, name, str(files / "vmlinuz"), str(files / "initramfs.img"),
                         "console=ttyS0 panic=-1 vmio.disks=/dev/vda")  # fmt: skip
        (files / "domain.xml").write_text(xml)
        done = _virsh("define", str(files / "domain.xml"))
        assert done.returncode == 0, done.stderr
        done = _virsh("start", name)
        assert done.returncode == 0, done.stderr
        info = _virsh("iothreadinfo", name).stdout  # libvirt's own account of the domain's iothreads
        ids = sorted(f"iothread{line.split()[0]}" for line in info.splitlines()[2:] if line.strip())
        assert ids == ["iothread1", "iothread2"]
        capsys.readouterr()
        assert main(["diagnose", "--live", "--seconds", "1", "--json"]) == 0
        vms = [vm for vm in json.loads(capsys.readouterr().out)["vms"] if vm["name"] == name]
        assert len(vms) == 1, "diagnose --live did not find the libvirt domain's QEMU"
        vm = vms[0]
        assert vm["qmp"]["reachable"] and vm["qmp"]["via"] == f"virsh qemu-monitor-command {name}"
        assert vm["accel"] == "tcg" and sorted(vm["iothreads"]) == ids
        # the version QMP gave, against the domain's own QEMU binary asked directly
        exe = os.readlink(f"/proc/{vm['pid']}/exe")
        said = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
        assert vm["qemu_version"] and said.split()[3].startswith(vm["qemu_version"]), said
        (disk,) = vm["disks"]
        assert disk["path"] == str(image) and disk["bus"] == "virtio-blk"
        assert disk["iothread"] == "iothread1"  # <driver iothread="1"> as advised
    finally:
        _virsh("destroy", name, timeout=60)
        _virsh("undefine", name, timeout=60)
        shutil.rmtree(files, ignore_errors=True)
