"""``membal run --domains``: existing libvirt domains' balloons, driven through libvirt (Debian's libvirtd,
started once per run by ``conftest.libvirtd``; two TCG canary domains kept for the module).

Referees: ``virsh dommemstat`` read by the test itself (the guests' balloon statistics and the balloons'
sizes) and the guest's own ``/proc/PID/io`` (through the QEMU guest agent) for the page-cache hits of a
process that is not fio.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.libvirt import agent
from vmio.libvirt.virsh import Virsh
from vmio.membal.domains import read_domains, record_from, run_domains, with_domains
from vmio.membal.live import Step
from vmio.membal.liverun import LiveSettings
from vmio.membal.signals import signals
from vmio.store import Store

from conftest import virsh

TAG = f"vmio-m{os.getpid()}"
M = 1 << 20
# re-read the disk for ``s`` seconds, then hold it open ``hold`` seconds more (Linux drops a block device's
# page cache at its last close)
LOAD = (
    "exec 3</dev/vda; end=$(( $(date +%s) + {s} )); while [ $(date +%s) -lt $end ]; do {reader} >/dev/null;"
    " done; sleep {hold}"
)
ALL = "cat /dev/vda"  # the whole disk: more than the guest's share can cache
PART = "dd if=/dev/vda bs=64k count=1536 2>/dev/null"  # 96 MiB: fits, re-read from the cache


def _memstat(name: str) -> dict[str, int]:
    done = virsh("dommemstat", name)
    assert done.returncode == 0, done.stderr
    return {k: int(v) for k, v in (line.split() for line in done.stdout.splitlines() if line.strip())}


@pytest.fixture(scope="module")
def canaries(libvirtd: str) -> Iterator[list[str]]:
    """Two running canaries of 512 MiB, each with a 320 MiB disk (vda in the guest)."""
    if shutil.which("qemu-ga") is None and not Path("/usr/sbin/qemu-ga").exists():
        pytest.skip("needs qemu-ga (qemu-guest-agent)")
    files = Path(subprocess.check_output(["mktemp", "-d", "/var/tmp/vmio-membal.XXXXXX"], text=True).strip())
    files.chmod(0o755)
    names = [f"{TAG}-a", f"{TAG}-b"]
    try:
        for name in names:
            argv = ["guest", "define", name, "--backing", str(files / f"{name}.img"), "--size", "320M"]
            assert main([*argv, "--memory", "512M", "--accel", "tcg"]) == 0
        yield names
    finally:
        for name in names:
            if virsh("domstate", name).returncode == 0:
                main(["guest", "undefine", name])
        shutil.rmtree(files, ignore_errors=True)


def _settings(names: list[str], policy: str, duration: float) -> LiveSettings:
    return LiveSettings(
        vms=2, memory=512 * M, floors=(192 * M, 192 * M), policy=policy, interval=2.0, duration=duration,
        max_step=48 * M, min_move=4 * M, uri="qemu:///system", domains=tuple(names),
    )  # fmt: skip


@pytest.mark.qemu
@pytest.mark.root
@pytest.mark.slow
def test_balloon_memory_moves_to_the_domain_whose_cache_gains(canaries: list[str], tmp_path: Path) -> None:
    """``mom`` runs on balloon statistics alone: domain a re-reads its disk (its cache grows until its free
    memory is gone), b idles; memory moves from b to a, and the figures decided on are dommemstat's."""
    a, b = canaries
    lv = Virsh("qemu:///system")
    settings = _settings(canaries, "mom", 30)
    virsh_, domains = read_domains(settings, lv)
    settings = with_domains(settings, domains)
    seen: list[tuple[Step, dict[str, dict[str, int]]]] = []

    def on_step(step: Step) -> None:
        seen.append((step, {n: _memstat(n) for n in canaries}))

    for n in canaries:
        agent.run(lv, n, "sh", ["-c", "echo 3 > /proc/sys/vm/drop_caches"])
    start = {n: _memstat(n) for n in canaries}
    pid = agent.start(lv, a, "sh", ["-c", LOAD.format(reader=ALL, s=20, hold=25)])
    with Store(tmp_path / "m.db") as store:
        out = run_domains(settings, store, virsh_, domains, on_step=on_step)
    agent.run(lv, a, "kill", [str(pid)])
    initial = settings.rules().initial()
    # a's cache grew (the test's own dommemstat), b's did not
    last = seen[-1][1]
    assert last[a]["disk_caches"] - start[a]["disk_caches"] > 96 * 1024
    assert abs(last[b]["disk_caches"] - start[b]["disk_caches"]) < 16 * 1024
    # the balloons moved toward a: its balloon as libvirt reports it grew past its initial share, b's shrank
    assert max(s[a]["actual"] for _, s in seen) * 1024 > initial[0] + 16 * M
    assert min(s[b]["actual"] for _, s in seen) * 1024 < initial[1] - 16 * M
    assert out.summary[a]["final"] > out.summary[b]["final"]
    # the decisions were made from dommemstat's figures: in the last steps (a's load over) the file pages
    # the controller saw are the cache the guest's balloon driver reports
    step = seen[-1][0]
    for v in step.vms:
        assert abs(v.signals.file - last[v.vm]["disk_caches"] * 1024) <= 4 * M, v.vm
        assert v.signals.total > 0 and v.signals.hits == 0  # no agent read for a statistics-only policy
    rows = sqlite3.connect(tmp_path / "m.db").execute("SELECT count(*) FROM membal_decision").fetchone()
    assert rows[0] == 2 * len(out.steps)
    # balloons are set back where they were (the guest takes a moment to give the pages back)
    for _ in range(60):
        if all(abs(_memstat(n)["actual"] - start[n]["actual"]) <= 1024 for n in canaries):
            break
        time.sleep(0.5)
    assert [_memstat(n)["actual"] for n in canaries] == [start[n]["actual"] for n in canaries]


@pytest.mark.qemu
@pytest.mark.root
@pytest.mark.slow
def test_efficiency_needs_vmios_agent_and_counts_every_process(
    canaries: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = canaries
    plain = f"{TAG}-plain"
    xml = tmp_path / "plain.xml"
    xml.write_text(
        f"<domain type='qemu'><name>{plain}</name><memory unit='MiB'>128</memory><vcpu>1</vcpu><os>"
        "<type arch='x86_64' machine='pc'>hvm</type></os><devices><memballoon model='virtio'/></devices>"
        "</domain>"
    )
    assert virsh("define", str(xml)).returncode == 0
    try:
        argv = ["membal", "run", "--domains", f"{a},{plain}", "--db", str(tmp_path / "e.db")]
        assert main([*argv, "--policy", "efficiency"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "vmio.agent" in err and f"domain {plain!r}" in err
        assert "equal, mom" in err
    finally:
        virsh("undefine", plain)
    # on the canaries (vmio's agent aboard), efficiency runs; a's reader is dd, not fio, and its hits count
    lv = Virsh("qemu:///system")
    settings = _settings(canaries, "efficiency", 12)
    virsh_, domains = read_domains(settings, lv)
    pid = agent.start(lv, a, "sh", ["-c", LOAD.format(reader=PART, s=30, hold=0)])
    with Store(tmp_path / "e.db") as store:
        out = run_domains(with_domains(settings, domains), store, virsh_, domains)
    io = agent.run(lv, a, "cat", [f"/proc/{pid}/io"]).out
    agent.run(lv, a, "kill", [str(pid)])
    rchar = int(io.split("rchar:")[1].split()[0])
    assert out.summary[a]["hits"] > 8 * M // 4096
    assert out.summary[a]["hits"] * 4096 <= rchar + 64 * M  # no more than the reader (and the rest) read
    assert out.summary[a]["hits"] > 20 * max(1, out.summary[b]["hits"])
    assert out.summary[a]["final"] >= out.summary[b]["final"]
    capsys.readouterr()
    # the command itself, with a statistics-only policy: its JSON names the domains and their balloons
    argv = ["membal", "run", "--domains", f"{a},{b}", "--policy", "equal", "--interval", "2s", "--duration", "4s",
            "--floor", "192M", "--db", str(tmp_path / "e.db"), "--json"]  # fmt: skip
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["settings"]["domains"] == [a, b] and got["settings"]["ceilings"] == [512 * M, 512 * M]
    assert [v["vm"] for v in got["steps"][-1]["vms"]] == [a, b] and got["accel"] == "libvirt"


def test_balloon_statistics_become_the_controllers_record() -> None:
    """dommemstat's KiB figures in the frame the policies read (no libvirt needed)."""
    stats = {"actual": 524288, "available": 480000, "unused": 100000, "usable": 300000, "disk_caches": 200000,
             "major_fault": 7, "swap_in": 0, "swap_out": 0, "last_update": 1000}  # fmt: skip
    later = {**stats, "disk_caches": 250000, "unused": 50000, "major_fault": 9, "last_update": 1002}
    sig = signals(record_from(stats), record_from(later))
    assert (sig.seconds, sig.total, sig.free, sig.file) == (2, 480000 << 10, 50000 << 10, 250000 << 10)
    assert sig.observation().allocation == (50000 + 250000) * 1024 // 4096 and sig.hits == 0
    settings = LiveSettings(vms=2, floors=(M, M), policy="mom", ceilings=(512 * M, 256 * M))
    assert (
        settings.rules().ceilings == (512 * M, 256 * M) and settings.rules().budget == (768 * M + 2 * M) // 2
    )
