"""Apply: data identical after --to-image, also after a real SIGKILL midway and a resume; dm/LVM text."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from vmio.cli import main
from vmio.errors import InputError, UnsafeTargetError
from vmio.relocate.apply import apply_to_image, rollback, side_paths
from vmio.relocate.devmapper import device_mapper_problem, dm_swap_commands, dm_tables, pvmove_commands
from vmio.relocate.layout import Layout
from vmio.relocate.plan_io import write_plan
from vmio.relocate.planner import Plan, build_plan

E = 4096
CLI = "import sys; from vmio.cli import main; sys.exit(main(sys.argv[1:]))"


def _setup(tmp_path: Path, extents: int = 100, position: str = "after") -> tuple[Plan, Path, Path]:
    rng = np.random.default_rng(11)
    layout = Layout.consecutive(["vm1", "vm2", "vm3"], [extents * E] * 3, E, (4 * extents) * E)
    hot = [np.sort(rng.choice(extents, size=extents // 5, replace=False)) for _ in range(3)]
    plan = build_plan(layout, hot, position=position, order="image")
    src = tmp_path / "disk.img"
    src.write_bytes(rng.bytes(3 * extents * E))
    plan_path = tmp_path / "plan.json"
    write_plan(plan, plan_path)
    return plan, src, plan_path


def _assert_relocated(plan: Plan, src: Path, out: Path) -> None:
    s, o = src.read_bytes(), out.read_bytes()
    for i, m in enumerate(plan.mapping):
        for k, new in enumerate(m.tolist()):
            old = plan.layout.base[i] + k
            assert o[new * E : (new + 1) * E] == s[old * E : (old + 1) * E], (i, k)


def test_apply_to_image_copies_every_extent_and_writes_the_map(tmp_path: Path) -> None:
    plan, src, plan_path = _setup(tmp_path)
    out = tmp_path / "out.img"
    assert main(["relocate", "apply", str(plan_path), "--source", str(src), "--to-image", str(out)]) == 0
    _assert_relocated(plan, src, out)
    journal, table = side_paths(out)
    lines = table.read_text().splitlines()
    assert lines[0] == f"# extent_bytes {E}"
    assert sum(int(row.split()[2]) for row in lines[2:]) == 300
    assert len(journal.read_text().splitlines()) == 301
    again = apply_to_image(plan, src, out)  # a finished apply re-run copies nothing
    assert (again.copied, again.skipped, again.resumed) == (0, 300, True)


def test_apply_killed_midway_resumes_to_identical_data(tmp_path: Path) -> None:
    plan, src, plan_path = _setup(tmp_path)
    out = tmp_path / "out.img"
    journal, _ = side_paths(out)
    argv = [
        sys.executable,
        "-c",
        CLI,
        "relocate",
        "apply",
        str(plan_path),
        "--source",
        str(src),
        "--to-image",
        str(out),
        "--rate",
        "400k",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if journal.exists() and len(journal.read_text().splitlines()) > 40:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    done_before = len(journal.read_text().splitlines()) - 1
    assert 40 <= done_before < 300
    res = apply_to_image(plan, src, out)
    assert res.resumed and res.skipped == done_before and res.copied == 300 - done_before
    _assert_relocated(plan, src, out)


def test_rollback_and_refusals(tmp_path: Path) -> None:
    plan, src, plan_path = _setup(tmp_path, extents=10)
    out = tmp_path / "out.img"
    out.write_bytes(b"precious")
    code = main(["relocate", "apply", str(plan_path), "--source", str(src), "--to-image", str(out)])
    assert code == 3 and out.read_bytes() == b"precious"
    with pytest.raises(UnsafeTargetError, match="no apply journal"):
        rollback(out)
    out.unlink()
    apply_to_image(plan, src, out)
    assert main(["relocate", "apply", str(plan_path), "--to-image", str(out), "--rollback"]) == 0
    assert not out.exists() and not any(p.exists() for p in side_paths(out))
    with pytest.raises(InputError, match="at least"):
        apply_to_image(plan, tmp_path / "plan.json", out)


def test_journal_of_another_plan_is_refused(tmp_path: Path) -> None:
    plan, src, _ = _setup(tmp_path, extents=10)
    out = tmp_path / "out.img"
    journal, _ = side_paths(out)
    journal.write_text("vmio-relocate-journal v1 plan=0000 source=/elsewhere\n")
    with pytest.raises(InputError, match="another plan"):
        apply_to_image(plan, src, out)


def _small_plan() -> Plan:
    layout = Layout.consecutive(["vm1", "vm2"], [4 * E, 4 * E], E, 12 * E)
    return build_plan(layout, [np.array([1, 2]), np.array([3])], position="after", order="image")


def test_dm_linear_tables_text() -> None:
    tables = dm_tables(_small_plan(), "/dev/sdb")
    assert tables == {
        "vm1": "0 8 linear /dev/sdb 0\n8 16 linear /dev/sdb 64\n24 8 linear /dev/sdb 24\n",
        "vm2": "0 24 linear /dev/sdb 32\n24 8 linear /dev/sdb 80\n",
    }
    cmds = dm_swap_commands(_small_plan(), {"vm1": Path("/t/vm1"), "vm2": Path("/t/vm2")})
    assert cmds[:3] == [
        ["dmsetup", "suspend", "vm1"],
        ["dmsetup", "reload", "vm1", "/t/vm1"],
        ["dmsetup", "resume", "vm1"],
    ]


def test_pvmove_commands_text() -> None:
    assert pvmove_commands(_small_plan(), "/dev/sdb1") == [
        ["pvmove", "--alloc", "anywhere", "/dev/sdb1:1-2", "/dev/sdb1:8-9"],
        ["pvmove", "--alloc", "anywhere", "/dev/sdb1:7-7", "/dev/sdb1:10-10"],
    ]
    layout = Layout.consecutive(["vm1"], [4 * E], E, 8 * E)
    with pytest.raises(InputError, match="pvmove moves only into free extents"):
        pvmove_commands(build_plan(layout, [np.array([3])], position="start"), "/dev/sdb1")


def test_cli_prints_dm_tables_and_pvmove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan_path = tmp_path / "p.json"
    write_plan(_small_plan(), plan_path)
    assert (
        main(["relocate", "apply", str(plan_path), "--dm-tables", "/dev/sdb", "--pvmove", "/dev/sdb1"]) == 0
    )
    out = capsys.readouterr().out
    assert (
        "# vm1\n0 8 linear /dev/sdb 0" in out and "pvmove --alloc anywhere /dev/sdb1:1-2 /dev/sdb1:8-9" in out
    )


@pytest.mark.root
def test_dm_tables_read_back_the_images_on_a_real_device_mapper(tmp_path: Path) -> None:
    problem = device_mapper_problem()
    if problem:
        pytest.skip(f"device-mapper is not available here: {problem}")
    from vmio.system.process import Runner

    plan, src, _ = _setup(tmp_path, extents=16)
    out = tmp_path / "out.img"
    apply_to_image(plan, src, out)
    run = Runner().run
    loop = run(["losetup", "--find", "--show", str(out)], timeout=30).stdout.strip()
    name = f"vmio-test-{os.getpid()}-vm1"
    try:
        table = tmp_path / "vm1.table"
        table.write_text(dm_tables(plan, loop)["vm1"])
        run(["dmsetup", "create", name, str(table)], timeout=30)
        try:
            got = Path(f"/dev/mapper/{name}").read_bytes()
        finally:
            run(["dmsetup", "remove", name], timeout=30)
    finally:
        run(["losetup", "-d", loop], timeout=30)
    assert got == src.read_bytes()[: 16 * E]
