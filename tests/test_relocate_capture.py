"""Capture helpers: QEMU trace arguments (checked with real qemu-io), blktrace detection."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vmio.errors import InputError, ToolError
from vmio.qemu.tracing import QEMU_EVENTS, qemu_trace_args
from vmio.relocate.capture import blktrace_capture, blktrace_problem
from vmio.system.process import Runner
from vmio.traces.readers import read_qemu
from vmio.traces.trace import READ, WRITE


def test_qemu_trace_args_enable_the_request_events(tmp_path: Path) -> None:
    log = tmp_path / "vm1-trace.log"
    args = qemu_trace_args(log)
    assert args[:2] == ["-msg", "timestamp=on"]
    assert [args[i + 1] for i, a in enumerate(args) if a == "-trace"] == [f"enable={e}" for e in QEMU_EVENTS]
    assert args[-2:] == ["-D", str(log)]
    assert "blk_co_preadv" not in " ".join(qemu_trace_args(log, backends=False))
    with pytest.raises(InputError, match="not request events"):
        qemu_trace_args(log, events=["virtio_blk_req_complete"])


@pytest.mark.skipif(shutil.which("qemu-io") is None, reason="qemu-io (Debian qemu-utils) is not installed")
def test_real_qemu_block_trace_is_read_back(tmp_path: Path) -> None:
    img = tmp_path / "d.img"
    img.write_bytes(b"\0" * (1 << 20))
    trace_opts = [x for e in QEMU_EVENTS[2:] for x in ("-T", f"enable={e}")]
    argv = ["qemu-io", "-f", "raw", "-c", "read 0 4k", "-c", "write 65536 8k", *trace_opts, str(img)]
    done = Runner().run(argv, timeout=30)
    log = tmp_path / "trace.log"
    log.write_text(done.stdout + done.stderr)
    tr = read_qemu(log)
    assert tr.offset.tolist() == [0, 65536]
    assert tr.length.tolist() == [4096, 8192]
    assert tr.op.tolist() == [READ, WRITE]
    assert len(tr.images) == 1


def test_blktrace_without_debugfs_says_how_to_mount_it(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.write_bytes(b"")
    problem = blktrace_problem(dev, debugfs=tmp_path / "debug")
    assert problem is not None and "mount -t debugfs" in problem
    with pytest.raises(ToolError, match="debugfs is not mounted"):
        blktrace_capture(dev, 1, tmp_path / "out.txt", debugfs=tmp_path / "debug")
    assert "does not exist" in (blktrace_problem(tmp_path / "nodev") or "")


@pytest.mark.root
@pytest.mark.skipif(shutil.which("blktrace") is None, reason="blktrace is not installed")
def test_blktrace_on_the_root_disk_or_a_clear_refusal(tmp_path: Path) -> None:
    dev = Path("/dev/vda") if Path("/dev/vda").exists() else Path("/dev/sda")
    problem = blktrace_problem(dev)
    if problem:
        pytest.skip(f"blktrace cannot run here: {problem}")
    try:
        out = blktrace_capture(dev, 1, tmp_path / "bt.txt")
    except ToolError as exc:
        assert "kernel refused" in str(exc)
        pytest.skip(f"this kernel refuses blktrace: {str(exc).splitlines()[0]}")
    assert out.exists()


def test_capture_command_says_why_it_cannot_trace_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vmio.cli import main
    from vmio.relocate.capture import blktrace_problem

    device = Path("/dev/loop0")
    problem = blktrace_problem(device)
    if problem is None:
        pytest.skip("blktrace may run here; the real capture is tested above")
    assert (
        main(
            ["relocate", "capture", "--device", str(device), "--seconds", "1", "-o", str(tmp_path / "t.txt")]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert problem in err and "Traceback" not in err and not (tmp_path / "t.txt").exists()
