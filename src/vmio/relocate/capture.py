"""Capturing block traces on the host with blktrace (a VM's own requests: ``vmio.qemu.tracing``).

``blktrace_capture`` runs ``blktrace | blkparse`` for a while on a host block device; kernels that refuse tracing (no debugfs,
lockdown, missing CONFIG_BLK_DEV_IO_TRACE) give a ``ToolError`` that says which.
"""

from __future__ import annotations

from pathlib import Path

from vmio.errors import ToolError
from vmio.system.process import Runner

DEBUGFS = Path("/sys/kernel/debug")


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
