"""The tuning guideline (seed 000, Fig. 10): every branch, with evidence that reaches it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vmio.advise.diagnose import Diagnosis, diagnose
from vmio.advise.evidence import evidence_from_dict
from vmio.advise.text import explain, format_diagnosis
from vmio.advise.thresholds import DEVIATIONS
from vmio.cli import main

NVME = {
    "name": "nvme0n1",
    "rotational": False,
    "in_use": True,
    "dedicated_to_vm": False,
    "capacity_read_iops": 450000,
    "capacity_write_iops": 75000,
}
BASE: dict[str, Any] = {
    "host": {"cpus": 16, "qemu_version": "7.2.0"},
    "devices": [NVME],
    "vm": {"count": 1, "jobs_per_vm": 16, "bus": "virtio-blk", "iothreads": 0},
    "workload": {"read_pct": 100, "bs": 4096, "iodepth": 32},
    "measured": {
        "read_iops": 92000,
        "write_iops": 0,
        "dev_busy_pct": 60,
        "dev_queue": 3.1,
        "dev_await_ms": 0.2,
        "cpu_usr_pct": 20,
        "cpu_sys_pct": 15,
        "cpu_iowait_pct": 5,
        "qemu_iothread_cpu_pct": None,
        "qemu_main_loop_cpu_pct": 98,
        "qemu_vcpu_cpu_pct": 40,
    },
}


def run(**changes: Any) -> Diagnosis:
    """Diagnose BASE with sections replaced or merged: ``vm=None``, ``measured={"dev_busy_pct": 100}``."""
    raw = copy.deepcopy(BASE)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key].update(value)
        else:
            raw[key] = value
    result = diagnose(evidence_from_dict(raw))
    for step in result.steps:
        assert step.evidence, f"step {step.node} cites no numbers"
    return result


def nodes(d: Diagnosis) -> list[str]:
    return [s.node for s in d.steps]


def one_vm_one_job(**measured: Any) -> dict[str, Any]:
    return {"vm": {"jobs_per_vm": 1}, "measured": measured}


# Every leaf of Fig. 10. at_limit is the paper's "I/O 性能限界": no step of the guideline would raise I/O.


def test_a_device_that_can_be_dedicated_raises_io_whatever_comes_after() -> None:
    # (a): a free device for the one VM; the walk still names the bottleneck further down
    free = {**NVME, "name": "nvme1n1", "in_use": False}
    d = run(devices=[NVME, free], vm={"iothreads": 1})
    assert (d.at_limit, d.limit) == (False, "qemu-io-thread")
    assert d.actions == ("dedicate-disk", "spread-disks")
    assert d.steps[0].answer.startswith("no, but it can be: nvme1n1 is free")


def test_a_free_device_raises_io_whatever_comes_after() -> None:
    # (b): 16 VMs share nvme0n1 at its capacity; one free device is too few to dedicate but lets disks spread
    free = {**NVME, "name": "nvme1n1", "in_use": False}
    d = run(devices=[NVME, free], vm={"count": 16, "jobs_per_vm": 1}, measured={"read_iops": 440000})
    assert (d.at_limit, d.limit, d.actions) == (False, "device", ("spread-disks",))
    assert "cannot be: 1 free device(s) for 16 VMs" in d.steps[0].answer
    assert "1.57x/2.75x bare metal on 1 SSD" in d.steps[1].answer
    assert d.steps[1].evidence == {"devices.in_use": {"nvme0n1": True, "nvme1n1": False}}


def test_a_loop_device_backing_the_vm_is_not_free() -> None:
    loop = {"name": "loop0", "rotational": False, "in_use": True, "dedicated_to_vm": False}
    d = run(devices=[loop], **write_heavy(write_iops=3000, cpu_usr_pct=5, cpu_sys_pct=60))
    assert "spread-disks" not in d.actions and "dedicate-disk" not in d.actions
    assert d.steps[1].answer == "no: every device is in use"
    assert (d.at_limit, d.limit, d.actions) == (True, "host-cpu", ("none",))


def test_several_jobs_without_an_iothread_add_one() -> None:
    # (c) yes -> (f) no iothread: whatever QEMU's main loop shows, the seed's step is to add one
    for main_loop in (98, 30, None):
        d = run(measured={"qemu_main_loop_cpu_pct": main_loop})
        assert (d.at_limit, d.limit, d.actions) == (False, "qemu-io-thread", ("add-iothread",))
        assert nodes(d) == ["a", "b", "c", "f"]


def test_several_jobs_with_an_iothread_on_qemu_7_2_are_at_the_limit() -> None:
    d = run(vm={"iothreads": 1}, measured={"qemu_iothread_cpu_pct": 40})
    assert (d.at_limit, d.limit, d.actions) == (True, "qemu-io-thread", ("none",))
    assert "needs 9.0" in d.steps[-1].answer
    assert d.steps[-1].deviation is None


def test_several_jobs_with_an_iothread_on_qemu_9_map_queues_over_iothreads() -> None:
    host = {"qemu_version": "9.0.2"}
    d = run(host=host, vm={"iothreads": 1}, measured={"qemu_iothread_cpu_pct": 97})
    assert (d.at_limit, d.limit, d.actions) == (False, "qemu-io-thread", ("iothread-vq-mapping",))
    assert d.steps[-1].deviation is not None and "QEMU 9.0" in d.steps[-1].deviation.source
    mapped = run(host=host, vm={"iothreads": 4, "vq_mapping": True})
    assert (mapped.at_limit, mapped.actions) == (True, ("none",))
    no_thread = run(host=host)
    assert no_thread.actions == ("add-iothread", "iothread-vq-mapping")


def test_vq_mapping_is_only_advised_for_virtio_blk() -> None:
    scsi = run(host={"qemu_version": "9.1.0"}, vm={"bus": "virtio-scsi", "iothreads": 1})
    assert (scsi.at_limit, scsi.limit, scsi.actions) == (True, "qemu-io-thread", ("none",))
    assert "a virtio-blk property, not virtio-scsi's" in scsi.steps[-1].answer


def test_vfio_keeps_qemu_out_of_the_io_path() -> None:
    d = run(vm={"bus": "vfio"}, measured={"qemu_main_loop_cpu_pct": 100})
    assert d.steps[0].answer.startswith("yes")
    assert d.steps[3].answer.startswith("not asked: with vfio") and d.steps[3].deviation is not None
    assert d.limit != "qemu-io-thread"


def test_read_heavy_device_not_busy_scales_out() -> None:
    # (d) no -> (e) not busy: an NVMe at 100 % util but 20 % of its calibrated capacity
    d = run(**one_vm_one_job(dev_busy_pct=100, dev_queue=3.1, read_iops=92000))
    assert (d.at_limit, d.limit, d.actions) == (False, "none", ("scale-out-vms",))
    device = d.steps[-1]
    assert device.node == "e" and device.answer.startswith("no: 20% of its capacity")
    assert "100 % busy does not mean busy" in device.answer
    assert device.evidence["capacity_fraction"] == pytest.approx(92000 / 450000, abs=1e-3)
    assert device.deviation is not None and "%util" in device.deviation.source


def test_read_heavy_device_at_capacity_is_at_the_limit() -> None:
    # (e) busy = at its calibrated capacity, whatever %util says
    d = run(**one_vm_one_job(read_iops=400000, dev_busy_pct=40, dev_queue=64))
    assert (d.at_limit, d.limit, d.actions) == (True, "device", ("none",))


def test_bare_host_evidence_skips_the_vm_questions() -> None:
    d = run(vm=None, measured={"read_iops": 430000, "dev_busy_pct": 100, "dev_queue": 120})
    assert nodes(d) == ["a", "b", "d", "e"]
    assert (d.at_limit, d.limit, d.actions) == (True, "device", ("none",))


def test_without_capacity_a_rotational_disk_is_judged_by_busy() -> None:
    hdd = {"name": "sda", "rotational": True, "in_use": True}
    d = run(devices=[hdd], **one_vm_one_job(read_iops=180, dev_busy_pct=97, dev_queue=1.5))
    assert (d.at_limit, d.limit) == (True, "device")
    assert "rotational" in d.steps[-1].answer and d.steps[-1].deviation is None


def test_without_capacity_an_nvme_needs_a_deep_queue_to_be_busy() -> None:
    nvme = {"name": "nvme0n1", "rotational": False, "in_use": True}
    shallow = run(devices=[nvme], **one_vm_one_job(dev_busy_pct=100, dev_queue=3.1))
    deep = run(devices=[nvme], **one_vm_one_job(dev_busy_pct=100, dev_queue=64))
    seed_rule = run(devices=[nvme], **one_vm_one_job(dev_busy_pct=100, dev_queue=None))
    assert (shallow.at_limit, deep.at_limit, seed_rule.at_limit) == (False, True, True)
    assert "seed 000's rule" in seed_rule.steps[-1].answer


# (d) -> (g): write-heavy


def write_heavy(**measured: Any) -> dict[str, Any]:
    return {"vm": {"jobs_per_vm": 1}, "workload": {"read_pct": 0}, "measured": {"read_iops": 0, **measured}}


def test_write_heavy_usr_far_above_sys_on_an_idle_device_scales_out() -> None:
    d = run(**write_heavy(write_iops=3000, dev_busy_pct=100, cpu_usr_pct=60, cpu_sys_pct=8))
    assert (d.at_limit, d.limit, d.actions) == (False, "guest-cpu", ("scale-out-vms",))
    assert nodes(d) == ["a", "b", "c", "d", "g"]
    assert d.steps[-1].answer.startswith("%usr 60 > %sys 8 -> more VMs raise I/O")


def test_write_heavy_sys_far_above_usr_is_at_the_limit() -> None:
    d = run(**write_heavy(write_iops=3000, cpu_usr_pct=5, cpu_sys_pct=60))
    assert (d.at_limit, d.limit, d.actions) == (True, "host-cpu", ("none",))
    # at or above: equal shares are the limit too, and idle CPUs do not change the seed's branch
    equal = run(**write_heavy(write_iops=3000, cpu_usr_pct=4, cpu_sys_pct=4))
    assert (equal.at_limit, equal.limit) == (True, "host-cpu")


def test_write_heavy_usr_leading_on_a_device_at_capacity_is_at_the_limit() -> None:
    d = run(**write_heavy(write_iops=74000, cpu_usr_pct=40, cpu_sys_pct=20))
    assert (d.at_limit, d.limit, d.actions) == (True, "device", ("none",))
    assert d.steps[-1].deviation is not None and d.steps[-1].deviation.node == "g"


def test_write_heavy_on_a_bare_host_adds_jobs() -> None:
    d = run(
        vm=None, workload={"read_pct": 0}, measured={"read_iops": 0, "write_iops": 3000, "cpu_usr_pct": 50}
    )
    assert (d.at_limit, d.limit, d.actions) == (False, "app-cpu", ("add-jobs",))


def test_write_heavy_with_unknown_cpu_judges_the_device() -> None:
    d = run(**write_heavy(write_iops=74000, cpu_usr_pct=None, cpu_sys_pct=None))
    assert (d.at_limit, d.limit) == (True, "device")
    assert d.steps[4].answer.startswith("unknown")


def test_cpu_verdicts_under_tcg_say_emulation_is_in_usr() -> None:
    d = run(host={"accel": "tcg"}, **write_heavy(write_iops=3000, cpu_usr_pct=90, cpu_sys_pct=5))
    assert "guest's instruction emulation is counted in the host's %usr" in d.steps[-1].answer
    assert d.steps[-1].deviation is not None and "TCG" in d.steps[-1].deviation.source
    kvm = run(host={"accel": "kvm"}, **write_heavy(write_iops=3000, cpu_usr_pct=90, cpu_sys_pct=5))
    assert "emulation" not in kvm.steps[-1].answer


def test_read_share_comes_from_measured_iops_when_the_workload_does_not_say() -> None:
    changes = {**write_heavy(write_iops=74000, read_iops=8000, cpu_usr_pct=1), "workload": {"read_pct": None}}
    d = run(**changes)
    mix = d.steps[3]
    assert mix.answer == "yes: 10 % reads"
    assert mix.evidence["measured.write_iops"] == 74000


# output


def test_human_text_of_one_diagnosis() -> None:
    free = {**NVME, "name": "nvme1n1", "in_use": False, "capacity_read_iops": None}
    d = run(devices=[NVME, free], vm={"count": 16, "jobs_per_vm": 1}, measured={"read_iops": 420000})
    assert format_diagnosis(d) == EXPECTED_TEXT


EXPECTED_TEXT = """\
Limit: device (not at the I/O limit: the actions below raise I/O)
Actions, most promising first: spread-disks
Path through Fig. 10 (seed 000's tuning guideline):
  (a) Is a device dedicated to the VM, and if not, can one be?
      no, and it cannot be: 1 free device(s) for 16 VMs
      [vm.bus="virtio-blk", vm.count=16, devices.dedicated_to_vm=[], free=["nvme1n1"]]
  (b) Is a device free to take VM disks?
      yes: nvme1n1 -> spread-disks raises I/O (seed 000 Fig. 7: VM disks spread over 2 SSDs gave 689k/247k \
read/write IOPS, 1.57x/2.75x bare metal on 1 SSD)
      [devices.in_use={"nvme0n1":true,"nvme1n1":false}]
  (c) Does one VM run several jobs (fio)?
      no: 1 job per VM
      [vm.jobs_per_vm=1, vm.count=16]
  (d) Is the load write-heavy (reads < 50 %)?
      no: 100 % reads
      [workload.read_pct=100]
  (e) Is the device busy?
      yes: 93% of its capacity (from the evidence); at the limit from 85% -> device neck: at the limit
      [devices=["nvme0n1"], measured.read_iops=420000, measured.write_iops=0, measured.dev_busy_pct=60, \
measured.dev_queue=3.1, devices.capacity_read_iops=[450000], devices.capacity_write_iops=[75000], \
devices.capacity_source=[null], capacity_fraction=0.933]
      departs from seed 000: {DEV.change} (source: {DEV.source})
""".replace("{DEV.change}", DEVIATIONS[0].change).replace("{DEV.source}", DEVIATIONS[0].source)


def test_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(BASE))
    assert main(["diagnose", "--evidence", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"at_limit", "limit", "actions", "steps", "deviations"}
    assert (out["at_limit"], out["limit"]) == (False, "qemu-io-thread")
    assert out["actions"] == ["add-iothread"]
    assert {"question", "answer", "evidence", "deviation"} <= set(out["steps"][0])


def test_cli_text_and_explain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(BASE))
    assert main(["diagnose", "--evidence", str(path)]) == 0
    assert capsys.readouterr().out.startswith(
        "Limit: qemu-io-thread (not at the I/O limit: the actions below raise I/O)\n"
    )
    assert main(["diagnose", "--explain"]) == 0
    assert capsys.readouterr().out == explain()


def test_explain_names_every_threshold_and_deviation_with_its_source() -> None:
    text = explain()
    for needle in ("0.85", ">= 90", "dev_queue >= 32", "read_pct < 50", "QEMU >= 9.0", "seed 000 Fig. 6"):
        assert needle in text
    for dev in DEVIATIONS:
        assert f"({dev.node}) {dev.change}\n      source: {dev.source}" in text


def test_cli_without_evidence_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose"]) == 2
    assert "--evidence FILE" in capsys.readouterr().err


def test_cli_bad_evidence_file_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ev.json"
    path.write_text(json.dumps({**BASE, "measured": {**BASE["measured"], "dev_busy_pct": 180}}))
    assert main(["diagnose", "--evidence", str(path)]) == 2
    err = capsys.readouterr().err
    expected = "$.measured.dev_busy_pct = 180 is out of range; expected between 0 and 100"
    assert err == f"vmio: error: {path}: {expected}\n"
