"""What an unmodified Linux guest tells the live controller, from two of its agent records.

The agent (``vmio.qemu.read_agent_records``) sends ``/proc/vmstat`` and ``/proc/meminfo``, and, when the
kernel has PSI (Debian kernels need ``psi=1``), the memory stall totals ``psi_memory_some_us`` and
``psi_memory_full_us``. Between two records this module derives:

- the page-cache signals the policies use: file pages (``Active(file) + Inactive(file)``, which leaves out
  the initramfs's shmem), free memory, refaults and activations (``workingset_*_file``), pages read;
- the workload's page-cache hits and misses, which Linux does not count but ``/proc/PID/io`` lets an
  unmodified guest estimate per process: ``rchar`` (bytes read through read syscalls) against
  ``read_bytes`` (bytes fetched from storage), summed over the guest's processes (``pio`` lines of the
  agent record): hits ≈ (Δrchar − Δread_bytes) / page, misses ≈ Δread_bytes / page. Readahead counts as
  misses of pages not yet read, so a sequential first pass reports slightly more misses than reads;
- memory pressure: the share of the interval some task stalled on memory (PSI); without PSI, direct
  reclaim (``allocstall_*``, ``pgscan_direct``), swap traffic or an OOM kill in the interval.

Observations are in the *cache frame*: a VM's ``allocation`` is the memory its page cache may use now
(free + file pages) and ``resident`` its file pages; the rest of the balloon target (kernel, shmem,
programs) is its ``overhead``, added back when an allocation is turned into a balloon target.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from vmio.membal.observation import VmObservation
from vmio.qemu.agent import AgentRecord

PAGE = 4096
_STALL_COUNTERS = ("allocstall_dma", "allocstall_dma32", "allocstall_normal", "allocstall_movable")
_SWAP_COUNTERS = ("pswpin", "pswpout")


@dataclass(frozen=True)
class Pressure:
    """Memory pressure over one interval and how it was judged."""

    source: str  # "psi" or "vmstat"
    stall: float  # PSI: share of the interval with some task stalled on memory (0..1); vmstat: 0
    reclaim: int  # direct-reclaim stalls + direct scans + swap pages + OOM kills in the interval
    under: bool  # the guest is under memory pressure


@dataclass(frozen=True)
class GuestSignals:
    """One VM over one interval: the guest's memory (bytes) and its counters' deltas (pages)."""

    seconds: float  # guest uptime between the records
    total: int  # MemTotal
    free: int  # MemFree
    available: int  # MemAvailable
    file: int  # Active(file) + Inactive(file)
    refaults: int  # workingset_refault_file
    activations: int  # workingset_activate_file
    read_pages: int  # pgpgin (KiB) in pages
    pressure: Pressure
    hits: int = 0  # pages the workload's reads found in the page cache: (Δrchar - Δread_bytes) / PAGE
    misses: int = 0  # pages fetched from storage for the workload's reads: Δread_bytes / PAGE
    workload_procs: int = 0  # workload processes in the later record

    @property
    def hit_rate(self) -> float:
        """The workload's page-cache hits per second of guest time."""
        return self.hits / self.seconds if self.seconds > 0 else 0.0

    @property
    def hit_ratio(self) -> float | None:
        """hits / (hits + misses) over the interval; None without reads."""
        return self.hits / (self.hits + self.misses) if self.hits + self.misses else None

    def observation(self) -> VmObservation:
        """The policy's view in the cache frame. ``hits`` are the workload's hit pages in the interval,
        ``hit_pages`` its hit pages per second (hitachi-membal-2014's "hit pages per unit time"; a guest cannot tell
        distinct pages apart, so a page hit twice counts twice)."""
        return VmObservation(
            allocation=(self.free + self.file) // PAGE,
            resident=self.file // PAGE,
            accesses=self.hits + self.misses,
            hits=self.hits,
            hit_pages=round(self.hit_rate),
            refaults=self.refaults,
            activations=self.activations,
        )

    def overhead(self, target: int) -> int:
        """Bytes of the balloon target the page cache cannot use (kernel, shmem, programs)."""
        return max(0, target - self.free - self.file)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _delta(before: AgentRecord, after: AgentRecord, names: tuple[str, ...]) -> int:
    """The counters' total increase; a counter that went back (guest reboot) counts from 0."""
    total = 0
    for name in names:
        new, old = after.vmstat.get(name, 0), before.vmstat.get(name, 0)
        total += new - old if new >= old else new
    return total


def pressure(before: AgentRecord, after: AgentRecord, psi_threshold: float = 0.01) -> Pressure:
    """PSI's stall share when the guest reports it, else direct reclaim, swap or OOM activity."""
    reclaim = (
        _delta(before, after, _STALL_COUNTERS)
        + _delta(before, after, ("pgscan_direct", "oom_kill"))
        + _delta(before, after, _SWAP_COUNTERS)
    )
    if "psi_memory_some_us" in after.vmstat:
        seconds = max(after.uptime - before.uptime, 1e-3)
        stall = _delta(before, after, ("psi_memory_some_us",)) / 1e6 / seconds
        return Pressure("psi", round(stall, 6), reclaim, stall >= psi_threshold)
    return Pressure("vmstat", 0.0, reclaim, reclaim > 0)


def cache_reads(before: AgentRecord, after: AgentRecord) -> tuple[int, int]:
    """(hits, misses) in pages of the workload's reads between two records. Totals over the workload's
    processes include reaped children (the kernel adds them to their parent's counters), so a job that
    ended between the records still counts; a total that went back (a workload tree gone) counts as 0."""
    return ReadCounter().count(before, after)  # one interval alone: no dip carried in or out


def file_pages(meminfo: dict[str, int]) -> int:
    """The page cache's file pages (bytes): ``Active(file) + Inactive(file)`` (the initramfs's shmem is not
    among them)."""
    return meminfo.get("Active(file)", 0) + meminfo.get("Inactive(file)", 0)


@dataclass
class ReadCounter:
    """One guest's hits and misses record after record, with a dip carried over. A job that ends hands its
    counters to its parent when reaped; a record taken between the exit and the reap lacks them and the
    next has them back, so counted interval by interval (:func:`cache_reads`) the job's reads would count
    twice. The dip is carried instead and pays the return back; a dip still open after ``hold`` records
    (a workload tree gone whose parent is not counted) is dropped."""

    hold: int = 2
    chars: int = 0  # the open dip (<= 0), bytes
    fetched: int = 0
    age: int = 0  # records the dip has been open

    def count(self, before: AgentRecord, after: AgentRecord) -> tuple[int, int]:
        """(hits, misses) in pages between ``before`` and ``after``, net of an open dip."""
        chars = after.read_chars - before.read_chars + self.chars
        fetched = after.read_bytes - before.read_bytes + self.fetched
        self.chars, self.fetched = min(0, chars), min(0, fetched)
        self.age = self.age + 1 if self.chars or self.fetched else 0
        if self.age > self.hold:
            self.chars = self.fetched = self.age = 0
        chars, fetched = max(0, chars), max(0, fetched)
        return max(0, chars - fetched) // PAGE, fetched // PAGE


def signals(
    before: AgentRecord, after: AgentRecord, psi_threshold: float = 0.01, reads: ReadCounter | None = None
) -> GuestSignals:
    """The guest's memory at ``after`` and its activity since ``before`` (the workload's reads through
    ``reads`` when given, which carries a dip over to the next interval)."""
    mem = after.meminfo
    hits, misses = (reads or ReadCounter()).count(before, after)
    return GuestSignals(
        seconds=round(after.uptime - before.uptime, 3),
        total=mem.get("MemTotal", 0),
        free=mem.get("MemFree", 0),
        available=mem.get("MemAvailable", 0),
        file=file_pages(mem),
        refaults=_delta(before, after, ("workingset_refault_file",)),
        activations=_delta(before, after, ("workingset_activate_file",)),
        read_pages=_delta(before, after, ("pgpgin",)) * 1024 // PAGE,
        pressure=pressure(before, after, psi_threshold),
        hits=hits,
        misses=misses,
        workload_procs=len(after.procs),
    )
