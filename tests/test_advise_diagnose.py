"""The tuning guideline (hitachi-nvme-2016, Fig. 10): every branch, with evidence that reaches it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vmio.advise.diagnose import Diagnosis, diagnose
from vmio.advise.evidence import evidence_from_dict
from vmio.advise.text import explain, format_diagnosis
from vmio.advise.thresholds import DEVIATIONS, THREAD_SATURATED_PCT
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
    assert_cites_hold(result)
    return result


# the comparisons written out again, apart from vmio.advise.cite, so a cite that does not hold is caught
CHECK = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
         ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}  # fmt: skip


def assert_cites_hold(d: Diagnosis) -> None:
    """Every figure a step cites supports its sentence: its comparison holds, and ``holds`` says so."""
    for step in d.to_dict()["steps"]:
        for item in step["evidence"]:
            assert set(item) == {"figure", "value", "threshold", "op", "holds"}
            if item["op"] == "is":
                truth = item["value"] is None and item["threshold"] is None
            else:
                truth = CHECK[item["op"]](item["value"], item["threshold"])
            assert item["holds"] is truth is True, f"({step['node']}) cites {item} which does not hold"


def nodes(d: Diagnosis) -> list[str]:
    return [s.node for s in d.steps]


def one_vm_one_job(**measured: Any) -> dict[str, Any]:
    return {"vm": {"jobs_per_vm": 1}, "measured": measured}


# Every leaf of Fig. 10. at_limit is the paper's "I/O 性能限界": no step of the guideline would raise I/O.


def test_a_device_that_can_be_dedicated_raises_io_whatever_comes_after() -> None:
    # (a): a free device for the one VM; the walk still names the bottleneck further down
    free = {**NVME, "name": "nvme1n1", "in_use": False}
    d = run(devices=[NVME, free], vm={"iothreads": 1})
    # the iothread's CPU is not measured and QEMU's main loop is at 98 % of a core: that is the limit
    assert (d.at_limit, d.limit) == (False, "qemu-main-loop")
    assert d.actions == ("dedicate-disk", "spread-disks")
    assert d.steps[0].answer.startswith("no, but it can be: nvme1n1 is free")


def test_a_free_device_raises_io_whatever_comes_after() -> None:
    # (b): 16 VMs share nvme0n1 at its capacity; one free device is too few to dedicate but lets disks spread
    free = {**NVME, "name": "nvme1n1", "in_use": False}
    d = run(devices=[NVME, free], vm={"count": 16, "jobs_per_vm": 1}, measured={"read_iops": 440000})
    assert (d.at_limit, d.limit, d.actions) == (False, "device", ("spread-disks",))
    assert "cannot be: 1 free device(s) for 16 VMs" in d.steps[0].answer
    assert "1.57x/2.75x bare metal on 1 SSD" in d.steps[1].answer
    assert [(c.figure, c.value) for c in d.steps[1].evidence] == [
        ("devices[nvme0n1].in_use", True), ("devices[nvme1n1].in_use", False)]  # fmt: skip


def test_a_loop_device_backing_the_vm_is_not_free() -> None:
    loop = {"name": "loop0", "rotational": False, "in_use": True, "dedicated_to_vm": False}
    d = run(devices=[loop], **write_heavy(write_iops=3000, cpu_usr_pct=5, cpu_sys_pct=60))
    assert "spread-disks" not in d.actions and "dedicate-disk" not in d.actions
    assert d.steps[1].answer == "no: every device is in use"
    assert (d.at_limit, d.limit, d.actions) == (True, "host-cpu", ("none",))


def test_several_jobs_without_an_iothread_add_one() -> None:
    # (c) yes -> (f) no iothread: whatever QEMU's main loop shows, the seed's step is to add one; the
    # limit is the main loop only when its CPU says it is saturated
    for main_loop, limit in ((98, "qemu-main-loop"), (30, "unknown"), (None, "unknown")):
        d = run(measured={"qemu_main_loop_cpu_pct": main_loop})
        assert (d.at_limit, d.limit, d.actions) == (False, limit, ("add-iothread",))
        assert nodes(d) == ["a", "b", "c", "f"]


def test_several_jobs_with_a_saturated_iothread_on_qemu_7_2_are_at_the_limit() -> None:
    d = run(vm={"iothreads": 1}, measured={"qemu_iothread_cpu_pct": 97, "qemu_main_loop_cpu_pct": 10})
    assert (d.at_limit, d.limit, d.actions) == (True, "qemu-io-thread", ("none",))
    assert "needs 9.0" in d.steps[-1].answer
    assert d.steps[-1].deviation is None
    cited = {c.figure: c for c in d.steps[-1].evidence}
    assert (cited["measured.qemu_iothread_cpu_pct"].op, cited["measured.qemu_iothread_cpu_pct"].threshold) == (
        ">=", THREAD_SATURATED_PCT.value)  # fmt: skip


def test_an_idle_iothread_is_not_the_limit_when_the_vcpus_are_saturated() -> None:
    # the case of issue 26: 2 fio in one TCG VM with an iothread at 9.6 % of a core, the vCPU saturated
    d = run(host={"accel": "tcg"}, vm={"iothreads": 1, "jobs_per_vm": 2},
            measured={"qemu_iothread_cpu_pct": 9.6, "qemu_vcpu_cpu_pct": 99.5, "qemu_main_loop_cpu_pct": 6})  # fmt: skip
    # the paper's meaning of (f): an iothread in use leaves no step of the figure
    assert (d.at_limit, d.limit, d.actions) == (True, "guest-cpu", ("none",))
    assert d.lift is not None and "KVM" in d.lift
    step = d.steps[-1]
    assert "not saturated" in step.answer and "the limit is not the iothread: guest-cpu" in step.answer
    cited = {c.figure: c for c in step.evidence}
    assert (cited["measured.qemu_iothread_cpu_pct"].op, cited["measured.qemu_vcpu_cpu_pct"].op) == ("<", ">=")
    kvm = run(host={"accel": "kvm"}, vm={"iothreads": 1, "jobs_per_vm": 2},
              measured={"qemu_iothread_cpu_pct": 9.6, "qemu_vcpu_cpu_pct": 99.5})  # fmt: skip
    assert kvm.limit == "guest-cpu" and kvm.lift is not None and "more vCPUs" in kvm.lift


def test_an_idle_iothread_with_nothing_saturated_names_no_limit() -> None:
    d = run(vm={"iothreads": 1}, measured={"qemu_iothread_cpu_pct": 9.6, "qemu_main_loop_cpu_pct": 5})
    assert (d.at_limit, d.limit) == (True, "unknown")


def test_several_jobs_with_an_iothread_on_qemu_9_map_queues_over_iothreads() -> None:
    host = {"qemu_version": "9.0.2"}
    d = run(
        host=host, vm={"iothreads": 1}, measured={"qemu_iothread_cpu_pct": 97, "qemu_main_loop_cpu_pct": 9}
    )
    assert (d.at_limit, d.limit, d.actions) == (False, "qemu-io-thread", ("iothread-vq-mapping",))
    assert d.steps[-1].deviation is not None and "QEMU 9.0" in d.steps[-1].deviation.source
    mapped = run(host=host, vm={"iothreads": 4, "vq_mapping": True})
    assert (mapped.at_limit, mapped.actions) == (True, ("none",))
    no_thread = run(host=host)
    assert no_thread.actions == ("add-iothread", "iothread-vq-mapping")


def test_vq_mapping_is_only_advised_for_virtio_blk() -> None:
    scsi = run(host={"qemu_version": "9.1.0"}, vm={"bus": "virtio-scsi", "iothreads": 1},
               measured={"qemu_iothread_cpu_pct": 95})  # fmt: skip
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
    fraction = next(c for c in device.evidence if c.figure == "capacity_fraction")
    assert fraction.value == pytest.approx(92000 / 450000, abs=1e-3) and fraction.op == "<"
    assert device.deviation is not None and "%util" in device.deviation.source


def test_read_heavy_device_at_capacity_is_at_the_limit() -> None:
    # (e) busy = at its calibrated capacity, whatever %util says
    d = run(**one_vm_one_job(read_iops=400000, dev_busy_pct=40, dev_queue=64))
    assert (d.at_limit, d.limit, d.actions) == (True, "device", ("none",))


def test_bare_host_evidence_skips_the_vm_questions() -> None:
    d = run(vm=None, measured={"read_iops": 430000, "dev_busy_pct": 100, "dev_queue": 120})
    assert nodes(d) == ["a", "b", "d", "e"]
    assert (d.at_limit, d.limit, d.actions) == (True, "device", ("none",))


def test_without_capacity_the_device_is_never_at_its_limit() -> None:
    # issue 26: a capacity never comes from the point judged; unknown, whatever %util and the queue say
    hdd = {"name": "sda", "rotational": True, "in_use": True}
    nvme = {"name": "nvme0n1", "rotational": False, "in_use": True}
    for device, busy, queue in ((hdd, 97, 1.5), (nvme, 100, 3.1), (nvme, 100, 64), (nvme, 100, None)):
        d = run(devices=[device], **one_vm_one_job(read_iops=180, dev_busy_pct=busy, dev_queue=queue))
        assert (d.at_limit, d.limit, d.actions) == (False, "unknown", ("scale-out-vms",))
        step = d.steps[-1]
        assert step.answer.startswith("unknown: the device's capacity is unknown")
        assert f"vmio calibrate /dev/{device['name']}" in step.answer and "at the limit" not in step.answer
        assert d.lift == f"measure the device's capacity: vmio calibrate /dev/{device['name']}"


# (d) -> (g): write-heavy


def write_heavy(**measured: Any) -> dict[str, Any]:
    return {"vm": {"jobs_per_vm": 1}, "workload": {"read_pct": 0}, "measured": {"read_iops": 0, **measured}}


def test_write_heavy_usr_far_above_sys_on_an_idle_device_scales_out() -> None:
    d = run(**write_heavy(write_iops=3000, dev_busy_pct=100, cpu_usr_pct=60, cpu_sys_pct=8))
    assert (d.at_limit, d.limit, d.actions) == (False, "guest-cpu", ("scale-out-vms",))
    assert nodes(d) == ["a", "b", "c", "d", "g"]
    assert d.steps[-1].answer.startswith("host-wide %usr 60 > %sys 8 -> more VMs raise I/O")


def test_write_heavy_sys_far_above_usr_is_at_the_limit() -> None:
    d = run(**write_heavy(write_iops=3000, cpu_usr_pct=5, cpu_sys_pct=60))
    assert (d.at_limit, d.limit, d.actions) == (True, "host-cpu", ("none",))
    # at or above: equal shares are the limit too, once %sys is high (KERNEL_CPU_HIGH, 50 %)
    equal = run(**write_heavy(write_iops=3000, cpu_usr_pct=50, cpu_sys_pct=50))
    assert (equal.at_limit, equal.limit) == (True, "host-cpu")
    # issue 38: %sys >= %usr on idle CPUs is no limit ("if %sys is HIGH"): the walk judges the device
    idle = run(**write_heavy(write_iops=3000, cpu_usr_pct=4, cpu_sys_pct=4))
    assert idle.limit != "host-cpu" and idle.steps[-1].node == "e"
    assert "but %sys is not high (below 50 %)" in idle.steps[-2].answer


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
    assert ("measured.write_iops", 74000) in [(c.figure, c.value) for c in mix.evidence]


# output


def test_human_text_of_one_diagnosis() -> None:
    free = {**NVME, "name": "nvme1n1", "in_use": False, "capacity_read_iops": None}
    d = run(devices=[NVME, free], vm={"count": 16, "jobs_per_vm": 1}, measured={"read_iops": 420000})
    assert format_diagnosis(d) == EXPECTED_TEXT


EXPECTED_TEXT = """\
Limit: device (not at the I/O limit: the actions below raise I/O)
Lifted by: spread the disks over more devices (Fig. 7), or a faster device
Actions, most promising first: spread-disks
Path through Fig. 10 (hitachi-nvme-2016's tuning guideline):
  (a) Is a device dedicated to the VM, and if not, can one be?
      no, and it cannot be: 1 free device(s) for 16 VMs
      [vm.bus="virtio-blk", vm.count=16, devices.dedicated_to_vm=[], devices.free=["nvme1n1"]]
  (b) Is a device free to take VM disks?
      yes: nvme1n1 -> spread-disks raises I/O (hitachi-nvme-2016 Fig. 7: VM disks spread over 2 SSDs gave 689k/247k \
read/write IOPS, 1.57x/2.75x bare metal on 1 SSD)
      [devices[nvme0n1].in_use=true, devices[nvme1n1].in_use=false]
  (c) Does one VM run several jobs (fio)?
      no: 1 job per VM
      [vm.jobs_per_vm=1 <= 1]
  (d) Is the load write-heavy (reads < 50 %)?
      no: 100 % reads
      [workload.read_pct=100, read_pct=100 >= 50]
  (e) Is the device busy?
      yes: 93% of its capacity (from the evidence); at the limit from 85% -> device neck: at the limit
      [measured.read_iops=420000, measured.write_iops=0, devices[nvme0n1].capacity_read_iops=450000, \
devices[nvme0n1].capacity_write_iops=75000, devices[nvme0n1].capacity_source=null, capacity_fraction=0.933 >= 0.85]
      departs from hitachi-nvme-2016: {DEV.change} (source: {DEV.source})
""".replace("{DEV.change}", DEVIATIONS[0].change).replace("{DEV.source}", DEVIATIONS[0].source)


def test_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(BASE))
    assert main(["diagnose", "--evidence", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"at_limit", "limit", "lift", "actions", "accel", "tcg_affects", "warnings", "steps",
                        "deviations"}  # fmt: skip
    assert (out["at_limit"], out["limit"]) == (False, "qemu-main-loop")
    assert out["actions"] == ["add-iothread"]
    assert {"question", "answer", "evidence", "deviation"} <= set(out["steps"][0])


def test_cli_text_and_explain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(BASE))
    assert main(["diagnose", "--evidence", str(path)]) == 0
    assert capsys.readouterr().out.startswith(
        "Limit: qemu-main-loop (not at the I/O limit: the actions below raise I/O)\n"
    )
    assert main(["diagnose", "--explain"]) == 0
    assert capsys.readouterr().out == explain()


def test_explain_names_every_threshold_and_deviation_with_its_source() -> None:
    text = explain()
    for needle in ("0.85", "from 80 % of one core", "read_pct < 50", "QEMU >= 9.0", "vmio calibrate"):
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


def test_host_cpu_polluted_by_other_work_is_judged_by_fios_own_cpu_and_warned() -> None:
    # issue 26: a shared host's %usr came from other work (78 % of 2 cores) while fio spent its time in the
    # kernel; (g) reads fio's own usr/sys, and the verdict warns that host-wide figures are unreliable
    polluted = {"read_iops": 0, "write_iops": 3000, "cpu_usr_pct": 78, "cpu_sys_pct": 6,
                "fio_usr_pct": 2, "fio_sys_pct": 62, "own_cpu_pct": 64}  # fmt: skip
    d = run(vm=None, host={"cpus": 2, "load_avg_1m": 3.5}, workload={"read_pct": 0}, measured=polluted)
    assert (d.at_limit, d.limit, d.actions) == (True, "host-cpu", ("none",))
    step = d.steps[-1]
    assert step.node == "g" and step.answer.startswith("fio's own %sys 62 >= %usr 2 and high")
    assert {c.figure for c in step.evidence} >= {"measured.fio_usr_pct", "measured.fio_sys_pct"}
    assert "measured.cpu_usr_pct" not in {c.figure for c in step.evidence}
    # (78 + 6) % of 2 cores = 1.68 cores busy, 0.64 of them fio's: 1.04 cores of other work
    (other, load) = d.warnings
    assert "1.68 of 2 cores" in other and "used 0.64" in other and "unreliable" in other
    # issue 38's bare randwrite: fio's own 1.5 % usr, 9.6 % sys is not the kernel path at its limit
    low = run(vm=None, host={"cpus": 2}, workload={"read_pct": 0},
              measured={**polluted, "fio_usr_pct": 1.5, "fio_sys_pct": 9.6, "own_cpu_pct": 11.1})  # fmt: skip
    assert low.limit != "host-cpu" and low.steps[-1].node == "e"
    assert "load average 3.5" in load
    # without fio's own figures the host-wide ones decide, and the warning stays
    hostwide = run(vm=None, host={"cpus": 2}, workload={"read_pct": 0},
                   measured={**polluted, "fio_usr_pct": None, "fio_sys_pct": None})  # fmt: skip
    assert (hostwide.at_limit, hostwide.limit) == (False, "app-cpu")
    assert hostwide.steps[-1].answer.startswith("host-wide %usr 78 > %sys 6")
    assert len(hostwide.warnings) == 1
    # a quiet host: no warning
    quiet = run(vm=None, host={"cpus": 2, "load_avg_1m": 0.3}, workload={"read_pct": 0},
                measured={**polluted, "cpu_usr_pct": 1, "cpu_sys_pct": 6})  # fmt: skip
    assert quiet.warnings == ()


# the cases of issue 26 as evidence files through the CLI: at_limit, limit, and every cited figure holds
FILE_CASES = {
    "idle-iothread-saturated-vcpus": (
        {"host": {"accel": "tcg"}, "vm": {"iothreads": 1, "jobs_per_vm": 2},
         "measured": {"qemu_iothread_cpu_pct": 9.6, "qemu_vcpu_cpu_pct": 99.0, "qemu_main_loop_cpu_pct": 7}},
        True, "guest-cpu",
    ),
    "saturated-iothread": (
        {"vm": {"iothreads": 1, "jobs_per_vm": 2},
         "measured": {"qemu_iothread_cpu_pct": 98.0, "qemu_vcpu_cpu_pct": 30.0, "qemu_main_loop_cpu_pct": 7}},
        True, "qemu-io-thread",
    ),
    "host-cpu-polluted": (
        {"vm": None, "host": {"cpus": 2}, "workload": {"read_pct": 0},
         "measured": {"read_iops": 0, "write_iops": 3000, "cpu_usr_pct": 80, "cpu_sys_pct": 5,
                      "fio_usr_pct": 2, "fio_sys_pct": 61, "own_cpu_pct": 63}},
        True, "host-cpu",
    ),
}  # fmt: skip


def test_a_declared_capacity_applies_to_an_evidence_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = copy.deepcopy(BASE)
    raw.update(vm={"count": 1, "jobs_per_vm": 1}, devices=[{"name": "nvme0n1", "in_use": True}])
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(raw))
    assert main(["diagnose", "--evidence", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["limit"] == "unknown"
    # 92000 read IOPS of a declared 100000: 92 % of the capacity, at the limit from 85 %
    assert main(["diagnose", "--evidence", str(path), "--json", "--capacity-read-iops", "100000"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["at_limit"], out["limit"]) == (True, "device")


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_issue_cases_from_evidence_files(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changes, at_limit, limit = FILE_CASES[case]
    raw = copy.deepcopy(BASE)
    for key, value in changes.items():
        raw[key] = (
            {**raw[key], **value} if isinstance(value, dict) and isinstance(raw.get(key), dict) else value
        )
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(raw))
    assert main(["diagnose", "--evidence", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["at_limit"], out["limit"]) == (at_limit, limit)
    for step in out["steps"]:
        for item in step["evidence"]:
            truth = (
                item["value"] is None and item["threshold"] is None
                if item["op"] == "is"
                else CHECK[item["op"]](item["value"], item["threshold"])
            )
            assert item["holds"] is truth is True, (case, step["node"], item)
    if case == "idle-iothread-saturated-vcpus":
        assert out["accel"] == "tcg" and "measured.qemu_vcpu_cpu_pct" in out["tcg_affects"]
        assert "KVM" in out["lift"]
    if case == "host-cpu-polluted":
        assert any("other work on the host" in w for w in out["warnings"])


def test_a_vm_whose_guest_was_traced_names_the_layer_that_holds_its_latency() -> None:
    """With the guest's block layer traced, fio's mean is split three ways: in the guest above its block
    layer, on the virtualization path (guest block layer to host block layer), in the host's block layer and
    the device; the shares are worked out here by hand from the means."""
    # the TCG figures of docs/layers.md: 11227/17321 in the guest, 5852/17321 on the path, 242/17321 below
    tcg = run(measured={"layer_app_read_us": 17321.0, "layer_guest_block_read_us": 6094.0,
                        "layer_host_block_read_us": 242.0})  # fmt: skip
    [step] = [s for s in tcg.steps if s.node == "layers-guest"]
    assert step.answer == (
        "of the VM's read latency, 65% is spent in the guest above its block layer (fio and the guest's "
        "kernel); 34% on the virtualization path, 1% in the host's block layer and the device"
    )
    assert [c.value for c in step.evidence[:3]] == [17321.0, 6094.0, 242.0]
    # 1000 us at fio, 900 at the guest's block layer, 100 at the host's: the path holds 80 %
    path = run(measured={"layer_app_write_us": 1000.0, "layer_guest_block_write_us": 900.0,
                         "layer_host_block_write_us": 100.0})  # fmt: skip
    [step] = [s for s in path.steps if s.node == "layers-guest"]
    assert step.answer.startswith("of the VM's write latency, 80% is spent between the guest's block layer")
    assert step.answer.endswith("; 10% in the guest, 10% in the host's block layer and the device")
    # a bare point (no VM) has no guest to split
    bare = run(vm=None, measured={"layer_app_read_us": 100.0, "layer_guest_block_read_us": 90.0,
                                  "layer_host_block_read_us": 50.0})  # fmt: skip
    assert "layers-guest" not in nodes(bare)


def test_a_guest_whose_clock_is_coarse_is_warned_of() -> None:
    """A traced guest whose trace clock stepped by the kernel's tick (docs/layers.md, "The guest's clock"):
    diagnose warns that its percentiles are multiples of the step; a fine clock (None) adds nothing."""
    coarse = run(measured={"layer_app_read_us": 6599.0, "guest_clock_step_us": 4000.0})
    assert coarse.warnings[-1] == (
        "the guest's clock is coarse (4000 µs steps: its kernel's tick, no usable TSC): the guest's latency "
        "percentiles are multiples of a step and read 0 below one; the means are not biased"
    )
    fine = run(measured={"layer_app_read_us": 6599.0})
    assert not any("coarse" in w for w in fine.warnings)
