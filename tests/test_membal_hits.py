"""The guest's page-cache hit reports (``pio`` lines of the agent, from ``/proc/PID/io``): parsing under any
chunking, hits and misses between two records, and ``efficiency`` driving the live controller with them."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from importlib import resources

from hypothesis import given
from hypothesis import strategies as st

from vmio.membal.governor import Rules
from vmio.membal.live import LIVE_POLICIES, LiveController
from vmio.membal.signals import PAGE, ReadCounter, cache_reads, signals
from vmio.qemu.agent import AgentRecord, ProcIO, parse_pio, split_records
from vmio.store import Store
from vmio.store.membal import decisions, start_run

M = 1 << 20
COMM = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=15) | st.just(
    "kworker/u2:1 x"
)  # a comm may hold spaces
PROC = st.builds(ProcIO, st.integers(1, 4 * 10**6), COMM, st.integers(0, 2**62), st.integers(0, 2**62))


def text(uptime: float, procs: list[ProcIO], free_kb: int = 1000) -> str:
    lines = [f"--- vmio {uptime:.2f} 0.50", "pgpgin 7", f"MemFree: {free_kb} kB"]
    lines += [f"pio {p.pid} {p.comm} {p.rchar} {p.read_bytes}" for p in procs]
    return "\n".join([*lines, "--- end", ""])


@given(st.lists(st.lists(PROC, max_size=4), max_size=4), st.integers(0, 600))
def test_pio_lines_survive_any_chunking(samples: list[list[ProcIO]], cut: int) -> None:
    stream = "".join(text(i + 0.5, procs) for i, procs in enumerate(samples))
    cut = min(cut, len(stream))
    first, rest = split_records(stream[:cut])
    second, _ = split_records(rest + stream[cut:])
    got = first + second
    assert [list(r.procs) for r in got] == samples
    assert [r.read_chars for r in got] == [sum(p.rchar for p in s) for s in samples]
    assert [r.read_bytes for r in got] == [sum(p.read_bytes for p in s) for s in samples]
    assert all(r.vmstat == {"pgpgin": 7} and r.meminfo == {"MemFree": 1000 * 1024} for r in got)


@given(st.text(max_size=40))
def test_anything_else_is_not_a_pio_line(line: str) -> None:
    proc = parse_pio(line)
    if proc is not None:
        assert line.split()[0] == "pio" and str(proc.rchar) == line.split()[-2]


def test_a_malformed_pio_line_is_skipped_not_fatal() -> None:
    records, _ = split_records("--- vmio 1.0\npio 12 fio 5\npio x fio 1 2\npio 13 fio 8192 0\n--- end\n")
    assert records[0].procs == (ProcIO(13, "fio", 8192, 0),)


def record(uptime: float, *procs: tuple[int, int, int]) -> AgentRecord:
    return AgentRecord(uptime, {}, {}, tuple(ProcIO(pid, "fio", rc, rb) for pid, rc, rb in procs))


@given(
    st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**9),
    st.integers(0, 10**9), st.integers(0, 10**9),
)  # fmt: skip
def test_hits_and_misses_between_two_records(
    server_rc: int, server_rb: int, job_rc: int, job_rb: int, more_hit: int, more_miss: int
) -> None:
    """A job that reads ``more_hit`` bytes from the cache and fetches ``more_miss`` reports them in pages,
    whether it is still running at the second record or has ended and been reaped by the fio server
    (the kernel adds a reaped child's counters to its parent's)."""
    before = record(1.0, (1, server_rc, server_rb), (2, job_rc, job_rb))
    rc, rb = job_rc + more_hit + more_miss, job_rb + more_miss
    running = record(2.0, (1, server_rc, server_rb), (2, rc, rb))
    reaped = record(2.0, (1, server_rc + rc, server_rb + rb))
    expected = (more_hit // PAGE, more_miss // PAGE)
    assert cache_reads(before, running) == expected == cache_reads(before, reaped)
    new_job = record(
        2.0, (1, server_rc, server_rb), (2, job_rc, job_rb), (3, more_hit + more_miss, more_miss)
    )
    assert cache_reads(before, new_job) == expected  # a job started in the interval counts from 0
    hits, misses = cache_reads(new_job, before)  # counters that went back (a workload tree gone)
    assert hits >= 0 and misses >= 0


@given(st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 10**7)), min_size=3, max_size=12),
       st.integers(0, 9), st.booleans())  # fmt: skip
def test_a_job_reaped_between_records_counts_once(reads: list[tuple[int, int]], end: int, dip: bool) -> None:
    """A job (pid 2) reads ``reads`` (hit bytes, miss bytes) interval by interval and ends at ``end``; the fio
    server (pid 1) reaps it and takes its counters. When a record falls between the exit and the reap
    (``dip``: the job gone and the server without its counters yet), the run's totals still equal the
    pages read, as summed here from the reads fed (they differ by a page per interval at most, for rounding)."""
    end = min(end, len(reads) - 2)
    records, rc, rb = [record(0.0, (1, 0, 0), (2, 0, 0))], 0, 0
    for i, (hit, miss) in enumerate(reads):
        rc, rb = rc + hit + miss, rb + miss
        if i < end:
            records.append(record(i + 1.0, (1, 0, 0), (2, rc, rb)))
        elif i == end and dip:
            records.append(record(i + 1.0, (1, 0, 0)))  # exited, not reaped yet: its reads are nowhere
        else:
            records.append(record(i + 1.0, (1, rc, rb)))  # reaped: the server holds them (and reads on)
    counter = ReadCounter()
    got = [counter.count(a, b) for a, b in zip(records, records[1:], strict=False)]
    hits, misses = sum(h for h, _ in got), sum(m for _, m in got)
    assert abs(misses - sum(m for _, m in reads) / PAGE) <= len(reads)
    assert abs(hits - sum(h for h, _ in reads) / PAGE) <= 2 * len(reads)
    # counted interval by interval with no carry, the same records count the job's reads twice after a dip
    plain = sum(cache_reads(a, b)[1] for a, b in zip(records, records[1:], strict=False))
    if dip and sum(m for _, m in reads[:end]) >= 2 * PAGE * len(reads):
        assert plain > misses


def test_a_dip_that_never_returns_is_dropped() -> None:
    """A tree gone for good (its parent not counted): after ``hold`` records the reads count again."""
    counter = ReadCounter(hold=2)
    gone = record(1.0, (1, 0, 0))
    assert counter.count(record(0.0, (2, 100 * PAGE, 100 * PAGE)), gone) == (0, 0)
    assert counter.count(gone, record(2.0, (1, 10 * PAGE, 10 * PAGE))) == (0, 0)  # paying the dip back
    ten, twenty, thirty = (record(t, (1, n * PAGE, n * PAGE)) for t, n in ((2.0, 10), (3.0, 20), (4.0, 30)))
    assert counter.count(ten, twenty) == (0, 0)
    assert counter.count(twenty, thirty) == (0, 10)


def test_the_agent_reads_processes_parents_first() -> None:
    """The guest agent run on this host for one record: its ``pio`` lines come in numeric PID order (a shell
    glob gives 1000 before 999, which let a reaped job count twice: once in the job, once in its parent)."""
    agent = resources.files("vmio.guest") / "agent.sh"
    with resources.as_file(agent) as script:
        done = subprocess.run(["timeout", "3", "sh", str(script), "/dev/stdout", "10"], capture_output=True,
                              text=True, timeout=30)  # fmt: skip
    records, _ = split_records(done.stdout)
    pids = [p.pid for p in records[0].procs]
    assert len({len(str(p)) for p in pids}) > 1, pids  # PIDs of several lengths, where the orders differ
    assert pids == sorted(pids)


def test_readahead_beyond_the_reads_is_no_negative_hit() -> None:
    assert cache_reads(record(0.0, (1, 0, 0)), record(1.0, (1, 64 * PAGE, 96 * PAGE))) == (0, 96)


class CountingGuest:
    """A guest whose workload hits ``hit_rate`` pages per second with ``file`` bytes of page cache."""

    def __init__(self, name: str, file: int, hit_rate: int) -> None:
        self.name = name
        self.memory = 512 * M
        self.file = file
        self.hit_rate = hit_rate
        self.uptime = 10.0
        self.rchar = 0
        self.target = 0

    def set_target(self, target: int) -> None:
        self.target = target

    def actual(self) -> int:
        return self.target

    def records(self) -> list[AgentRecord]:
        self.uptime += 1.0
        self.rchar += self.hit_rate * PAGE
        free = max(0, self.target - self.file - 64 * M) // 1024
        meminfo = {"MemFree": free * 1024, "Active(file)": self.file, "MemTotal": self.memory}
        return [AgentRecord(self.uptime, {}, meminfo, (ProcIO(300, "fio", self.rchar, 0),))]


def test_efficiency_moves_memory_toward_more_hits_per_cache_page_and_stores_them() -> None:
    assert "efficiency" in LIVE_POLICIES
    rules = Rules(576 * M, (256 * M, 256 * M), (512 * M, 512 * M), 32 * M, 8 * M, 32 * M)
    # same cache size; "dense" hits 4x as often per cache page as "sparse"
    dense, sparse = CountingGuest("dense", 150 * M, 4000), CountingGuest("sparse", 150 * M, 1000)
    with Store(":memory:") as store:
        run_id = start_run(store, "efficiency", {"test": True})
        control = LiveController([sparse, dense], rules, "efficiency", store=store, run_id=run_id)
        control.start(settle=1.0)
        for _ in range(3):
            control.step(wait=1.0)
        rows = decisions(store, run_id)
    assert dense.target > 288 * M > sparse.target
    assert all(r.new_target >= r.old_target for r in rows if r.vm == "dense")
    first = rows[0] if rows[0].vm == "dense" else rows[1]
    assert first.inputs["signals"]["hits"] == 4000 and first.inputs["signals"]["misses"] == 0
    assert first.inputs["observation"]["hit_pages"] == 4000  # per second: the records are 1 s apart
    assert control.summary()["dense"]["hits"] == 3 * 4000


def test_signals_carry_the_hits_and_their_ratio() -> None:
    a = record(1.0, (1, 0, 0))
    b = replace(record(3.0, (1, 30 * PAGE, 10 * PAGE)), meminfo={"MemFree": 0})
    s = signals(a, b)
    assert (s.hits, s.misses, s.workload_procs) == (20, 10, 1)
    assert s.hit_rate == 10.0 and s.hit_ratio == 20 / 30
    assert s.observation().hits == 20 and s.observation().accesses == 30
