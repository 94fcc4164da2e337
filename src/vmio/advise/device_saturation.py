"""Is the device saturated? Judged by IOPS against measured capacity, not by ``%util`` alone.

Seed 000 read a device at 100 % busy as the device's neck. That holds for a device that serves one request
at a time; an NVMe SSD or a RAID set serves many at once and shows 100 % busy long before its ceiling
(DESIGN.md, later evidence). So: capacity known → the fraction of it in use; else rotational → busy;
else busy together with the number of requests in flight.
"""

from __future__ import annotations

from typing import Any

from vmio.advise.evidence import Device, Measured
from vmio.advise.thresholds import DEVICE_BUSY_HIGH, DEVICE_CAPACITY_FRACTION, PARALLEL_QUEUE_SATURATED


def device_saturation(devices: tuple[Device, ...], m: Measured) -> tuple[bool, str, dict[str, Any]]:
    """Is the device serving the load saturated? (verdict, answer, cited numbers).

    By IOPS against measured capacity when known; else %util for rotational devices; else %util and the
    queue (a parallel device at 100 % busy with few requests in flight still has room).
    """
    used = [d for d in devices if d.in_use or d.dedicated_to_vm] or list(devices)
    busy, queue = m.dev_busy_pct, m.dev_queue
    cited: dict[str, Any] = {
        "devices": [d.name for d in used],
        "measured.read_iops": m.read_iops,
        "measured.write_iops": m.write_iops,
        "measured.dev_busy_pct": busy,
        "measured.dev_queue": queue,
        "measured.dev_await_ms": m.dev_await_ms,
    }
    fraction = capacity_fraction(used, m)
    limit_busy = DEVICE_BUSY_HIGH.value
    if fraction is not None:
        cited["devices.capacity_read_iops"] = [d.capacity_read_iops for d in used]
        cited["devices.capacity_write_iops"] = [d.capacity_write_iops for d in used]
        cited["capacity_fraction"] = round(fraction, 3)
        sat = fraction >= DEVICE_CAPACITY_FRACTION.value
        answer = f"{'yes' if sat else 'no'}: {fraction:.0%} of measured capacity"
        answer += f" (saturated from {DEVICE_CAPACITY_FRACTION.value:.0%})"
        if not sat and busy is not None and busy >= limit_busy:
            answer += f"; {busy:g} % busy does not mean saturated on a device serving requests in parallel"
        return sat, answer, cited
    if busy is None:
        return False, "unknown: no capacity and no busy figure; not counted as saturated", cited
    if used and all(d.rotational for d in used):
        sat = busy >= limit_busy
        return sat, f"{'yes' if sat else 'no'}: rotational, {busy:g} % busy (limit {limit_busy:g} %)", cited
    if queue is None:
        sat = busy >= limit_busy
        answer = f"{'yes' if sat else 'no'}: {busy:g} % busy (seed 000's rule; capacity and queue unknown)"
        return sat, answer, cited
    deep = PARALLEL_QUEUE_SATURATED.value
    sat = busy >= limit_busy and queue >= deep
    answer = f"{'yes' if sat else 'no'}: {busy:g} % busy with {queue:g} requests in flight"
    return sat, answer + f" (saturated from {limit_busy:g} % busy and {deep:g} in flight)", cited


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
