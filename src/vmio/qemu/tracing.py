"""QEMU's request trace: the trace-event arguments that log every guest request of a VM's disks to a file.

The file is in the format ``vmio.traces.readers.read_qemu`` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vmio.errors import InputError

QEMU_EVENTS = ("virtio_blk_handle_read", "virtio_blk_handle_write", "blk_co_preadv", "blk_co_pwritev")
# the qemu layer (docs/layers.md): a virtio-blk request from the virtqueue to its completion
LAYER_EVENTS = ("virtio_blk_handle_read", "virtio_blk_handle_write", "virtio_blk_req_complete")


def qemu_trace_args(
    log_path: Path, *, events: Sequence[str] = QEMU_EVENTS, backends: bool = True
) -> list[str]:
    """QEMU arguments enabling the request trace events, timestamped, written to ``log_path`` (``-D``).

    With ``backends=False`` only the virtio-blk events are enabled (one line per guest request).
    """
    chosen = [e for e in events if backends or e.startswith("virtio_blk")]
    unknown = [e for e in chosen if e not in QEMU_EVENTS]
    if unknown:
        raise InputError(f"trace events {unknown!r} are not request events; use some of {QEMU_EVENTS}")
    args = ["-msg", "timestamp=on"]
    for event in chosen:
        args += ["-trace", f"enable={event}"]
    return [*args, "-D", str(log_path)]


def trace_events(bus: str) -> tuple[str, ...]:
    """One event pair per guest request: virtio-blk's own, else the block backend's (same offsets)."""
    if bus in ("virtio-blk", "block"):
        return ("virtio_blk_handle_read", "virtio_blk_handle_write")
    return ("blk_co_preadv", "blk_co_pwritev")


def layer_log_args(log_path: Path) -> list[str]:
    """QEMU arguments for the qemu layer's log: timestamped lines to ``log_path``; the events themselves are
    switched on for each point only (QMP ``trace-event-set-state``), so the log holds the points' requests."""
    return ["-msg", "timestamp=on", "-D", str(log_path)]
