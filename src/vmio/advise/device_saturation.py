"""Is the device at its limit? Judged by IOPS against its capacity, not by ``%util`` alone.

Seed 000 read a device at 100 % busy as the device's neck (Fig. 10 (e)). That holds for a device that
serves one request at a time; an NVMe SSD or a RAID set serves many at once and shows 100 % busy long
before its ceiling (DESIGN.md, later evidence). So: capacity known (``vmio calibrate``, else the campaign's
bare points) → the fraction of it in use; else rotational → busy; else busy together with the number of
requests in flight; else the seed's rule, busy alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from vmio.advise.evidence import Device, Measured
from vmio.advise.thresholds import DEVICE_BUSY_HIGH, DEVICE_CAPACITY_FRACTION, PARALLEL_QUEUE_SATURATED


@dataclass(frozen=True)
class Saturation:
    saturated: bool
    answer: str
    cited: dict[str, Any] = field(default_factory=dict)
    by: Literal["capacity", "util", "unknown"] = "unknown"


def device_saturation(devices: tuple[Device, ...], m: Measured) -> Saturation:
    """Is the device serving the load at its limit? With the answer and the numbers it rests on."""
    used = [d for d in devices if d.in_use or d.dedicated_to_vm] or list(devices)
    busy, queue = m.dev_busy_pct, m.dev_queue
    cited: dict[str, Any] = {
        "devices": [d.name for d in used],
        "measured.read_iops": m.read_iops,
        "measured.write_iops": m.write_iops,
        "measured.dev_busy_pct": busy,
        "measured.dev_queue": queue,
    }
    fraction = capacity_fraction(used, m)
    limit_busy = DEVICE_BUSY_HIGH.value
    if fraction is not None:
        cited["devices.capacity_read_iops"] = [d.capacity_read_iops for d in used]
        cited["devices.capacity_write_iops"] = [d.capacity_write_iops for d in used]
        cited["devices.capacity_source"] = [d.capacity_source for d in used]
        cited["capacity_fraction"] = round(fraction, 3)
        sat = fraction >= DEVICE_CAPACITY_FRACTION.value
        sources = "; ".join(sorted({d.capacity_source or "the evidence" for d in used}))
        answer = f"{'yes' if sat else 'no'}: {fraction:.0%} of its capacity (from {sources})"
        answer += f"; at the limit from {DEVICE_CAPACITY_FRACTION.value:.0%}"
        if not sat and busy is not None and busy >= limit_busy:
            answer += f"; {busy:g} % busy does not mean busy on a device serving requests in parallel"
        return Saturation(sat, answer, cited, "capacity")
    if busy is None:
        return Saturation(False, "unknown: no capacity and no busy figure; not counted as busy", cited)
    if used and all(d.rotational for d in used):
        sat = busy >= limit_busy
        answer = f"{'yes' if sat else 'no'}: rotational, {busy:g} % busy (limit {limit_busy:g} %)"
        return Saturation(sat, answer, cited, "util")
    if queue is None:
        sat = busy >= limit_busy
        answer = f"{'yes' if sat else 'no'}: {busy:g} % busy (seed 000's rule; capacity and queue unknown)"
        return Saturation(sat, answer, cited, "util")
    deep = PARALLEL_QUEUE_SATURATED.value
    sat = busy >= limit_busy and queue >= deep
    answer = f"{'yes' if sat else 'no'}: {busy:g} % busy with {queue:g} requests in flight"
    answer += f" (no capacity known; busy from {limit_busy:g} % busy and {deep:g} in flight)"
    return Saturation(sat, answer, cited, "util")


def capacity_fraction(used: list[Device], m: Measured) -> float | None:
    """Measured IOPS as a fraction of the devices' capacity (reads and writes added), None if unknown."""
    if not used or (m.read_iops is None and m.write_iops is None):
        return None
    fraction = 0.0
    for iops, caps in (
        (m.read_iops or 0.0, [d.capacity_read_iops for d in used]),
        (m.write_iops or 0.0, [d.capacity_write_iops for d in used]),
    ):
        if iops <= 0:
            continue
        if any(c is None for c in caps):
            return None
        fraction += iops / sum(c for c in caps if c is not None)
    return fraction
