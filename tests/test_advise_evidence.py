"""The evidence file: what it accepts, what it refuses (naming the JSON path and the value), round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmio.advise.diagnose import diagnose
from vmio.advise.evidence import BUSES, Evidence, evidence_from_dict, load_evidence, parse_version
from vmio.errors import InputError

ISSUE_EXAMPLE = """{"host": {"cpus": 16, "qemu_version": "7.2.0"},
  "devices": [{"name": "nvme0n1", "rotational": false, "in_use": true, "dedicated_to_vm": false,
               "capacity_read_iops": 450000, "capacity_write_iops": 75000}],
  "vm": {"count": 1, "jobs_per_vm": 16, "bus": "virtio-blk", "iothreads": 0},
  "workload": {"read_pct": 100, "bs": 4096, "iodepth": 32},
  "measured": {"read_iops": 92000, "write_iops": 0, "dev_busy_pct": 60, "dev_queue": 3.1,
               "dev_await_ms": 0.2, "cpu_usr_pct": 20, "cpu_sys_pct": 15, "cpu_iowait_pct": 5,
               "qemu_iothread_cpu_pct": null, "qemu_main_loop_cpu_pct": 98, "qemu_vcpu_cpu_pct": 40}}"""


def test_the_issue_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "ev.json"
    path.write_text(ISSUE_EXAMPLE)
    ev = load_evidence(path)
    assert ev.host.qemu() == (7, 2, 0)
    assert ev.devices[0].capacity_read_iops == 450000
    assert ev.vm is not None and ev.vm.jobs_per_vm == 16 and ev.vm.vq_mapping is None
    assert ev.measured.qemu_iothread_cpu_pct is None
    assert ev.measured.dev_queue == 3.1


def test_bare_host_evidence_has_no_vm_and_missing_keys_are_unknown() -> None:
    ev = evidence_from_dict({"measured": {"read_iops": 5}})
    assert ev.vm is None and ev.devices == () and ev.host.cpus is None
    assert ev.measured.write_iops is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "$ = [] is not an object"),
        ({}, "$.measured is missing"),
        ({"measured": {}, "hots": {}}, "$.hots is not a known key; accepted: host, devices"),
        ({"measured": {"read_iops": -1}}, "$.measured.read_iops = -1 is out of range; expected at least 0"),
        ({"measured": {"read_iops": "fast"}}, "$.measured.read_iops = 'fast' is not a number"),
        ({"measured": {"read_iops": True}}, "$.measured.read_iops = True is not a number"),
        ({"measured": {"read_iops": float("nan")}}, "$.measured.read_iops = nan is not a finite number"),
        (
            {"measured": {"cpu_usr_pct": 101}},
            "$.measured.cpu_usr_pct = 101 is out of range; expected between",
        ),
        ({"measured": {}, "vm": {"count": 0}}, "$.vm.count = 0 is out of range; expected at least 1"),
        ({"measured": {}, "vm": {"iothreads": 1.5}}, "$.vm.iothreads = 1.5 is not a whole number"),
        ({"measured": {}, "vm": {"bus": "ide"}}, "$.vm.bus = 'ide' is not a bus; expected one of virtio-blk"),
        (
            {"measured": {}, "host": {"qemu_version": "latest"}},
            "$.host.qemu_version = 'latest' is not a QEMU",
        ),
        ({"measured": {}, "devices": {}}, "$.devices = {} is not a list"),
        ({"measured": {}, "devices": [{"rotational": False}]}, "$.devices[0].name is missing"),
        (
            {"measured": {}, "devices": [{"name": "a", "in_use": 1}]},
            "$.devices[0].in_use = 1 is not true, false",
        ),
        (
            {"measured": {}, "devices": [{"name": "a", "capacity_read_iops": 0}]},
            "capacity_read_iops = 0 is out",
        ),
        ({"measured": [1]}, "$.measured = [1] is not an object"),
    ],
)
def test_bad_values_name_the_path_and_the_value(raw: Any, message: str) -> None:
    with pytest.raises(InputError) as info:
        evidence_from_dict(raw)
    assert message in str(info.value)


def test_bad_json_names_the_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "ev.json"
    path.write_text('{"measured":\n  {"read_iops": 1,}}')
    with pytest.raises(InputError, match=rf"^{path}:2:19: not valid JSON"):
        load_evidence(path)


def test_a_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read evidence file"):
        load_evidence(tmp_path / "absent.json")


def test_parse_version() -> None:
    assert parse_version("7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)") == (7, 2, 22)
    assert parse_version("9.0") == (9, 0, 0)
    with pytest.raises(InputError, match="'v9' is not a QEMU version"):
        parse_version("v9")


maybe_pct = st.none() | st.floats(0, 100, allow_nan=False)
maybe_rate = st.none() | st.floats(0, 1e7, allow_nan=False)
maybe_bool = st.none() | st.booleans()
device = st.fixed_dictionaries(
    {
        "name": st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8),
        "rotational": maybe_bool,
        "in_use": maybe_bool,
        "dedicated_to_vm": maybe_bool,
        "capacity_read_iops": st.none() | st.floats(1, 1e7),
        "capacity_write_iops": st.none() | st.floats(1, 1e7),
        "capacity_source": st.none() | st.sampled_from(["vmio calibrate", "campaign bare points"]),
    }
)
vm = st.none() | st.fixed_dictionaries(
    {
        "count": st.none() | st.integers(1, 64),
        "jobs_per_vm": st.none() | st.integers(1, 64),
        "bus": st.none() | st.sampled_from(BUSES),
        "iothreads": st.none() | st.integers(0, 8),
        "vq_mapping": maybe_bool,
    }
)
measured_keys = (
    "read_iops",
    "write_iops",
    "dev_queue",
    "dev_await_ms",
    "fio_usr_pct",
    "fio_sys_pct",
    "own_cpu_pct",
    "layer_app_read_us",
    "layer_host_block_read_us",
    "layer_app_write_us",
    "layer_host_block_write_us",
    "layer_guest_block_read_us",
    "layer_guest_block_write_us",
    "guest_clock_step_us",
)
pct_keys = (
    "dev_busy_pct",
    "cpu_usr_pct",
    "cpu_sys_pct",
    "cpu_iowait_pct",
    "qemu_iothread_cpu_pct",
    "qemu_main_loop_cpu_pct",
    "qemu_vcpu_cpu_pct",
)
evidence = st.fixed_dictionaries(
    {
        "host": st.fixed_dictionaries(
            {
                "cpus": st.none() | st.integers(1, 512),
                "qemu_version": st.none() | st.sampled_from(["7.2.0", "8.2.1", "9.0.0", "10.1.2"]),
                "accel": st.none() | st.sampled_from(["kvm", "tcg"]),
                "load_avg_1m": maybe_rate,
            }
        ),
        "devices": st.lists(device, max_size=3),
        "vm": vm,
        "workload": st.fixed_dictionaries(
            {
                "read_pct": maybe_pct,
                "bs": st.none() | st.integers(512, 1 << 20),
                "iodepth": st.none() | st.integers(1, 256),
            }
        ),
        "measured": st.fixed_dictionaries(
            {**{k: maybe_rate for k in measured_keys}, **{k: maybe_pct for k in pct_keys}}
        ),
    }
)


@given(evidence)
def test_round_trip_through_json(raw: dict[str, Any]) -> None:
    ev = evidence_from_dict(raw)
    again = evidence_from_dict(json.loads(json.dumps(ev.to_dict())))
    assert again == ev
    assert isinstance(again, Evidence)
    assert ev.to_dict() == raw


@given(evidence)
def test_every_valid_evidence_gets_a_verdict_citing_numbers(raw: dict[str, Any]) -> None:
    d = diagnose(evidence_from_dict(raw))
    assert d.actions and d.steps
    # the paper's "I/O 性能限界": at the limit exactly when no step of the guideline is left
    assert d.at_limit == (d.actions == ("none",))
    assert all(step.evidence for step in d.steps)
    json.dumps(d.to_dict())
