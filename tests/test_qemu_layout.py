"""How VMs are spread over backing paths, and the progress line on a terminal."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from vmio.campaign import Progress
from vmio.cli.campaign import ProgressPrinter
from vmio.errors import InputError
from vmio.spec import QemuTarget
from vmio.targets.qemu import layout


def test_vms_round_robin_over_paths_with_disjoint_ranges(tmp_path: Path) -> None:
    a, b = tmp_path / "ssd1.img", tmp_path / "ssd2.img"
    target = QemuTarget("t", backing=(str(a), str(b)), vms=3, size=4 << 20)
    disks = layout(target)
    assert [d.path for d in disks] == [a, b, a]
    assert [(d.offset, d.size) for d in disks] == [(0, 4 << 20), (0, 4 << 20), (4 << 20, 4 << 20)]
    assert a.stat().st_size == 8 << 20 and b.stat().st_size == 4 << 20  # created to fit their VMs


def test_without_size_vms_split_an_existing_file(tmp_path: Path) -> None:
    f = tmp_path / "d.img"
    f.write_bytes(b"\0" * (10 << 20))
    disks = layout(QemuTarget("t", backing=(str(f),), vms=2))
    assert [(d.offset, d.size) for d in disks] == [(0, 5 << 20), (5 << 20, 5 << 20)]
    (whole,) = layout(QemuTarget("t", backing=(str(f),), vms=1))
    assert (whole.offset, whole.size) == (0, None)


def test_missing_backing_without_size(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist; give size"):
        layout(QemuTarget("t", backing=(str(tmp_path / "none.img"),)))


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_and_plain_lines_elsewhere() -> None:
    tty, plain = Tty(), io.StringIO()
    for stream in (tty, plain):
        show = ProgressPrinter(stream)
        show(Progress(1, 4, "bare/rr/bs=4096/offered=max/load=0/rep=1", "running", 75.0))
        show(Progress(2, 4, "bare/rr/bs=4096/offered=max/load=0/rep=1", "done", None))
        show(Progress(3, 4, "vm/rr/bs=4096/offered=max/load=0/rep=1", "failed", None, error="fio timed out"))
        show.close()
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", tty.getvalue())  # rich draws the bar on a terminal
    assert "failed vm/rr/bs=4096/offered=max/load=0/rep=1: fio timed out" in shown
    assert "2/4" in shown and "bare/rr/bs=4096/offered=max/load=0/rep=1" in shown and "ETA 0:01:15" in shown
    assert tty.getvalue() != plain.getvalue()
    assert plain.getvalue() == (
        "[1/4] running bare/rr/bs=4096/offered=max/load=0/rep=1 ETA 0:01:15\n"
        "[2/4] done bare/rr/bs=4096/offered=max/load=0/rep=1\n"
        "[3/4] failed vm/rr/bs=4096/offered=max/load=0/rep=1: fio timed out\n"
    )
