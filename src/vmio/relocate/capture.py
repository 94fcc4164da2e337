"""Capturing block traces: QEMU trace-event arguments for a VM's disks, and blktrace on the host.

``qemu_trace_args`` gives the QEMU command-line arguments that log every request of the VM's virtio-blk
disks (and of its block backends) to a file, in the format ``readers.read_qemu`` reads. ``blktrace_capture``
runs ``blktrace | blkparse`` for a while on a host block device; kernels that refuse tracing (no debugfs,
lockdown, missing CONFIG_BLK_DEV_IO_TRACE) give a ``ToolError`` that says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vmio.errors import InputError, ToolError
from vmio.system.process import Runner

QEMU_EVENTS = ("virtio_blk_handle_read", "virtio_blk_handle_write", "blk_co_preadv", "blk_co_pwritev")
DEBUGFS = Path("/sys/kernel/debug")


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


def blktrace_problem(device: Path, debugfs: Path = DEBUGFS) -> str | None:
    """Why blktrace cannot run on ``device`` here, or ``None`` when it may."""
    if not device.exists():
        return f"{str(device)!r} does not exist"
    if not (debugfs / "block").is_dir():
        return (
            f"debugfs is not mounted at {str(debugfs)!r} (blktrace needs it: mount -t debugfs none {debugfs})"
        )
    return None


def blktrace_capture(
    device: Path,
    seconds: float,
    out: Path,
    *,
    runner: Runner | None = None,
    debugfs: Path = DEBUGFS,
) -> Path:
    """Trace ``device`` for ``seconds`` and write blkparse's text output to ``out``."""
    problem = blktrace_problem(device, debugfs)
    if problem:
        raise ToolError(f"cannot run blktrace on {str(device)!r}: {problem}")
    runner = runner or Runner()
    base = out.parent / (out.stem + "-bt")
    argv = [
        "blktrace",
        "-d",
        str(device),
        "-w",
        f"{max(1, round(seconds))}",
        "-r",
        str(debugfs),
        "-o",
        str(base),
    ]
    done = runner.run(argv, timeout=seconds + 30, check=False)
    if done.returncode != 0 or "failed" in done.stderr.lower():
        raise ToolError(
            "blktrace could not trace the device; the kernel refused (lockdown, no CONFIG_BLK_DEV_IO_TRACE, "
            "or not root)",
            argv=argv,
            returncode=done.returncode,
            output=done.stdout + done.stderr,
        )
    runner.run(["blkparse", "-i", str(base), "-o", str(out)], timeout=120)
    return out
