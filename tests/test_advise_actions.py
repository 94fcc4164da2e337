"""Tune's actions on a VM target's spec, the spec written back as TOML, and tune refusing honestly."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from vmio.advise.actions import CannotApply, apply
from vmio.advise.diagnose import Diagnosis
from vmio.advise.tune import plan, top_action
from vmio.cli import main
from vmio.qemu import QemuCaps
from vmio.spec import QemuTarget, loads_spec
from vmio.spec.dump import dumps
from vmio.store import RunRecord, Store

OLD = QemuCaps("qemu-system-x86_64", (7, 2, 22), "QEMU 7.2.22", {"nvme": frozenset({"drive"})})
NEW = QemuCaps("qemu-system-x86_64", (9, 1, 0), "QEMU 9.1.0",
               {"virtio-blk-pci": frozenset({"iothread", "iothread-vq-mapping"})})  # fmt: skip
VM = QemuTarget("vm", ("/var/tmp/a.img",), jobs_per_vm=16, size=64 << 20)


def test_each_action_changes_what_it_says() -> None:
    assert apply(VM, "add-iothread", caps=lambda: OLD).target.iothreads == 1
    out = apply(VM, "scale-out-vms", caps=lambda: OLD)
    assert (out.target.vms, out.target.jobs_per_vm, out.change) == (2, 8, "vms 1 -> 2, jobs_per_vm 16 -> 8")
    one = apply(QemuTarget("v", ("/x",)), "scale-out-vms", caps=lambda: OLD)
    assert (one.target.vms, one.target.jobs_per_vm) == (2, 1) and "grows" in one.change
    vq = apply(VM, "iothread-vq-mapping", caps=lambda: NEW, cpus=16).target
    assert (vq.iothreads, vq.queues) == (4, 4)
    two = QemuTarget("v", ("/a",), vms=2)
    assert apply(two, "spread-disks", caps=lambda: OLD, backing="/b").target.backing == ("/a", "/b")


@pytest.mark.parametrize(
    ("target", "action", "backing", "why"),
    [
        (VM, "iothread-vq-mapping", None, "QEMU 7.2.22 has no iothread-vq-mapping"),
        (QemuTarget("v", ("/a",), bus="nvme"), "add-iothread", None, "nvme has no iothread"),
        (QemuTarget("v", ("/a",), bus="vfio"), "add-iothread", None, "passes its device through"),
        (VM, "spread-disks", None, "give it with --backing PATH"),
        (VM, "spread-disks", "/b", "one VM with one disk"),
        (VM, "dedicate-disk", None, "--backing /dev/NAME"),
        (VM, "dedicate-disk", "/var/tmp/not-a-device", "is not a block device"),
        (QemuTarget("v", ("/a",), vms=256), "scale-out-vms", None, "exceeds 256"),
    ],
)
def test_actions_that_cannot_apply_say_why(
    target: QemuTarget, action: str, backing: str | None, why: str
) -> None:
    with pytest.raises(CannotApply, match=why):
        apply(target, action, caps=lambda: OLD, backing=backing)


def test_spec_toml_reads_back_to_the_same_campaign(tmp_path: Path) -> None:
    text = (
        '[campaign]\nname = "c"\nrepetitions = 3\n'
        '[[target]]\nname = "bare"\npath = "/dev/\\"q\\"x"\n'
        '[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["/a", "/b"]\nsize = "1G"\nmemory = "1G"\n'
        '[[target]]\nname = "r"\nkind = "remote"\nhosts = ["127.0.0.1:8765"]\npath = "/x"\n'
        '[[target]]\nname = "rbd"\nkind = "rbd"\nimage = "i"\nconf = "/etc/ceph.conf"\n'
        '[[workload]]\nname = "w"\nrw = "randrw"\nbs = ["4k", "64k"]\nruntime = "1.5s"\n'
        'offered_iops = [100, "max"]\nload_processes = [0, 2]\n'
    )
    camp = loads_spec(text)
    back = loads_spec(dumps(camp, "a comment\nover two lines"))
    assert back.canonical() == camp.canonical() and back.repetitions == 3 and back.name == "c"


def diag(*actions: str) -> Diagnosis:
    return Diagnosis("none", actions, (), at_limit=False)  # type: ignore[arg-type]


def test_top_action_is_the_most_common_first_action() -> None:
    assert top_action(
        {"a": diag("add-iothread"), "b": diag("scale-out-vms"), "c": diag("scale-out-vms")}
    ) == ("scale-out-vms")
    assert top_action({"a": diag("add-iothread", "x"), "b": diag("scale-out-vms")}) == "add-iothread"


def stored(
    tmp_path: Path, metrics: dict[tuple[str, str], float], qemu: str = "7.2.22", **keys: object
) -> str:
    """A campaign with one VM target point in a real store, its figures given (no VM is run)."""
    lines = [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    text = ('[campaign]\nname = "c"\n[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["/var/tmp/c.img"]\n'
            + "\n".join(lines) + '\n[[workload]]\nname = "rr"\nrw = "randread"\nruntime = "2s"\n')  # fmt: skip
    camp = loads_spec(text)
    db = str(tmp_path / "c.db")
    with Store(db) as store:
        store.ensure_campaign("c", "c.toml", text, camp.canonical())
        (point,) = camp.points()
        now = time.time()
        store.record(RunRecord("c", point.key, "vm", "qemu", "rr", 4096, None, 0, 1, "done", now, now,
                               qemu_version=qemu, metrics=metrics))  # fmt: skip
    return db


def test_tune_refuses_what_it_cannot_apply_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 256 VMs with one job each, read-heavy, the device not busy: Fig. 10 (e) scales out, past the spec's limit
    db = stored(tmp_path, {("cpu", "usr_pct"): 80.0, ("cpu", "sys_pct"): 15.0}, vms=256)
    assert main(["tune", "c", "--db", db]) == 1
    out = capsys.readouterr().out
    assert "top action: scale-out-vms" in out and "cannot be applied automatically" in out
    assert "exceeds 256" in out and "nothing was written" in out
    assert main(["tune", "c", "--db", db, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["tuned_campaign"] is None and "exceeds 256" in report["targets"][0]["refused"]
    with Store(db) as store:
        assert store.campaigns() == ["c"]


def test_tune_without_an_action_exits_0_without_a_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two VMs' iothreads at their limit on QEMU 7.2 (no iothread-vq-mapping), no device to dedicate
    db = stored(tmp_path, {("qemu:vmio-0", "iothread_pct"): 99.0}, iothreads=1, jobs_per_vm=4, vms=2)
    assert main(["tune", "c", "--db", db]) == 0
    assert capsys.readouterr().out == (
        "campaign 'c': tuning guideline (hitachi-nvme-2016, Fig. 10) per VM target\n"
        "  target 'vm': 1 point(s); limit qemu-io-thread\n"
        "    vm/rr/bs=4k/offered=max/load=0/rep=1: limit qemu-io-thread; actions none\n"
        "    top action: none\n"
        "    nothing to apply: the guideline names no action for this target\n"
        "not tuned: no action to apply; nothing was re-run\n"
    )
    with Store(db) as store:
        assert store.campaigns() == ["c"]


def test_vq_mapping_is_refused_on_an_old_qemu_and_planned_on_a_new_one(tmp_path: Path) -> None:
    db = stored(tmp_path, {("qemu:vmio-0", "iothread_pct"): 99.0}, qemu="9.1.0", iothreads=1, jobs_per_vm=4)
    with Store(db) as store:
        old = plan(store, "c", caps=lambda: OLD)
        new = plan(store, "c", caps=lambda: NEW, tuned_name="c-vq")
    assert old.targets[0].action == "iothread-vq-mapping" and old.tuned is None
    assert "needs QEMU 9.0" in str(old.targets[0].refused)
    assert new.tuned is not None and new.tuned.name == "c-vq" and new.spec_text is not None
    (target,) = new.tuned.targets
    assert isinstance(target, QemuTarget) and target.iothreads >= 2
    assert loads_spec(new.spec_text).canonical() == new.tuned.canonical()


def test_dedicate_disk_onto_a_free_loop_device(tmp_path: Path, scratch: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for a loop device")
    image = scratch / "free.img"
    image.write_bytes(b"")
    os.truncate(image, 64 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, timeout=30)
    if dev.returncode != 0:
        pytest.skip(f"losetup failed: {dev.stderr.strip()}")
    try:
        applied = apply(QemuTarget("vm", ("/var/tmp/c.img",)), "dedicate-disk", caps=lambda: OLD,
                        backing=dev.stdout.strip())  # fmt: skip
    finally:
        subprocess.run(["losetup", "-d", dev.stdout.strip()], check=False, timeout=30)
    target = applied.target
    assert target.bus == "block" and target.backing == (dev.stdout.strip(),)
