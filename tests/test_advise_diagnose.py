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


# (c) -> (f): several jobs in one VM


def test_main_loop_saturated_without_iothread_is_a_qemu_io_thread_limit() -> None:
    d = run()
    assert (d.at_limit, d.limit) == (True, "qemu-io-thread")
    assert d.actions == ("add-iothread", "dedicate-disk")
    assert nodes(d) == ["a", "b", "c", "f"]
    assert d.steps[-1].evidence["measured.qemu_main_loop_cpu_pct"] == 98


def test_main_loop_not_measured_follows_the_seed() -> None:
    d = run(measured={"qemu_main_loop_cpu_pct": None})
    assert d.limit == "qemu-io-thread"
    assert "not measured" in d.steps[-1].answer


def test_idle_main_loop_is_not_the_limit_and_the_walk_goes_on() -> None:
    d = run(measured={"qemu_main_loop_cpu_pct": 30})
    assert nodes(d) == ["a", "b", "c", "f", "d", "e", "cpu"]
    assert (d.limit, d.actions) == ("none", ("scale-out-vms",))


def test_qemu_7_2_never_advises_iothread_vq_mapping() -> None:
    no_thread = run()
    busy_thread = run(vm={"iothreads": 1}, measured={"qemu_iothread_cpu_pct": 99})
    for d in (no_thread, busy_thread):
        assert d.limit == "qemu-io-thread"
        assert "iothread-vq-mapping" not in d.actions
    assert "needs 9.0" in busy_thread.steps[-1].answer


def test_qemu_9_advises_iothread_vq_mapping() -> None:
    host = {"qemu_version": "9.0.2"}
    no_thread = run(host=host)
    assert no_thread.actions == ("add-iothread", "iothread-vq-mapping", "dedicate-disk")
    busy = run(host=host, vm={"iothreads": 1}, measured={"qemu_iothread_cpu_pct": 97})
    assert busy.limit == "qemu-io-thread"
    assert busy.actions[0] == "iothread-vq-mapping"
    mapped = run(host=host, vm={"iothreads": 4, "vq_mapping": True}, measured={"qemu_iothread_cpu_pct": 97})
    assert "iothread-vq-mapping" not in mapped.actions


def test_iothread_with_room_is_not_the_limit() -> None:
    d = run(vm={"iothreads": 1}, measured={"qemu_iothread_cpu_pct": 40, "qemu_main_loop_cpu_pct": 5})
    assert d.limit == "none"
    assert "not the limit" in d.steps[3].answer


# (a) and (b): dedication and free devices


def test_bare_host_evidence_skips_the_vm_questions() -> None:
    d = run(vm=None, measured={"read_iops": 430000, "dev_busy_pct": 100, "dev_queue": 120})
    assert nodes(d) == ["a", "b", "d", "e"]
    assert (d.limit, d.actions) == ("device", ("none",))


def test_a_vm_with_its_own_device_is_not_offered_dedication() -> None:
    d = run(vm={"bus": "vfio"})
    assert d.steps[0].answer.startswith("yes")
    assert "dedicate-disk" not in d.actions


def test_many_vms_on_one_device_cannot_dedicate_it() -> None:
    d = run(vm={"count": 16, "jobs_per_vm": 1})
    assert "cannot" in d.steps[0].answer
    assert "dedicate-disk" not in d.actions


def test_a_free_second_device_leads_to_spread_disks() -> None:
    free = {**NVME, "name": "nvme1n1", "in_use": False}
    d = run(devices=[NVME, free], **one_vm_one_job(read_iops=440000, dev_busy_pct=100, dev_queue=128))
    assert (d.limit, d.actions) == ("device", ("spread-disks",))
    assert "nvme1n1" in d.steps[1].answer
    assert d.steps[1].evidence == {"devices.in_use": {"nvme0n1": True, "nvme1n1": False}}


def test_unknown_in_use_is_not_free() -> None:
    d = run(devices=[{**NVME, "in_use": None}])
    assert d.steps[1].answer.startswith("unknown")


# (d) -> (e): read-heavy


def test_nvme_at_100_percent_busy_far_below_capacity_is_not_device_limited() -> None:
    d = run(**one_vm_one_job(dev_busy_pct=100, dev_queue=3.1, read_iops=92000))
    assert d.limit == "none"
    device = d.steps[-2]
    assert device.node == "e" and device.answer.startswith("no: 20% of measured capacity")
    assert "100 % busy does not mean saturated" in device.answer
    assert device.evidence["capacity_fraction"] == pytest.approx(92000 / 450000, abs=1e-3)


def test_read_heavy_at_capacity_is_device_limited() -> None:
    d = run(**one_vm_one_job(read_iops=400000, dev_busy_pct=100, dev_queue=64))
    assert (d.at_limit, d.limit, d.actions) == (True, "device", ("none",))


def test_without_capacity_a_rotational_disk_is_judged_by_busy() -> None:
    hdd = {"name": "sda", "rotational": True, "in_use": True}
    d = run(devices=[hdd], **one_vm_one_job(read_iops=180, dev_busy_pct=97, dev_queue=1.5))
    assert d.limit == "device"
    assert "rotational" in d.steps[-1].answer


def test_without_capacity_an_nvme_needs_a_deep_queue_to_be_saturated() -> None:
    nvme = {"name": "nvme0n1", "rotational": False, "in_use": True}
    shallow = run(devices=[nvme], **one_vm_one_job(dev_busy_pct=100, dev_queue=3.1))
    deep = run(devices=[nvme], **one_vm_one_job(dev_busy_pct=100, dev_queue=64))
    seed_rule = run(devices=[nvme], **one_vm_one_job(dev_busy_pct=100, dev_queue=None))
    assert (shallow.limit, deep.limit, seed_rule.limit) == ("none", "device", "device")
    assert "seed 000's rule" in seed_rule.steps[-1].answer


def test_read_heavy_with_a_busy_host_cpu_is_host_cpu_limited() -> None:
    d = run(**one_vm_one_job(cpu_usr_pct=30, cpu_sys_pct=65))
    assert (d.limit, d.actions) == ("host-cpu", ("dedicate-disk",))


def test_read_heavy_with_a_saturated_vcpu_is_guest_cpu_limited() -> None:
    d = run(**one_vm_one_job(qemu_vcpu_cpu_pct=99))
    assert (d.limit, d.actions) == ("guest-cpu", ("scale-out-vms",))


# (d) -> (g): write-heavy


def write_heavy(**measured: Any) -> dict[str, Any]:
    return {"vm": {"jobs_per_vm": 1}, "workload": {"read_pct": 0}, "measured": {"read_iops": 0, **measured}}


def test_write_heavy_with_sys_above_usr_at_the_device_limit_is_at_its_limit() -> None:
    d = run(**write_heavy(write_iops=74000, dev_busy_pct=100, cpu_usr_pct=10, cpu_sys_pct=35))
    assert (d.at_limit, d.limit) == (True, "device")
    assert nodes(d)[-2:] == ["g", "g"]
    assert d.steps[-2].answer == "yes: %sys 35 vs %usr 10"


def test_write_heavy_with_sys_above_usr_and_a_busy_cpu_is_host_cpu_limited() -> None:
    d = run(**write_heavy(write_iops=30000, cpu_usr_pct=30, cpu_sys_pct=62))
    assert d.limit == "host-cpu"


def test_write_heavy_with_usr_leading_scales_out_vms() -> None:
    d = run(**write_heavy(write_iops=30000, cpu_usr_pct=40, cpu_sys_pct=20, qemu_vcpu_cpu_pct=None))
    assert (d.limit, d.actions) == ("guest-cpu", ("scale-out-vms",))
    assert "seed 000 Fig. 10(g)" in d.steps[-1].answer


def test_write_heavy_with_idle_cpus_is_not_at_a_limit() -> None:
    d = run(**write_heavy(write_iops=30000, cpu_usr_pct=4, cpu_sys_pct=6))
    assert (d.at_limit, d.actions) == (False, ("scale-out-vms",))


def test_write_heavy_with_unknown_cpu_judges_the_device() -> None:
    d = run(**write_heavy(write_iops=74000, cpu_usr_pct=None, cpu_sys_pct=None))
    assert d.limit == "device"
    assert d.steps[4].answer.startswith("unknown")


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
Limit: device (at the limit)
Actions, most promising first: spread-disks
Path through Fig. 10 (seed 000's tuning guideline):
  (a) Is a device dedicated to the VM?
      no, but it can be: nvme1n1 is free; passed through it ran at 1.0x bare
      [vm.bus="virtio-blk", vm.count=16, devices.dedicated_to_vm=[]]
  (b) Is a device free to take VM disks?
      yes: nvme1n1; spreading VM disks over two SSDs gave 1.57x read, 2.75x write
      [devices.in_use={"nvme0n1":true,"nvme1n1":false}]
  (c) Does one VM run several jobs?
      no: 1 job per VM
      [vm.jobs_per_vm=1, vm.count=16]
  (d) Is the load write-heavy (reads < 50 %)?
      no: 100 % reads
      [workload.read_pct=100]
  (e) Is the device saturated?
      yes: 93% of measured capacity (saturated from 85%)
      [devices=["nvme0n1"], measured.read_iops=420000, measured.write_iops=0, measured.dev_busy_pct=60, \
measured.dev_queue=3.1, measured.dev_await_ms=0.2, devices.capacity_read_iops=[450000], \
devices.capacity_write_iops=[75000], capacity_fraction=0.933]
"""


def test_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(BASE))
    assert main(["diagnose", "--evidence", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"at_limit", "limit", "actions", "steps"}
    assert (out["at_limit"], out["limit"]) == (True, "qemu-io-thread")
    assert out["actions"] == ["add-iothread", "dedicate-disk"]
    assert {"question", "answer", "evidence"} <= set(out["steps"][0])


def test_cli_text_and_explain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(BASE))
    assert main(["diagnose", "--evidence", str(path)]) == 0
    assert capsys.readouterr().out.startswith("Limit: qemu-io-thread (at the limit)\n")
    assert main(["diagnose", "--explain"]) == 0
    assert capsys.readouterr().out == explain()


def test_explain_names_every_threshold_and_its_source() -> None:
    text = explain()
    for needle in ("0.85", ">= 90", "dev_queue >= 32", "read_pct < 50", "QEMU >= 9.0", "seed 000 Fig. 6"):
        assert needle in text


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


def test_vq_mapping_is_only_advised_for_virtio_blk() -> None:
    scsi = run(host={"qemu_version": "9.1.0"}, vm={"bus": "virtio-scsi", "iothreads": 1})
    assert scsi.limit == "qemu-io-thread" and "iothread-vq-mapping" not in scsi.actions
    assert "a virtio-blk property, not virtio-scsi's" in scsi.steps[-1].answer


def test_vfio_keeps_qemu_out_of_the_io_path() -> None:
    d = run(vm={"bus": "vfio"}, measured={"qemu_main_loop_cpu_pct": 100})
    assert d.steps[3].answer.startswith("not asked: with vfio")
    assert d.limit != "qemu-io-thread"
