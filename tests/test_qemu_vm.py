"""Real QEMU (TCG here): boot the guest on each disk path, run fio from the host, fail and clean up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.errors import GuestBootError, VmioError
from vmio.guest import GuestImage
from vmio.qemu import VM, Disk, Fleet, QemuCaps, ThreadSampler, VMConfig, VMState, read_agent_records

from qemu_support import alive, caps, fio_client, job_file, needs_qemu, read_ios, session_guest

pytestmark = [pytest.mark.qemu, pytest.mark.fio, needs_qemu]


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> GuestImage:
    return session_guest(tmp_path_factory)


@pytest.fixture(scope="module")
def qcaps() -> QemuCaps:
    return caps()


@pytest.fixture
def backing(tmp_path: Path) -> Path:
    path = tmp_path / "backing.img"
    with open(path, "wb") as f:
        f.truncate(64 << 20)
    return path


def boot_and_read(config: VMConfig, guest: GuestImage, qcaps: QemuCaps, tmp_path: Path) -> VM:
    with VM(config, guest, caps=qcaps, workdir=tmp_path / config.name) as vm:
        assert vm.state == VMState.READY and vm.query_status() == "running"
        job = job_file(tmp_path / "job.fio", vm.guest_devices()[0])
        [entry] = fio_client([f"--client={vm.fio_client}", str(job)])
        assert read_ios(entry) > 0 and entry["error"] == 0
        assert entry["job options"]["filename"] == vm.guest_devices()[0]  # type: ignore[index]
    assert vm.state == VMState.STOPPED and not alive(vm.pid)  # type: ignore[comparison-overlap]
    return vm


@pytest.mark.parametrize(
    ("bus", "device", "cache", "aio"),
    [
        ("virtio-blk", "/dev/vda", "none", "native"),
        ("virtio-scsi", "/dev/sda", "writeback", "threads"),
        ("nvme", "/dev/nvme0n1", "directsync", "io_uring"),
    ],
)
def test_boot_and_fio_on_each_bus(
    bus: str,
    device: str,
    cache: str,
    aio: str,
    guest: GuestImage,
    qcaps: QemuCaps,
    backing: Path,
    tmp_path: Path,
) -> None:
    disk = Disk(backing, offset=1 << 20, size=32 << 20)
    config = VMConfig(disks=(disk,), bus=bus, cache=cache, aio=aio)
    assert config.guest_devices() == [device]
    vm = boot_and_read(config, guest, qcaps, tmp_path)
    assert "-name vmio-0,debug-threads=on" in " ".join(vm.argv) and f"aio={aio}" in " ".join(vm.argv)


def test_virtio_blk_iothread_runs_the_disk(
    guest: GuestImage, qcaps: QemuCaps, backing: Path, tmp_path: Path
) -> None:
    config = VMConfig(disks=(Disk(backing),), iothreads=1, queues=2, agent_interval=0.5)
    with VM(config, guest, caps=qcaps, workdir=tmp_path / "vm") as vm:
        sampler = ThreadSampler(vm.pid, config.iothread_ids)
        job = job_file(tmp_path / "job.fio", "/dev/vda")
        [entry] = fio_client([f"--client={vm.fio_client}", str(job)])
        rows = sampler.sample()
        assert read_ios(entry) > 0
        kinds = {row.kind: row for row in rows}
        assert {"vcpu", "iothread", "main"} <= set(kinds)
        assert kinds["iothread"].comm == "IO iothread0" and kinds["vcpu"].comm == "CPU 0/TCG"
        assert kinds["iothread"].total_pct > 0  # the disk's requests went through the I/O thread
        [first, second] = read_agent_records(vm.runtime.agent, count=2)
        assert second.uptime > first.uptime and first.meminfo["MemTotal"] > 200 << 20
        assert "pgpgin" in first.vmstat
        before = vm.query_balloon()
        vm.balloon(before - (64 << 20))
        deadline = time.monotonic() + 10
        while vm.query_balloon() >= before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert vm.query_balloon() < before


@pytest.mark.root
def test_block_bus_gives_a_loop_device_raw(
    guest: GuestImage, qcaps: QemuCaps, backing: Path, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for losetup (loop devices)")
    loop = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, timeout=30, check=False
    )
    if loop.returncode != 0:
        pytest.skip(f"losetup cannot attach a loop device: {loop.stderr.strip()}")
    device = loop.stdout.strip()
    try:
        vm = boot_and_read(VMConfig(disks=(Disk(Path(device)),), bus="block"), guest, qcaps, tmp_path)
        assert f"driver=host_device,filename={device}" in " ".join(vm.argv)
    finally:
        subprocess.run(["losetup", "-d", device], timeout=30, check=False)


def test_fleet_boots_two_vms_on_one_backing_file(
    guest: GuestImage, qcaps: QemuCaps, backing: Path, tmp_path: Path
) -> None:
    half = 32 << 20
    configs = [VMConfig(index=i, disks=(Disk(backing, offset=i * half, size=half),)) for i in range(2)]
    with Fleet(configs, guest, caps=qcaps, workdir=tmp_path) as fleet:
        job = job_file(tmp_path / "job.fio", "/dev/vda", rw="randwrite")
        entries = fio_client(fleet.fio_client_args([job]))
        assert len(entries) == 2
        assert all(int(e["write"]["total_ios"]) > 0 for e in entries)  # type: ignore[index]
        ports = {vm.runtime.host_port for vm in fleet.vms}
        assert len(ports) == 2
    assert all(not alive(vm.pid) for vm in fleet.vms)
    for vm in fleet.vms:  # both asked to quit over QMP first, then waited for: neither needed a signal
        assert vm._proc is not None and vm._proc.returncode == 0
        assert "terminating on signal" not in vm.runtime.qemu_log.read_text()


def test_hung_guest_is_killed_with_console_tail(guest: GuestImage, qcaps: QemuCaps, tmp_path: Path) -> None:
    # rdinit=/bin/sh: the kernel starts a shell instead of vmio's init, so the ready marker never comes.
    config = VMConfig(extra_append=("rdinit=/bin/sh", "loglevel=6"))
    vm = VM(config, guest, caps=qcaps, workdir=tmp_path / "vm", boot_timeout=8)
    started = time.monotonic()
    with pytest.raises(GuestBootError) as info:
        vm.start()
    assert (
        time.monotonic() - started >= 8
    )  # it waited out its boot timeout (how fast it then ends: benchmarks/)
    assert "did not print VMIO-READY within 8 s" in str(info.value)
    assert "Linux version" in info.value.output  # the console tail is kept in the error
    assert vm.state == VMState.FAILED and not alive(vm.pid)
    vm.shutdown()
    assert vm.state == VMState.STOPPED  # type: ignore[comparison-overlap]
    with pytest.raises(VmioError, match="cannot go from stopped to launched"):
        vm.launch()


def test_guest_that_panics_fails_fast(guest: GuestImage, qcaps: QemuCaps, tmp_path: Path) -> None:
    vm = VM(
        VMConfig(extra_append=("rdinit=/nonexistent",)),
        guest,
        caps=qcaps,
        workdir=tmp_path / "vm",
        boot_timeout=60,
    )
    with pytest.raises(GuestBootError, match="exited with code 0 before the guest was ready") as info:
        vm.start()
    assert "Kernel panic" in info.value.output
    vm.shutdown()


CHILD = """
import sys, time
from pathlib import Path
from vmio.guest.image import load
from vmio.qemu import VM, VMConfig, probe_caps
vm = VM(VMConfig(), load(Path(sys.argv[1])), caps=probe_caps(), workdir=Path(sys.argv[2]))
vm.launch()
print(vm.pid, flush=True)
time.sleep(600)
"""


@pytest.fixture
def child_killer() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_no_qemu_outlives_a_sigkilled_parent(
    guest: GuestImage, tmp_path: Path, child_killer: list[subprocess.Popen[str]]
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(guest.path), str(tmp_path / "vm")],
        stdout=subprocess.PIPE,
        text=True,
    )
    child_killer.append(child)
    assert child.stdout is not None
    qemu_pid = int(child.stdout.readline())
    assert alive(qemu_pid)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    deadline = time.monotonic() + 10
    while alive(qemu_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(qemu_pid)
