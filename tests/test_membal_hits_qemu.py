"""The guest's page-cache hit reports on real VMs (TCG here): a guest reads a region twice and the agent
reports the first pass as misses and the second as hits, against fio's own byte count; ``efficiency``
moves memory toward the VM with more hits per cache page. TCG is noisy: directions and signs only."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vmio.guest import GuestImage
from vmio.membal.balloon import BalloonedVM
from vmio.membal.live import LiveController
from vmio.membal.liverun import LiveSettings, vm_configs
from vmio.membal.livework import Load, LoadRun, job_text
from vmio.membal.signals import PAGE, signals
from vmio.qemu import AccelProber, Fleet, QemuCaps
from vmio.qemu.agent import AgentRecord
from vmio.qemu.vm import VM
from vmio.store import Store
from vmio.store.membal import decisions, start_run

from qemu_support import caps, fio_client, needs_qemu, session_guest

pytestmark = [pytest.mark.qemu, pytest.mark.fio, needs_qemu]
M = 1 << 20
# PSI pressure on the thrashing VM would make the governor deflate its balloon whatever the policy says:
# only a stall in nine tenths of an interval counts here, so the moves are the policy's.
SETTINGS = LiveSettings(
    policy="efficiency", budget=576 * M, max_step=32 * M, interval=1.5, duration=12.0, psi_threshold=0.9,
    loads=(Load(48 * M), Load(400 * M)),
)  # fmt: skip


@pytest.fixture
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Fresh guests per test: stopping a load's host fio client leaves its job running in the guest's fio
    server until the job's own runtime ends, and a later test would count that job's reads as its own."""
    guest: GuestImage = session_guest(tmp_path_factory)
    qcaps: QemuCaps = caps()
    work = tmp_path_factory.mktemp("hits")
    accel = AccelProber(guest, qcaps, cache_dir=guest.path.parents[1] / "accel").resolve("auto").accel
    with Fleet(vm_configs(SETTINGS, accel, work), guest, caps=qcaps, workdir=work / "vms") as f:
        yield f


def fresh(vm: BalloonedVM) -> AgentRecord:
    """A record taken after now: drain what came, then the second record after that."""
    vm.records()
    deadline = time.monotonic() + 20
    got: list[AgentRecord] = []
    while len(got) < 2 and time.monotonic() < deadline:
        got += vm.records()
        time.sleep(0.1)
    assert len(got) >= 2, "no agent records"
    return got[-1]


def settled(vm: BalloonedVM, start: AgentRecord, timeout: float = 30.0) -> AgentRecord:
    """The first of two consecutive records with the same workload read totals, above ``start``'s: an
    ended job's counters reach the fio server only once it is reaped (a zombie's are not reported)."""
    deadline = time.monotonic() + timeout
    last: AgentRecord | None = None
    while time.monotonic() < deadline:
        for rec in vm.records():
            same = last is not None and (last.read_chars, last.read_bytes) == (rec.read_chars, rec.read_bytes)
            if same and rec.read_chars > start.read_chars:
                return rec
            last = rec
        time.sleep(0.1)
    raise AssertionError(f"the workload's read counters did not settle within {timeout:g} s")


def run_job(vm: VM, job: Path) -> tuple[dict[str, Any], tuple[AgentRecord, AgentRecord]]:
    """fio's read totals for ``job`` run in ``vm``'s fio server, and the guest's counters before it and once
    they settled after it."""
    guest = BalloonedVM(vm)
    try:
        start = fresh(guest)
        entry = fio_client([f"--client={vm.fio_client}", str(job)])[0]
        end = settled(guest, start)
    finally:
        guest.close()
    read = entry["read"]
    assert isinstance(read, dict)
    return read, (start, end)


def test_second_pass_over_a_region_is_reported_as_hits(fleet: Fleet, tmp_path: Path) -> None:
    """One fio job reads 16M over and over for 6 s: the first pass misses, every later one hits. (A
    time-based job wraps around without closing the device; Linux drops a block device's page cache at
    its last close, so separate jobs, or ``loops``/``io_size``, would read it from the disk again.)"""
    vm = fleet.vms[0]
    job = tmp_path / "twice.fio"
    job.write_text(
        f"[twice]\nfilename={vm.guest_devices()[0]}\nrw=read\nbs=64k\nsize=16M\nruntime=6\ntime_based=1\n"
        "direct=0\ninvalidate=0\nioengine=psync\n"
    )
    read, (start, end) = run_job(vm, job)
    total, once = int(read["io_bytes"]) // PAGE, 16 * M // PAGE  # fio's own count of what it read
    assert total >= 2 * once, f"fio read only {total} pages in 6 s"
    got = signals(start, end)
    assert got.workload_procs >= 1
    assert 0.9 * once <= got.misses <= 1.1 * once  # the first pass came from the disk
    assert got.hits >= 0.9 * (total - once)  # every later pass from the page cache
    assert 0.95 * total <= got.hits + got.misses <= 1.05 * total


def test_random_reads_report_the_distinct_blocks_as_misses(fleet: Fleet, tmp_path: Path) -> None:
    """The live load's own random-read job (32k blocks over 64M, which fits the guest's cache) for 5 s:
    n reads drawn independently from N blocks miss on N(1 - (1 - 1/N)^n) distinct blocks and hit on the
    rest. Readahead would count pages fetched ahead as misses (measured with ``fadvise_hint=0``: +12 %), and
    fio's default random map (each block once per pass) would report no hits at all (measured: 0)."""
    vm = fleet.vms[1]
    block, region = 32 << 10, 64 * M
    job = tmp_path / "random.fio"
    job.write_text(job_text(Load(region, "randread", block), vm.guest_devices()[0], 5))
    read, (start, end) = run_job(vm, job)
    n, blocks, per = int(read["total_ios"]), region // block, block // PAGE  # fio's own count of its reads
    assert n >= blocks // 2, f"fio read only {n} blocks in 5 s"
    distinct = blocks * (1 - (1 - 1 / blocks) ** n)  # its standard deviation is ~1 % here
    got = signals(start, end)
    assert abs(got.misses - distinct * per) <= 0.04 * distinct * per, (n, got.misses, distinct * per)
    assert abs(got.hits - (n - distinct) * per) <= 0.04 * n * per, (n, got.hits, (n - distinct) * per)


def test_efficiency_moves_memory_toward_more_hits_per_cache_page(fleet: Fleet, tmp_path: Path) -> None:
    """vmio-0 rereads 48M (fits its cache: hits), vmio-1 reads 400M at random (does not fit: misses)."""
    guests = [BalloonedVM(vm) for vm in fleet.vms]
    clients = [
        (vm.fio_client, load, vm.guest_devices()[0])
        for vm, load in zip(fleet.vms, SETTINGS.loads, strict=True)
    ]
    with Store(tmp_path / "m.db") as store:
        run_id = start_run(store, "efficiency", SETTINGS.to_json())
        control = LiveController(
            guests, SETTINGS.rules(), "efficiency", store=store, run_id=run_id, psi_threshold=0.9
        )
        load = LoadRun(clients, SETTINGS.duration + 10, tmp_path)
        try:
            control.start()
            control.run(SETTINGS.duration, SETTINGS.interval)
        finally:
            load.stop()
            for g in guests:
                g.close()
        rows = decisions(store, run_id)
    hot = [r for r in rows if r.vm == "vmio-0"]
    cold = [r for r in rows if r.vm == "vmio-1"]
    assert sum(r.inputs["signals"]["hits"] for r in hot) > 0
    eff = [
        sum(r.inputs["observation"]["hit_pages"] for r in rs)
        / max(1, sum(r.inputs["observation"]["resident"] for r in rs))
        for rs in (hot, cold)
    ]
    assert eff[0] > eff[1]  # the reports say vmio-0 gets more hits per cache page
    moves = [
        (r.vm[-1], r.new_target >> 20, r.inputs["observation"]["hit_pages"], r.inputs["observation"]["resident"],
         r.inputs["observation"]["allocation"], r.reason)
        for r in rows
    ]  # fmt: skip
    assert control.targets[0] > 288 * M > control.targets[1], moves  # and memory moved toward it
    assert any(r.reason == "policy" and r.new_target > r.old_target for r in hot), [r.reason for r in hot]
    assert all(r.new_target >= 256 * M for r in rows) and sum(control.targets) <= 576 * M
