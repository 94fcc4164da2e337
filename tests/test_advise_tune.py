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
    firsts = [v["actions"][0] for v in verdicts.values()]
    # a free loop device lets dedicate-disk apply too, should the host CPU be the limit on this busy host
    loop = _loop(scratch)
    try:
        code = main(["tune", "t", "--db", db, "--json", *(["--backing", loop] if loop else [])])
    finally:
        if loop:
            subprocess.run(["losetup", "-d", loop], check=False, timeout=30)
    report = json.loads(capsys.readouterr().out)
    (target,) = report["targets"]
    assert target["action"] in firsts  # the top action is one the diagnosis named first
    store = Store(db)
    if target["action"] == "none":
        assert code == 0 and report["tuned_campaign"] is None and store.campaign("t-tuned") is None
        return
    if target["refused"]:
        assert code == 1 and report["run"] is None and store.campaign("t-tuned") is None
        return
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
        "no significant change", "higher (better)", "lower (worse)")  # fmt: skip
    capsys.readouterr()
    assert main(["compare", "t", "t-tuned", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changes"] == changes


def _loop(scratch: Path) -> str | None:
    image = scratch / "dedicated.img"
    with open(image, "wb") as f:
        f.truncate(128 << 20)
    done = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() if done.returncode == 0 else None
