"""Per-thread CPU of a QEMU process, replayed from saved /proc snapshots."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from vmio.qemu import ThreadSampler
from vmio.qemu.threads import classify, parse_stat


def stat_line(tid: int, comm: str, utime: int, stime: int) -> str:
    rest = ["S", "1", "1", "1", "0", "-1", "4194560", "0", "0", "0", "0", str(utime), str(stime), "0", "0"]
    return f"{tid} ({comm}) {' '.join(rest)} 20 0 5 0 100\n"


def write_proc(root: Path, pid: int, threads: dict[int, tuple[str, int, int]]) -> None:
    for tid, (comm, utime, stime) in threads.items():
        task = root / str(pid) / "task" / str(tid)
        task.mkdir(parents=True, exist_ok=True)
        (task / "comm").write_text(comm + "\n")
        (task / "stat").write_text(stat_line(tid, comm, utime, stime))


def test_sampler_classifies_threads_and_computes_percentages(tmp_path: Path) -> None:
    pid = 500
    write_proc(
        tmp_path,
        pid,
        {
            500: ("qemu-system-x86", 10, 10),
            501: ("CPU 0/TCG", 0, 0),
            502: ("CPU 1/KVM", 0, 0),
            503: ("IO iothread0", 0, 0),
            504: ("worker", 0, 0),
        },
    )
    times = iter([100.0, 102.0])
    sampler = ThreadSampler(pid, ["iothread0"], proc_root=tmp_path, clock=lambda: next(times))
    shutil.rmtree(tmp_path / "500" / "task" / "504")
    write_proc(
        tmp_path,
        pid,
        {
            500: ("qemu-system-x86", 30, 20),
            501: ("CPU 0/TCG", 150, 10),
            502: ("CPU 1/KVM", 0, 0),
            503: ("IO iothread0", 20, 80),
            505: ("new", 9, 9),
        },
    )
    rows = {row.tid: row for row in sampler.sample()}
    assert set(rows) == {500, 501, 502, 503}  # 504 exited, 505 is new: no interval for either
    assert [rows[t].kind for t in (500, 501, 502, 503)] == ["main", "vcpu", "vcpu", "iothread"]
    assert (rows[500].usr_pct, rows[500].sys_pct) == (10.0, 5.0)  # 20 and 10 ticks over 2 s at 100 Hz
    assert rows[501].total_pct == 80.0
    assert rows[503].sys_pct == 40.0


def test_classify_truncated_iothread_names() -> None:
    assert classify(7, "IO iothread-lon", 1, ["iothread-long-name"]) == "iothread"
    assert classify(7, "IO other", 1, ["iothread0"]) == "other"
    assert classify(1, "qemu-system-x86", 1) == "main"


@given(
    comm=st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), max_size=15),
    utime=st.integers(0, 2**40),
    stime=st.integers(0, 2**40),
)
def test_parse_stat_survives_any_thread_name(comm: str, utime: int, stime: int) -> None:
    assert parse_stat(stat_line(42, comm, utime, stime)) == (utime, stime)
