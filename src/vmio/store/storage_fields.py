"""The storage a point ran on, as ``show --json`` prints it: the first disk's facts and the filesystem at
the top level of the point (``filesystem``, ``mount_options``, ``disk``, ``model``, ``firmware``,
``rotational``, ``scheduler``, ``nr_requests``, ``logical_block_size``), and every path's facts under
``storage``. Runs record them in their host facts (``system.device_facts``); older runs have none and print
none of these keys, as they always did."""

from __future__ import annotations

from collections.abc import Mapping

from vmio.system.device_facts import DISK_FIELDS

KEYS = ("filesystem", "mount_options", *DISK_FIELDS, "storage")


def fields(storage: object) -> dict[str, object] | None:
    """The keys ``show --json`` adds for a run whose host facts hold ``storage`` (a list; else None)."""
    if not isinstance(storage, list):
        return None
    first = storage[0] if storage and isinstance(storage[0], Mapping) else {}
    disks = first.get("disks")
    disk = disks[0] if isinstance(disks, list) and disks and isinstance(disks[0], Mapping) else {}
    out: dict[str, object] = {
        "filesystem": first.get("filesystem"),
        "mount_options": first.get("mount_options"),
    }
    out.update({k: disk.get(k) for k in DISK_FIELDS})
    out["storage"] = storage
    return out
