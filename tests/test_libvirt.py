"""libvirt, where most KVM hosts are run: the ``<iothreads>``/``<disk>`` XML that ``advise`` (and ``tune``,
which prints the same advice) emits, wrapped in a whole domain, against libvirt's own schema
(``virt-xml-validate``); then Debian's ``libvirtd`` started here, a TCG domain (type ``qemu``, no network)
with vmio's guest and the advised disk, and ``vmio diagnose --live`` reading its disks and iothreads
through libvirt. The daemons this test starts are stopped at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.advise.disk_config import Config, libvirt_xml
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


@pytest.mark.skipif(
    shutil.which("virt-xml-validate") is None, reason="needs virt-xml-validate (libvirt-clients)"
)
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_advised_xml_validates_against_libvirts_schema(config: str, tmp_path: Path) -> None:
    fragment = libvirt_xml(CONFIGS[config])
    done = validate(domain_xml(fragment, f"v-{config}"), tmp_path)
    if config == "virtio-blk+vq-mapping" and _libvirt_version() < (10, 0):
        # <driver><iothreads><iothread id=.../> (QEMU's iothread-vq-mapping) is in libvirt's schema since
        # 10.0.0; Debian 12 has 9.0.0, whose schema refuses exactly that element.
        assert done.returncode != 0
        without = ET.fromstring(f"<x>{fragment}</x>")
        for driver in without.iter("driver"):
            driver.remove(driver.find("iothreads"))  # type: ignore[arg-type]
        rest = "".join(ET.tostring(e, encoding="unicode") for e in without)
        assert validate(domain_xml(rest, "v"), tmp_path).returncode == 0  # that element is all it refuses
        return
    assert done.returncode == 0, done.stdout + done.stderr


def _libvirt_version() -> tuple[int, int]:
    text = subprocess.run(["virsh", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.skipif(
    shutil.which("virt-xml-validate") is None, reason="needs virt-xml-validate (libvirt-clients)"
)
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


def _answers() -> bool:
    try:
        return _virsh("version", timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


@pytest.fixture
def libvirtd(tmp_path: Path) -> Iterator[None]:
    """libvirtd and virtlogd (QEMU's console log goes through it), started here unless already running;
    the ones started here are stopped at the end."""
    for tool in ("/usr/sbin/libvirtd", "/usr/sbin/virtlogd", "virsh", QEMU):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (libvirt-daemon-system, libvirt-daemon-driver-qemu, qemu-system-x86)")
    if os.geteuid() != 0:
        pytest.skip("starts the system libvirtd: needs root")
    started: list[int] = []
    for daemon in ("virtlogd", "libvirtd"):
        if daemon == "virtlogd" and Path("/run/libvirt/virtlogd-sock").exists():
            continue
        if daemon == "libvirtd" and _answers():
            continue
        pidfile = tmp_path / f"{daemon}.pid"
        subprocess.run(
            [f"/usr/sbin/{daemon}", "--daemon", "--pid-file", str(pidfile)], check=True, timeout=30
        )
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.1)
        started.append(int(pidfile.read_text()))
    for _ in range(100):
        if _answers():
            break
        time.sleep(0.3)
    else:
        pytest.fail("libvirtd started but virsh gets no answer")
    try:
        yield
    finally:
        for pid in reversed(started):
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)


@pytest.mark.qemu
@pytest.mark.root
@pytest.mark.slow
def test_diagnose_live_reads_a_libvirt_domain(libvirtd: None, capsys: pytest.CaptureFixture[str]) -> None:
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
        (disk,) = vm["disks"]
        assert disk["path"] == str(image) and disk["bus"] == "virtio-blk"
        assert disk["iothread"] == "iothread1"  # <driver iothread="1"> as advised
    finally:
        _virsh("destroy", name, timeout=60)
        _virsh("undefine", name, timeout=60)
        shutil.rmtree(files, ignore_errors=True)
