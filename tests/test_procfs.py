from pathlib import Path

import pytest

from vmio.metrics import procfs
from vmio.metrics.sampler import CpuProbe, DiskProbe, Sampler, window_means

DISK_A = (
    "   7       0 loop0 100 0 800 50 10 0 80 20 0 400 70 0 0 0 0 0 0\n 254 0 vda 5 0 40 1 0 0 0 0 0 1 1\n"
)
DISK_B = "   7       0 loop0 1100 0 8800 550 510 0 4080 1020 2 1400 1570 0 0 0 0 0 0\n 254 0 vda 5 0 40 1 0 0 0 0 0 1 1\n"
STAT_A = (
    "cpu  1000 0 500 8000 100 0 0 0 0 0\ncpu0 500 0 250 4000 50 0 0 0 0 0\ncpu1 500 0 250 4000 50 0 0 0 0 0\n"
)
STAT_B = "cpu  1300 0 700 8400 150 0 50 0 100 0\ncpu0 650 0 350 4200 75 0 25 0 50 0\ncpu1 650 0 350 4200 75 0 25 0 50 0\n"


def write(root: Path, diskstats: str, stat: str) -> None:
    root.mkdir(exist_ok=True)
    (root / "diskstats").write_text(diskstats)
    (root / "stat").write_text(stat)


def test_disk_rates_from_two_snapshots(tmp_path: Path) -> None:
    write(tmp_path, DISK_A, STAT_A)
    a = procfs.read_diskstats(tmp_path)["loop0"]
    write(tmp_path, DISK_B, STAT_B)
    b = procfs.read_diskstats(tmp_path)["loop0"]
    r = procfs.disk_rates(a, b, 2.0)
    assert r["read_iops"] == 500 and r["write_iops"] == 250
    assert r["read_bw"] == 8000 * 512 / 2 and r["write_bw"] == 4000 * 512 / 2
    assert r["busy_pct"] == 50.0  # 1000 ms busy in 2 s
    assert r["queue"] == 0.75  # 1500 weighted ms in 2 s
    assert r["await_ms"] == pytest.approx((500 + 1000) / 1500)


def test_cpu_shares_exclude_guest_from_usr(tmp_path: Path) -> None:
    write(tmp_path, DISK_A, STAT_A)
    a = procfs.read_cpu(tmp_path)
    write(tmp_path, DISK_B, STAT_B)
    b = procfs.read_cpu(tmp_path)
    s = procfs.cpu_shares(a, b)
    total = 300 + 200 + 400 + 50 + 50
    assert s["usr_pct"] == pytest.approx(100 * (300 - 100) / total)
    assert s["guest_pct"] == pytest.approx(100 * 100 / total)
    assert s["sys_pct"] == pytest.approx(100 * 250 / total)
    assert s["iowait_pct"] == pytest.approx(100 * 50 / total)
    assert procfs.cpu_count(tmp_path) == 2


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_sampler_replays_snapshots_and_averages_the_window(tmp_path: Path) -> None:
    write(tmp_path, DISK_A, STAT_A)
    clock = Clock()
    sampler = Sampler([DiskProbe("loop0", tmp_path), CpuProbe(tmp_path)], interval=1.0, clock=clock)
    sampler.start(background=False)
    clock.t = 2.0
    write(tmp_path, DISK_B, STAT_B)
    sampler.tick()
    clock.t = 4.0
    sampler.tick()  # nothing changed: zero rates
    means = window_means(sampler.samples, 0.0, 4.0)
    assert means[("dev:loop0", "read_iops")] == 250.0
    assert window_means(sampler.samples, 2.0, 4.0)[("dev:loop0", "read_iops")] == 0.0
    assert window_means(sampler.samples, 1.0, 3.0)[("dev:loop0", "read_iops")] == 250.0  # half of each


def test_live_sampler_runs_and_stops() -> None:
    with Sampler([CpuProbe()], interval=0.1) as sampler:
        import time

        time.sleep(0.35)
    assert {m for _, src, m, _ in sampler.samples if src == "cpu"} >= {"usr_pct", "sys_pct", "idle_pct"}
    assert not sampler.errors


def test_interval_floor() -> None:
    with pytest.raises(ValueError, match="0.1 s floor"):
        Sampler([CpuProbe()], interval=0.05)
