"""vmio tune end to end: a 1 VM x 2 jobs campaign without an iothread (TCG) -> diagnose -> tune ->
the re-run is stored under its own name and compared point by point with the original."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.spec import QemuTarget, loads_spec
from vmio.store import Store

from qemu_support import needs_qemu

SPEC = """\
[campaign]
name = "t"
repetitions = 2

[[target]]
name = "vm"
kind = "qemu"
backing = ["{img}"]
size = "64M"
jobs_per_vm = 2
accel = "tcg"

[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "2s"
"""


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_tune_applies_the_diagnosed_action_and_compares(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "t.toml"
    spec.write_text(SPEC.format(img=scratch / "vm.img"))
    db = str(tmp_path / "t.db")
    assert main(["run", str(spec), "--db", db]) == 0
    capsys.readouterr()
    assert main(["diagnose", "t", "--db", db, "--json"]) == 0
    verdicts = json.loads(capsys.readouterr().out)
    assert len(verdicts) == 2
    # Fig. 10 for 1 VM x 2 jobs on a shared bus without an iothread: (a) dedicate a disk if the walk
    # found one that raises I/O, else (c) several jobs -> (f) no iothread -> add one. Never "none".
    firsts = {v["actions"][0] for v in verdicts.values()}
    dedicate = any("dedicate-disk raises I/O" in s["answer"] for v in verdicts.values() for s in v["steps"])
    assert firsts == {"dedicate-disk" if dedicate else "add-iothread"}, verdicts
    loop = _loop(scratch) if dedicate else None
    if dedicate and loop is None:
        pytest.skip("the walk would dedicate a disk, and no free loop device is left to give it")
    try:
        code = main(["tune", "t", "--db", db, "--json", *(["--backing", loop] if loop else [])])
    finally:
        if loop:
            subprocess.run(["losetup", "-d", loop], check=False, timeout=30)
    report = json.loads(capsys.readouterr().out)
    (target,) = report["targets"]
    assert target["action"] == firsts.pop() and not target["refused"], target
    store = Store(db)
    assert code == 0, report["run"]
    assert report["tuned_campaign"] == "t-tuned" and report["run"]["done"] == 2
    tuned = loads_spec(store.require("t-tuned")["spec_text"])
    (vm,) = tuned.targets
    assert isinstance(vm, QemuTarget)
    by_action: dict[str, dict[str, object]] = {
        "add-iothread": {"iothreads": 1},
        "scale-out-vms": {"vms": 2, "jobs_per_vm": 1},
        "dedicate-disk": {"bus": "block", "backing": (loop,)},
    }
    expected = by_action[target["action"]]
    assert {k: getattr(vm, k) for k in expected} == expected
    assert {r["status"] for r in store.runs("t-tuned")} == {"done"}
    changes = report["compare"]["changes"]
    iops = [c for c in changes if c["metric"] == "IOPS"]
    assert len(iops) == 1 and iops[0]["n_before"] == 2 and iops[0]["n_after"] == 2
    assert iops[0]["ci_low"] is not None and iops[0]["verdict"] in (
        "no change", "inconclusive", "higher (better)", "lower (worse)")  # fmt: skip
    capsys.readouterr()
    assert main(["compare", "t", "t-tuned", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changes"] == changes


def _loop(scratch: Path) -> str | None:
    image = scratch / "dedicated.img"
    with open(image, "wb") as f:
        f.truncate(128 << 20)
    done = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() if done.returncode == 0 else None
