"""The host's block layer traced for one point: ``bpftrace`` on the block tracepoints, aggregated in BPF maps.

``block:block_rq_issue`` and ``block:block_rq_complete`` are attached (by ``perf_event_open``: no kprobe,
no tracefs ``enable`` file is written) with a filter on the run's own disks' ``dev_t``; with ``insert`` (the
check against iostat) ``block:block_rq_insert`` too, and with ``start`` ``block:block_io_start`` as well
(Linux 6.5 and later): probes per request that points leave out for their cost. ``block_io_start`` fires
where the kernel's I/O accounting stamps a request's start (``blk_account_io_start``, as the bio becomes a
request, before a plug or the scheduler holds it), the start iostat's await counts from; the insertion into
the scheduler's queue comes later (at the plug's flush), or never (a request issued directly, or through the
flush machinery). A request is matched from issue (and insertion, and start) to completion by its disk and
start sector; its latency from issue goes into a BPF hash map keyed by direction and fio's log-linear bucket
index, with the sum of latencies beside it (from insertion and from the start: the sums only; their count is
the issue span's), so the kernel aggregates and only the maps cross to vmio, printed every ``SLICE_MS`` (or
the ``slice_ms`` asked) with the time on ``CLOCK_MONOTONIC`` (the clock ``time.monotonic`` reads). The maps
are never cleared (a clear after a print would lose what completed between the two): each print is the total
so far, and ``window`` takes the difference between the totals at the ends of the slices whose middle lies
in the measured window.

Requests, not bios, are counted: bios merged into one request count once, a bio split into several requests
counts each, a partial completion ends the request's span at its first completion; flushes and discards are
left out. Everything on the disks is counted, other users' I/O too, as iostat counts it.

``bpftrace`` runs under the supervisor (``system.process.Supervised``): it is killed with everything it
started when the point ends, on its time limit, or when vmio dies, even by SIGKILL; its BPF programs are
detached when it dies. The script also ends itself after its time limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vmio.metrics.layers import Spans
from vmio.stats import histogram
from vmio.system import device_facts
from vmio.system.process import Runner, Supervised

BPFTRACE = "bpftrace"
SLICE_MS = 200
ATTACH_TIMEOUT_S = 60.0  # compiling the script takes seconds on a busy host
STOP_TIMEOUT_S = 10.0
TRACEFS = ("kernel/tracing", "kernel/debug/tracing")  # under /sys, where bpftrace finds the events
EVENT = "events/block/block_rq_issue"
START_EVENT = "events/block/block_io_start"  # Linux 6.5 and later

# bucket index: fio's log-linear rule (stats.histogram.bucket_index) in BPF: msb by halving, then 64 buckets
# per power of two
_SCRIPT = """
INSERT_PROBEtracepoint:block:block_rq_issue /FILTER/ { @iss[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /FILTER/ {
  $t1 = @iss[args->dev, args->sector];
  delete(@iss[args->dev, args->sector]);
INSERT_TAKE  $d = 2;
  if (strncmp(args->rwbs, "R", 1) == 0 || strncmp(args->rwbs, "FR", 2) == 0) { $d = 0; }
  if (strncmp(args->rwbs, "W", 1) == 0 || strncmp(args->rwbs, "FW", 2) == 0) { $d = 1; }
  if ($t1 && $d < 2) {
    $lat = (uint64)(nsecs - $t1);
    $v = $lat; $m = (uint64)0;
    if ($v >> 32) { $v = $v >> 32; $m = $m + 32; }
    if ($v >> 16) { $v = $v >> 16; $m = $m + 16; }
    if ($v >> 8) { $v = $v >> 8; $m = $m + 8; }
    if ($v >> 4) { $v = $v >> 4; $m = $m + 4; }
    if ($v >> 2) { $v = $v >> 2; $m = $m + 2; }
    if ($v >> 1) { $m = $m + 1; }
    $i = $lat;
    if ($lat >= 128) { $e = $m - 6; $i = (($e + 1) << 6) + (($lat >> $e) & 63); }
    @h[$d, $i] = count();
    @s[0, $d] = sum($lat);
INSERT_SUM  }
}
interval:ms:SLICE { printf("{\\"t\\": %llu}\\n", nsecs); print(@h); print(@s); }
interval:s:LIMIT { exit(); }
END { printf("{\\"t\\": %llu}\\n", nsecs); print(@h); print(@s); clear(@h); clear(@s); clear(@iss);INSERT_CLEAR }
"""
# insertion into the scheduler's queue (``insert``): a third probe per request, for comparing with iostat
_INSERT = {
    "INSERT_PROBE": "tracepoint:block:block_rq_insert /FILTER/ { @ins[args->dev, args->sector] = nsecs; }\n",
    "INSERT_TAKE": "  $t0 = @ins[args->dev, args->sector];\n  delete(@ins[args->dev, args->sector]);\n",
    "INSERT_SUM": "    if ($t0 == 0 || $t0 > $t1) { $t0 = $t1; }\n    @s[1, $d] = sum(nsecs - $t0);\n",
    "INSERT_CLEAR": " clear(@ins);",
}
# the accounting's start (``start``, with ``insert``): what iostat's await counts from; a request whose start
# was not seen (or a kernel without block_io_start) counts from its insertion
_START = {
    "INSERT_PROBE": "tracepoint:block:block_io_start /FILTER/ { @st[args->dev, args->sector] = nsecs; }\n",
    "INSERT_TAKE": "  $t2 = @st[args->dev, args->sector];\n  delete(@st[args->dev, args->sector]);\n",
    "INSERT_SUM": "    if ($t2 == 0 || $t2 > $t0) { $t2 = $t0; }\n    @s[2, $d] = sum(nsecs - $t2);\n",
    "INSERT_CLEAR": " clear(@st);",
}
_NO_START_EVENT = {"INSERT_TAKE": "  $t2 = (uint64)0;\n", "INSERT_SUM": _START["INSERT_SUM"]}


def script(
    devs: Sequence[int],
    limit_s: int,
    *,
    insert: bool = False,
    start: bool = False,
    start_event: bool = True,
    slice_ms: int = SLICE_MS,
) -> str:
    """The bpftrace program for the disks ``devs`` (kernel ``dev_t``: major << 20 | minor), printing every
    ``slice_ms``; with ``insert`` also from insertion, and with ``start`` too from the accounting's start
    (``block_io_start``; without it, ``start_event`` false, from insertion)."""
    parts = [_INSERT] if insert else []
    if insert and start:
        parts.append(_START if start_event else _NO_START_EVENT)
    text = _SCRIPT
    for mark in _INSERT:
        text = text.replace(mark, "".join(part.get(mark, "") for part in parts))
    cond = " || ".join(f"args->dev == {d}" for d in devs)
    return text.replace("FILTER", cond).replace("SLICE", str(slice_ms)).replace("LIMIT", str(max(1, limit_s)))


def has_start_event(sys_root: str | Path = "/sys") -> bool:
    """Whether the kernel has ``block:block_io_start`` (Linux 6.5 and later), under a mounted tracefs."""
    return any((Path(sys_root) / p / START_EVENT).exists() for p in TRACEFS)


@dataclass(frozen=True)
class Disk:
    """A whole disk the I/O lands on: its kernel name and number."""

    name: str
    major: int
    minor: int

    @property
    def dev_t(self) -> int:
        """The number the block tracepoints carry (the kernel's ``dev_t``)."""
        return (self.major << 20) | self.minor


def landing_disks(chain: Sequence[str], sys_root: str | Path = "/sys") -> list[Disk]:
    """The whole disks under the last device of ``chain`` (``blockdev.device_chain``: a loop device is
    followed to its backing file's device): a partition gives its disk, a dm or md device its members'
    (``device_facts.disks_under``), each with its number."""
    if not chain:
        return []
    out: list[Disk] = []
    for name in device_facts.disks_under(chain[-1], sys_root):
        try:
            major, minor = (
                int(x) for x in (device_facts.block_dir(name, Path(sys_root)) / "dev").read_text().split(":")
            )
        except (OSError, ValueError):
            continue
        out.append(Disk(name, major, minor))
    return out


def why_not(disks: Sequence[Disk], sys_root: str | Path, runner: Runner) -> str | None:
    """Why the host's block layer cannot be traced here (None: it can), mounting tracefs when it is not."""
    if not disks:
        return "the target's I/O lands on no block device of this host"
    if os.geteuid() != 0:
        return f"tracing the host's block layer needs root (bpftrace loads BPF programs); vmio runs as uid {os.geteuid()}"
    if shutil.which(BPFTRACE) is None:
        return f"{BPFTRACE} is not installed (Debian package bpftrace)"
    return tracefs(sys_root, runner)


def tracefs(sys_root: str | Path, runner: Runner) -> str | None:
    """Make the block events readable under tracefs, mounting it where it is not (None: they are)."""
    places = [Path(sys_root) / p for p in TRACEFS]
    if any((p / EVENT).exists() for p in places):
        return None
    where = places[0]
    if not where.is_dir():
        return f"this kernel has no tracefs ({where} does not exist)"
    done = runner.run(["mount", "-t", "tracefs", "tracefs", str(where)], timeout=30, check=False)
    if done.returncode != 0:
        return f"tracefs is not mounted and could not be mounted at {where}: {(done.stderr or done.stdout).strip()}"
    if not (where / EVENT).exists():
        return f"this kernel has no block tracepoints ({where / EVENT} is missing)"
    return None


@dataclass
class Slice:
    """The trace at the end of one slice: the time (monotonic ns) and what completed since the start."""

    end_ns: int
    spans: Spans = field(default_factory=Spans)


class HostBlockTrace:
    """``bpftrace`` tracing ``disks`` from ``start`` until ``stop``; ``window`` gives a window's latencies."""

    def __init__(
        self,
        disks: Sequence[Disk],
        limit_s: float,
        *,
        insert: bool = False,
        start: bool = False,
        slice_ms: int = SLICE_MS,
    ) -> None:
        self.disks = list(disks)
        self.insert = insert
        self.start_event = start and has_start_event()  # the start traced, not taken at insertion
        text = script([d.dev_t for d in disks], int(limit_s) + 1, insert=insert, start=start,
                      start_event=self.start_event, slice_ms=slice_ms)  # fmt: skip
        self.argv = [BPFTRACE, "-f", "json", "-e", text]
        self.slices: list[Slice] = []
        self.started_ns = 0
        self.errors: list[str] = []
        self._attached = threading.Event()
        self._ended = threading.Event()
        self._proc: Supervised | None = None
        self._threads: list[threading.Thread] = []

    @property
    def pid(self) -> int | None:
        """The supervisor's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    def start(self, timeout: float = ATTACH_TIMEOUT_S) -> None:
        """Start bpftrace and wait until its probes are attached; ``RuntimeError`` with its words if not."""
        self._proc = Supervised(self.argv, env={"BPFTRACE_MAP_KEYS_MAX": "65536"})
        proc = self._proc.popen
        self._threads = [
            threading.Thread(target=self._read, args=(proc.stdout,), name="vmio-bpftrace", daemon=True),
            threading.Thread(target=self._errors, args=(proc.stderr,), name="vmio-bpftrace-err", daemon=True),
        ]
        for t in self._threads:
            t.start()
        deadline = time.monotonic() + timeout
        while not self._attached.wait(0.1):
            if self._ended.is_set() or time.monotonic() > deadline:
                self.stop()
                said = [e for e in self.errors if "ERROR" in e and "RLIMIT_MEMLOCK" not in e] or self.errors
                why = said[0].strip() if said else f"no answer within {timeout:g} s"
                raise RuntimeError(f"bpftrace could not attach to the block tracepoints: {why}")
        self.started_ns = time.monotonic_ns()

    def stop(self) -> None:
        """End the trace: bpftrace prints its last slice and exits (SIGINT), else it is killed."""
        proc = self._proc
        if proc is None:
            return
        if proc.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGINT)  # the supervisor passes it on: bpftrace runs END
            self._ended.wait(STOP_TIMEOUT_S)
        proc.stop()
        for t in self._threads:
            t.join(timeout=STOP_TIMEOUT_S)
        for stream in (proc.popen.stdout, proc.popen.stderr):
            if stream is not None:
                stream.close()
        self._proc = None

    def window(self, start_s: float, end_s: float) -> Spans:
        """The latencies of requests that completed in slices whose middle lies in [start_s, end_s]
        (``time.monotonic`` seconds)."""
        before, last = Spans(), None
        prev = self.started_ns
        for piece in self.slices:
            middle = (prev + piece.end_ns) / 2e9
            prev = piece.end_ns
            if middle < start_s:
                before = piece.spans
            elif middle <= end_s:
                last = piece.spans
        return _minus(last, before) if last is not None else Spans()

    def _read(self, stream: object) -> None:
        try:
            for line in stream:  # type: ignore[attr-defined]
                self._line(line)
        finally:
            self._ended.set()

    def _errors(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            if len(self.errors) < 50:
                self.errors.append(str(line).rstrip())

    def _line(self, line: str) -> None:
        try:
            doc = json.loads(line)
        except ValueError:
            return
        kind, data = doc.get("type"), doc.get("data")
        if kind == "attached_probes":
            self._attached.set()
        elif kind == "printf" and isinstance(data, str):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                self.slices.append(Slice(int(json.loads(data)["t"])))
        elif kind == "map" and isinstance(data, dict) and self.slices:
            self._map(data, self.slices[-1].spans)

    @staticmethod
    def _map(data: dict[str, object], spans: Spans) -> None:
        names = ("issue", "insert", "start")
        ddirs = ("read", "write")
        hist = data.get("@h")
        if isinstance(hist, dict):
            for key, count in hist.items():
                ddir, index = (int(k) for k in str(key).split(","))
                spans.add(ddirs[ddir], "issue", {histogram.bucket_value(index): int(count)}, 0)
        # printed after @h: the other spans' counts are the issue span's (the same requests)
        sums = data.get("@s")
        if isinstance(sums, dict):
            for key, total in sums.items():
                span, ddir = (int(k) for k in str(key).split(","))
                spans.add(ddirs[ddir], names[span], {}, int(total))
                if span:  # from insertion, from the start: count and sum only (the start's is iostat's await)
                    spans.counts[(ddirs[ddir], names[span])] = spans.ios(ddirs[ddir], "issue")


def _minus(total: Spans, before: Spans) -> Spans:
    """What completed between two totals."""
    out = Spans()
    for key, bins in total.hist.items():
        earlier = before.hist.get(key, {})
        out.add(*key, {b: n - earlier.get(b, 0) for b, n in bins.items() if n > earlier.get(b, 0)}, 0)
    for key, total_ns in total.sum_ns.items():
        out.add(*key, {}, total_ns - before.sum_ns.get(key, 0))
    for key, count in total.counts.items():
        out.counts[key] = count - before.counts.get(key, 0)
    return out
