"""Device capacity measured by ``vmio calibrate`` (table ``device_capacity``), one row per host and device.

A device is keyed by its stable identity (WWN or serial from /sys, the backing file of a loop device), not
its ``/dev`` name, which changes between boots.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from vmio.store.database import Store


def host_name() -> str:
    """The host a calibration belongs to (its hostname): what ``vmio calibrate`` saves under and
    ``diagnose`` looks up."""
    return socket.gethostname()


def save(
    store: Store, host: str, device_id: str, path: str, device: str | None, result: Mapping[str, Any]
) -> None:
    """Store (or replace) one calibration; ``result`` is ``vmio calibrate --json``'s document."""
    with store.transaction() as db:
        db.execute(
            "INSERT OR REPLACE INTO device_capacity VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                host,
                device_id,
                path,
                device,
                time.time(),
                json.dumps(dict(result)),
                result.get("capacity_read_iops"),
                result.get("capacity_write_iops"),
            ),
        )


def lookup(store: Store, host: str, device_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = store.db.execute(
        "SELECT * FROM device_capacity WHERE host = ? AND device_id = ?", (host, device_id)
    ).fetchone()
    return row
