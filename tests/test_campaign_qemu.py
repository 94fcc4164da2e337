"""VM targets through the whole spine, with real QEMU (TCG here, KVM on a real host) and real fio."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from vmio.cli import main
from vmio.stats import histogram
from vmio.store import Store
from vmio.store import rows as summary

from conftest import SESSION_MARK, leftover_processes
from qemu_support import alive, needs_qemu

pytestmark = [needs_qemu, pytest.mark.qemu, pytest.mark.slow]

WORKLOAD = '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\niodepth = 4\nruntime = "2s"\n'


def vm_target(name: str, backing: str, **keys: object) -> str:
    lines = [f'[[target]]\nname = "{name}"\nkind = "qemu"\nbacking = ["{backing}"]']
    lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def qemu_pids(marker: str) -> list[int]:
    """The live processes naming ``marker`` on their command line or holding it open (QEMU opens a backing
    vmio holds through ``/proc/PID/fd/N``, so its command line no longer names the file)."""
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    pids = {int(p) for p in out.split()}
    qemus = subprocess.run(["pgrep", "qemu-system"], capture_output=True, text=True).stdout
    for pid in (int(p) for p in qemus.split()):
        with contextlib.suppress(OSError):
            fds = Path(f"/proc/{pid}/fd")
            if any(os.readlink(fds / fd) == marker for fd in os.listdir(fds)):
                pids.add(pid)
    return sorted(p for p in pids if alive(p))


@pytest.fixture(scope="module")
def vm_campaign(tmp_path_factory: pytest.TempPathFactory) -> Store:
    work = tmp_path_factory.mktemp("vm")
    scratch = Path("/var/tmp") / f"vmio-qemu-test-{os.getpid()}-{work.name}"
    scratch.mkdir(exist_ok=True)
    img = f"{scratch}/disk.img"
    targets = "".join([
        f'[[target]]\nname = "bare"\npath = "{img}"\nsize = "256M"\n',
        vm_target("vblk", img, size="64M"),
        vm_target("vblk-io-2jobs", img, size="64M", iothreads=1, jobs_per_vm=2),
        vm_target("scsi-2vms", img, size="64M", bus="virtio-scsi", vms=2),
        vm_target("nvme", img, size="64M", bus="nvme"),
    ])  # fmt: skip
    spec = work / "vm.toml"
    spec.write_text(f'[campaign]\nname = "vm"\n\n{targets}\n{WORKLOAD}')
    db = work / "vm.db"
    # the host file must exist before the loop device can cover it: run bare first, then add `block`
    assert main(["run", str(spec), "--db", str(db)]) == 0
    loop = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True, timeout=30)
    if loop.returncode == 0:
        dev = loop.stdout.strip()
        block = work / "block.toml"
        block.write_text(
            f'[campaign]\nname = "vm-block"\n\n{vm_target("block", dev, bus="block")}\n{WORKLOAD}'
        )
        try:
            assert main(["run", str(block), "--db", str(db)]) == 0
        finally:
            subprocess.run(["losetup", "-d", dev], timeout=30, check=False)
    yield Store(db)
    for f in scratch.iterdir():
        f.unlink()
    scratch.rmdir()


def rows(store: Store, campaign: str = "vm") -> dict[str, summary.PointRow]:
    return {r.target: r for r in summary.point_rows(store, campaign)}


def test_every_disk_path_measured_in_a_vm(vm_campaign: Store) -> None:
    found = rows(vm_campaign)
    assert set(found) == {"bare", "vblk", "vblk-io-2jobs", "scsi-2vms", "nvme"}
    for name, row in found.items():
        assert row.status == "done", (name, row.error)
        assert row.read_iops > 0
        if name == "bare":
            assert row.accel is None and row.guest_io_warnings is None
        else:
            assert row.accel in ("kvm", "tcg") and row.qemu_version
            assert isinstance(row.guest_io_warnings, int)  # the guest console was read for the point


def test_topologies_one_vm_many_jobs_and_many_vms_one_job(vm_campaign: Store) -> None:
    runs = {r["target"]: r for r in vm_campaign.runs("vm")}
    two_jobs = vm_campaign.results(runs["vblk-io-2jobs"]["id"])
    assert len(two_jobs) == 2 and len({r["host"] for r in two_jobs}) == 1
    two_vms = vm_campaign.results(runs["scsi-2vms"]["id"])
    assert len(two_vms) == 2 and len({r["host"] for r in two_vms}) == 2
    row = summary.point_row(vm_campaign, "vm", runs["scsi-2vms"])
    merged = histogram.merge(vm_campaign.histogram(r["id"]) for r in two_vms)
    assert row.read_lat_ns["p99"] == histogram.percentile(merged, 99)
    assert row.read_iops == pytest.approx(sum(r["iops"] for r in two_vms))


def test_argv_accelerator_and_disjoint_ranges_are_recorded(vm_campaign: Store) -> None:
    runs = {r["target"]: r for r in vm_campaign.runs("vm")}
    argvs = json.loads(runs["scsi-2vms"]["qemu_argv"])
    assert len(argvs) == 2
    assert all(any(a.startswith("vmio-") and "debug-threads=on" in a for a in argv) for argv in argvs)
    text = [" ".join(argv) for argv in argvs]
    assert f"offset={64 << 20}" not in text[0] and f"offset={64 << 20}" in text[1]
    assert all(f"size={64 << 20}" in t for t in text)
    assert "nvme_core.io_timeout=2" in " ".join(json.loads(runs["nvme"]["qemu_argv"])[0])
    accel = runs["nvme"]["accel"]
    assert any(
        f"accel={accel}" in a or a == accel for a in argvs[0] + json.loads(runs["nvme"]["qemu_argv"])[0]
    )


def test_qemu_threads_are_sampled(vm_campaign: Store) -> None:
    runs = {r["target"]: r for r in vm_campaign.runs("vm")}
    io = vm_campaign.run_metrics(runs["vblk-io-2jobs"]["id"])
    assert io[("qemu:vmio-0", "vcpu_pct")] > 0
    assert io[("qemu:vmio-0", "iothread_pct")] > 0  # the disk is served by its I/O thread
    plain = vm_campaign.run_metrics(runs["vblk"]["id"])
    assert plain[("qemu:vmio-0", "iothread_pct")] == 0 and plain[("qemu:vmio-0", "main_pct")] > 0
    assert {src for src, _ in vm_campaign.run_metrics(runs["scsi-2vms"]["id"])} >= {
        "qemu:vmio-0",
        "qemu:vmio-1",
    }


def test_block_device_given_raw(vm_campaign: Store) -> None:
    if "vm-block" not in vm_campaign.campaigns():
        pytest.skip("needs a loop device (root)")
    (row,) = rows(vm_campaign, "vm-block").values()
    assert row.status == "done" and row.read_iops > 0
    assert row.device.startswith("loop")


def test_a_guest_that_does_not_come_up_is_killed_and_recorded(scratch: Path, tmp_path: Path) -> None:
    spec = tmp_path / "hang.toml"
    spec.write_text(
        '[campaign]\nname = "hang"\n' + vm_target("slow", f"{scratch}/h.img", size="32M")
        + f'[[target]]\nname = "bare"\npath = "{scratch}/h.img"\n\n' + WORKLOAD
    )  # fmt: skip
    db = tmp_path / "h.db"
    marker = f"{scratch}/h.img"
    assert main(["run", str(spec), "--db", str(db), "--boot-timeout", "500ms"]) == 1
    with Store(db) as store:
        found = rows(store, "hang")
        assert found["slow"].status == "failed" and "ready" in str(found["slow"].error).lower()
        run = next(r for r in store.runs("hang") if r["target"] == "slow")
        assert "console" in run["log"].lower() or "VMIO" in run["log"] or "Linux" in run["log"]
        assert found["bare"].status == "done"
    time.sleep(1)
    assert qemu_pids(marker) == []


def test_no_qemu_outlives_a_killed_vmio_run(scratch: Path, tmp_path: Path) -> None:
    spec = tmp_path / "k.toml"
    marker = f"{scratch}/k.img"
    spec.write_text(
        '[campaign]\nname = "k"\n' + vm_target("v", marker, size="32M") + WORKLOAD.replace("2s", "30s")
    )
    cmd = [sys.executable, "-m", "vmio", "run", str(spec), "--db", str(tmp_path / "k.db")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not qemu_pids(marker):
        time.sleep(0.2)
    assert qemu_pids(marker), "QEMU never started"
    time.sleep(1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and qemu_pids(marker):
        time.sleep(0.2)
    assert qemu_pids(marker) == []
    assert (
        subprocess.run(["pgrep", "-af", "fio --output-format"], capture_output=True, text=True).stdout.count(
            str(spec)
        )
        == 0
    )


def test_trace_true_keeps_each_points_requests_for_relocate(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "t.toml"
    spec.write_text(
        '[campaign]\nname = "tr"\n' + vm_target("v", f"{scratch}/t.img", size="32M", trace=True) + WORKLOAD
    )
    db = tmp_path / "t.db"
    assert main(["run", str(spec), "--db", str(db)]) == 0
    with Store(db) as store:
        (run,) = store.runs("tr")
        ios = sum(r["total_ios"] for r in store.results(run["id"]))
    capsys.readouterr()
    assert main(["relocate", "analyze", "--run", "tr", "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # every measured request is in the trace (the trace also holds fio's ramp and layout reads)
    assert doc["requests"] >= ios > 0
    assert json.dumps(doc).count("vmio-0") >= 1
    assert main(["relocate", "analyze", "--run", "nope", "--db", str(db)]) == 2


def test_evidence_takes_the_busiest_qemu_thread(vm_campaign: Store) -> None:
    from vmio.advise.from_store import evidence_for, stored_campaign

    run = next(r for r in vm_campaign.runs("vm") if r["target"] == "vblk-io-2jobs")
    metrics = vm_campaign.run_metrics(run["id"])
    ev = evidence_for(vm_campaign, stored_campaign(vm_campaign, "vm"), run)
    assert ev.vm is not None and (ev.vm.count, ev.vm.jobs_per_vm, ev.vm.iothreads) == (1, 2, 1)
    assert ev.measured.qemu_iothread_cpu_pct == pytest.approx(
        min(100.0, metrics[("qemu:vmio-0", "iothread_max_pct")])
    )
    assert ev.measured.qemu_vcpu_cpu_pct == pytest.approx(
        min(100.0, metrics[("qemu:vmio-0", "vcpu_max_pct")])
    )


class ProcessCpu:
    """Every QEMU of this test run, its whole-process CPU ticks from ``/proc/PID/stat`` (utime + stime,
    which keep the time of threads that have exited) read every 50 ms and stamped with the wall clock."""

    def __init__(self) -> None:
        self.series: dict[int, list[tuple[float, int]]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        mark = os.environ[SESSION_MARK]
        while not self.stop.wait(0.05):
            for pid, _ in leftover_processes(mark):
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    comm = Path(f"/proc/{pid}/comm").read_text()
                except OSError:
                    continue
                if comm.startswith("qemu-system"):
                    fields = stat[stat.rindex(")") + 2 :].split()
                    self.series.setdefault(pid, []).append((time.time(), int(fields[11]) + int(fields[12])))

    def __enter__(self) -> ProcessCpu:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def pct(self, start: float, end: float) -> float:
        """The QEMU process that ran over [start, end]: its CPU there in % of one core."""
        spans = {pid: (s[0][0], s[-1][0]) for pid, s in self.series.items()}
        # polled every 50 ms: the last reading may come a few ms before the end of the last window
        found = [s for s in self.series.values() if s[0][0] <= start and s[-1][0] >= end - 0.06]
        assert len(found) == 1, f"window {start}..{end}; QEMU processes seen {spans}"
        series = found[0]
        times, ticks = [t for t, _ in series], [float(n) for _, n in series]
        used = float(np.interp(end, times, ticks) - np.interp(start, times, ticks)) / os.sysconf("SC_CLK_TCK")
        return 100.0 * used / (end - start)


@pytest.mark.alone  # the I/O thread's share of a core, against fixed bounds
def test_qemu_thread_classes_add_up_to_the_process_and_follow_the_load(scratch: Path, tmp_path: Path) -> None:
    """Per-thread CPU against the QEMU process's own total, and each class where the load is: a guest
    job that only computes (fio's null engine) loads the vCPU and leaves the I/O thread idle; a guest
    doing disk I/O through an iothread loads that iothread."""
    spec = tmp_path / "cpu.toml"
    spec.write_text(
        '[campaign]\nname = "cpu"\n' + vm_target("v", f"{scratch}/c.img", size="32M", iothreads=1)
        + '[[workload]]\nname = "compute"\nrw = "randread"\nbs = "4k"\nioengine = "null"\n'
        'runtime = "3s"\nramp = "1s"\n'
        '[[workload]]\nname = "io"\nrw = "randread"\nbs = "4k"\niodepth = 8\nruntime = "3s"\nramp = "1s"\n'
    )  # fmt: skip
    db = tmp_path / "c.db"
    with ProcessCpu() as process:
        assert main(["run", str(spec), "--db", str(db), "--interval", "200ms"]) == 0
    with Store(db) as store:
        runs = {r["workload"]: r for r in store.runs("cpu")}
        classes = {w: store.run_metrics(r["id"]) for w, r in runs.items()}
        facts = {w: json.loads(r["host_json"]) for w, r in runs.items()}
    for workload, metrics in classes.items():
        ours = sum(metrics[("qemu:vmio-0", f"{kind}_pct")] for kind in ("vcpu", "iothread", "main", "other"))
        t0 = facts[workload]["samples_t0"]
        start, end = (t0 + t for t in facts[workload]["measured_window"])
        total = process.pct(start, end)
        assert total > 20, f"{workload}: QEMU hardly ran ({total:.1f} %)"
        assert ours == pytest.approx(total, rel=0.05), (workload, ours, total, metrics)
    compute, io = classes["compute"], classes["io"]
    compute_total = sum(compute[("qemu:vmio-0", f"{k}_pct")] for k in ("vcpu", "iothread", "main", "other"))
    # the guest's CPU-bound job runs on its vCPU: nearly all of QEMU's time (59 of 61 % measured here)
    assert compute[("qemu:vmio-0", "vcpu_pct")] > 0.9 * compute_total
    assert compute[("qemu:vmio-0", "iothread_pct")] < 2  # and no disk I/O reaches the iothread
    # the disk's I/O is served by its iothread (18 % measured here)
    assert io[("qemu:vmio-0", "iothread_pct")] > 5 * max(1.0, compute[("qemu:vmio-0", "iothread_pct")])
