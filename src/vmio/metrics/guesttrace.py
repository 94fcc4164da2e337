"""The guest_block layer (docs/layers.md) from the guest kernel's own aggregation.

vmio's guest runs ``vmio-trace`` (``guest/trace.sh``): for a point it pairs the guest's
``block:block_rq_issue`` with its ``block:block_rq_complete`` by disk and sector (hist triggers) and fires a
synthetic event ``vmio_blk_lat`` per completed request, whose hist trigger counts the requests in the kernel
by direction (``rwbs``), the completion's time slot and the latency in µs, with the sum of the latencies in
ns. Only that table crosses to the host, once, at the point's end: ``read`` parses it and ``window`` keeps
the slots of the measured window.

Its window has the measured window's length and ends with the last slot in which the guest completed a
request (as the qemu layer's: the guest's fio ends its jobs before the fio client on the host hears of it):
slots are ``slot_ns`` long, so the window's start is within one slot of fio's.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from vmio.metrics.layers import Spans
from vmio.stats import histogram

SLOT_MIN_NS = 100_000_000  # a slot is at least 100 ms
SLOTS = 40  # about this many slots over a point's ramp and runtime
SIZE = 8192  # entries of each of the guest's tables (about 330 bytes each in the guest's kernel)
COARSE_US = 1000  # a trace clock stepping by this much or more is the kernel's tick (sched_clock on jiffies)
JIFFIES = ("jiffies", "refined-jiffies")  # the clocksources that count the kernel's tick

_ENTRY = re.compile(r"\{ rwbs:\s*(\S*)\s*, slot:\s*(\d+), us:\s*(\d+) \} hitcount:\s*(\d+)\s+lat:\s*(\d+)")
_DROPPED = re.compile(r"Dropped:\s*(\d+)")


class Tracer(Protocol):
    """A guest's ``vmio-trace``, one command at a time: vmio's guest over its port (``qemu.guestctl``), a
    libvirt domain's guest through its agent (``libvirt.guest_trace``). ``command`` gives the guest's exit
    status and output, or raises ``VmioError`` when the guest does not answer."""

    name: str

    def command(self, line: str, timeout: float = ...) -> tuple[int, str]: ...


def owner() -> str:
    """This run's name in a guest tracer's claim (``on``/``read``/``off``'s last word): vmio's PID and host,
    one word of letters, digits and ``@:._-``, as the guest's tracer accepts it."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:64] or "host"
    return f"vmio-{os.getpid()}@{host}"


def clock(said: str) -> tuple[str, str] | None:
    """The guest's clocksource and trace clock as its ``on`` printed them (``... clock CLOCKSOURCE TRACE``)."""
    m = re.search(r" clock (\S+) (\S+)\s*$", said.strip())
    return (m.group(1), m.group(2)) if m else None


def coarse(clocksource: str) -> bool:
    """Whether fio's clock in a guest with this clocksource steps by the kernel's tick (1-10 ms)."""
    return clocksource in JIFFIES


def slot_ns(seconds: float) -> int:
    """The slot for a point of ``seconds`` (ramp and runtime): about ``SLOTS`` of them, at least 100 ms."""
    return max(SLOT_MIN_NS, int(seconds * 1e9 / SLOTS) // SLOT_MIN_NS * SLOT_MIN_NS)


def direction(rwbs: str) -> str | None:
    """A request's direction from the block events' ``rwbs`` (flushes, discards and the rest: None)."""
    if rwbs.startswith(("R", "FR")):
        return "read"
    if rwbs.startswith(("W", "FW")):
        return "write"
    return None


@dataclass(frozen=True)
class Entry:
    """One cell of the guest's table: requests of one direction that completed in one slot with one latency
    in µs, their count and the sum of their latencies (ns)."""

    ddir: str
    slot: int
    count: int
    sum_ns: int
    us: int = 0  # the cell's latency in µs (the trace clock's difference: its steps show in these)


@dataclass
class Table:
    """One VM's table as read at the point's end, how many requests its tables dropped (full) and, when the
    guest could not renew its pairing triggers (they stopped), its words."""

    entries: list[Entry]
    dropped: int = 0
    failed: str | None = None
    renewals: int = 0  # times the pairing triggers were renewed while on: each loses the requests in flight
    vm: str = ""  # the guest it was read from

    def step_us(self) -> int | None:
        """The trace clock's step as these latencies show it, when it is coarse: every latency (µs) within
        1 µs and 0.1 % of a multiple of one step of 1 ms or more (the kernel's tick, or a tick and a bit: the
        refined-jiffies clocksource's tick is not a whole number of µs), over at least three distinct
        values, or beside a latency of 0 µs (a request takes microseconds: a clock that read none of it
        moves in steps). 0 when every latency read 0 (the step is longer than all of them); None for a
        fine clock, or too few latencies to tell."""
        values = {e.us for e in self.entries}
        steps = sorted(values - {0})
        if not steps:
            return 0 if values else None
        if 0 not in values and len(steps) < 3:
            return None
        for k in range(1, 11):  # the shortest latency may be several steps
            step = steps[0] / k
            if step < COARSE_US:
                break
            if all(abs(v - round(v / step) * step) <= 1 + v / 1000 for v in steps):
                return round(step)
        return None


def read(text: str, vm: str = "") -> Table:
    """The table ``vmio-trace read`` printed in guest ``vm``: the synthetic event's histogram, then the
    pairing table's totals (the ``Dropped`` counts of both are added up) and a failed renewal."""
    entries = []
    for m in _ENTRY.finditer(text):
        ddir = direction(m.group(1))
        if ddir is not None:
            entries.append(Entry(ddir, int(m.group(2)), int(m.group(4)), int(m.group(5)), int(m.group(3))))
    failed = next((line.strip() for line in text.splitlines() if line.startswith("renewal failed")), None)
    renewed = re.search(r"^renewals (\d+)$", text, re.M)
    return Table(
        entries,
        sum(int(d) for d in _DROPPED.findall(text)),
        failed,
        int(renewed.group(1)) if renewed else 0,
        vm,
    )


def window(tables: Iterable[Table], seconds: float, slot: int, spans: Spans) -> None:
    """Add to ``spans`` each VM's requests of the last ``seconds`` it completed: the slots ending with its
    last one, as many as fit in ``seconds`` (rounded)."""
    count = max(1, round(seconds * 1e9 / slot))
    for table in tables:
        if not table.entries:
            continue
        last = max(e.slot for e in table.entries)
        for e in table.entries:
            if last - count < e.slot <= last:
                value = histogram.bucket_value(histogram.bucket_index(round(e.sum_ns / e.count)))
                spans.add(e.ddir, "issue", {value: e.count}, e.sum_ns)
