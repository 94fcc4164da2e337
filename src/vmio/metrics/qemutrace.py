"""The qemu layer (docs/layers.md) read from QEMU's log of its virtio-blk request events.

QEMU's ``log`` trace backend writes one line per event, stamped (``-msg timestamp=on``) with the wall clock
in microseconds: ``PID@SEC.USEC:virtio_blk_handle_read vdev 0x... req 0x... sector N nsectors M``, then
``...:virtio_blk_req_complete vdev 0x... req 0x... status 0``. A request is followed by its device and
request pointers from the virtqueue (``handle``) to its completion; it counts in the window its completion
falls in. A point's log is bounded while it is written (``campaign.layers`` switches QEMU's events off when
it passes ``LIMIT``) and when it is read (at most ``LIMIT`` bytes): either cut says so.
"""

from __future__ import annotations

import re
from pathlib import Path

from vmio.metrics.layers import Spans
from vmio.stats import histogram

LIMIT = 256 << 20  # bytes of one VM's log per point (about 2.5 M requests): written (then events off), read
POLL_S = 0.25  # how often a point's logs are measured against LIMIT while they are written
_LINE = re.compile(r"(?:\d+@)?(\d+)\.(\d{1,6}):(virtio_blk_\w+) vdev (0x[0-9a-f]+|\(nil\)) req (0x[0-9a-f]+)")


def read(
    path: Path, offset: int, window: tuple[float, float], spans: Spans, *, move: bool = True
) -> tuple[bool, float | None]:
    """Add to ``spans`` the requests of ``path`` past ``offset`` that completed in ``window`` (wall clock
    seconds), moved earlier to end at the log's last completion when that comes first (a guest's fio ends
    its jobs before the fio client on the host hears of it: fio's own window ends late by that much; not
    with ``move`` False: a log whose events were switched off early ends before the point does).
    Returns whether the log was read whole (False: longer than ``LIMIT``, cut) and how far the window
    was moved (s; None: no request completed, or not moved)."""
    started: dict[tuple[str, str], tuple[int, str]] = {}
    done: list[tuple[int, str, int]] = []  # completion (us), direction, latency (ns)
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(LIMIT + 1)
    for raw in data[:LIMIT].decode(errors="replace").splitlines():
        m = _LINE.match(raw)
        if m is None:
            continue
        sec, usec, event, vdev, req = m.groups()
        t = int(sec) * 1_000_000 + int(usec)
        key = (vdev, req)
        if event == "virtio_blk_handle_read":
            started[key] = (t, "read")
        elif event == "virtio_blk_handle_write":
            started[key] = (t, "write")
        elif event == "virtio_blk_req_complete" and key in started:
            t0, ddir = started.pop(key)
            done.append((t, ddir, (t - t0) * 1000))
    if not done:
        return len(data) <= LIMIT, None
    lo, hi = (int(t * 1_000_000) for t in window)
    shift = max(0, hi - max(t for t, _, _ in done)) if move else 0
    lo, hi = lo - shift, hi - shift
    bins: dict[str, dict[int, int]] = {"read": {}, "write": {}}
    sums = {"read": 0, "write": 0}
    for t, ddir, ns in done:
        if lo <= t <= hi:
            bucket = histogram.bucket_value(histogram.bucket_index(ns))
            bins[ddir][bucket] = bins[ddir].get(bucket, 0) + 1
            sums[ddir] += ns
    for ddir in ("read", "write"):
        spans.add(ddir, "issue", bins[ddir], sums[ddir])
    return len(data) <= LIMIT, shift / 1e6 if move else None
