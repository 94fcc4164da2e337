"""Is the device at its limit? Judged by IOPS against its capacity, never by ``%util`` alone.

hitachi-nvme-2016 read a device at 100 % busy as the device's neck (Fig. 10 (e)). That holds for a device that
serves one request at a time; an NVMe SSD or a RAID set serves many at once and shows 100 % busy long
before its ceiling (docs/DESIGN.md, later evidence). So the device is judged against a capacity measured by
``vmio calibrate`` or declared by the user, and the capacity never comes from the point being judged.
Without one the capacity is unknown: the device is not called saturated, its ``%util`` and queue are cited,
and the answer names the command that measures the capacity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from vmio.advise.cite import Cite, against, fact
from vmio.advise.evidence import Device, Measured
from vmio.advise.thresholds import DEVICE_BUSY_HIGH, DEVICE_CAPACITY_FRACTION

DECLARE = "vmio diagnose --capacity-read-iops N --capacity-write-iops N"


@dataclass(frozen=True)
class Saturation:
    saturated: bool
    answer: str
    cited: tuple[Cite, ...] = field(default_factory=tuple)
    by: Literal["capacity", "unknown"] = "unknown"
    measure: str | None = None  # the command that measures the capacity, when it is unknown


def measure_command(devices: list[Device]) -> str:
    names = " ".join(d.name if d.name.startswith("/") else f"/dev/{d.name}" for d in devices) or "DEVICE"
    return f"vmio calibrate {names}"


def device_saturation(devices: tuple[Device, ...], m: Measured) -> Saturation:
    """Is the device serving the load at its limit? With the answer and the numbers it rests on."""
    used = [d for d in devices if d.in_use or d.dedicated_to_vm] or list(devices)
    fraction = capacity_fraction(used, m)
    limit = DEVICE_CAPACITY_FRACTION.value
    if fraction is not None:
        cited = [fact("measured.read_iops", m.read_iops), fact("measured.write_iops", m.write_iops)]
        for d in used:
            cited.append(fact(f"devices[{d.name}].capacity_read_iops", d.capacity_read_iops))
            cited.append(fact(f"devices[{d.name}].capacity_write_iops", d.capacity_write_iops))
            cited.append(fact(f"devices[{d.name}].capacity_source", d.capacity_source))
        cited.append(against("capacity_fraction", round(fraction, 3), limit))
        sat = fraction >= limit
        sources = "; ".join(sorted({d.capacity_source or "the evidence" for d in used}))
        answer = f"{'yes' if sat else 'no'}: {fraction:.0%} of its capacity (from {sources})"
        answer += f"; at the limit from {limit:.0%}"
        if not sat and m.dev_busy_pct is not None and m.dev_busy_pct >= DEVICE_BUSY_HIGH.value:
            answer += (
                f"; {m.dev_busy_pct:g} % busy does not mean busy on a device serving requests in parallel"
            )
        return Saturation(sat, answer, tuple(cited), "capacity")
    command = measure_command(used)
    cited = [fact(f"devices[{d.name}].capacity_read_iops", d.capacity_read_iops) for d in used]
    cited += [fact("measured.dev_busy_pct", m.dev_busy_pct), fact("measured.dev_queue", m.dev_queue)]
    if not used:
        cited = [fact("devices", None)]
    seen = []
    if m.dev_busy_pct is not None:
        seen.append(f"{m.dev_busy_pct:g} % busy")
    if m.dev_queue is not None:
        seen.append(f"{m.dev_queue:g} requests in flight")
    shown = f" ({', '.join(seen)}: not a capacity)" if seen else ""
    answer = (
        f"unknown: the device's capacity is unknown{shown}, so it is not judged at its limit; "
        f"measure it with `{command}` (reads only on a device that holds data), or declare it with "
        f"`{DECLARE}`"
    )
    return Saturation(False, answer, tuple(cited), "unknown", command)


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
