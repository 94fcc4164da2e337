import contextlib
import os
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.errors import SpecError
from vmio.spec import HostTarget, QemuTarget, RemoteTarget, loads_spec

GOOD = """\
[campaign]
name = "bare-vs-vm"
repetitions = 2

[[target]]
name = "bare"
kind = "host"
path = "/var/tmp/vmio/disk.img"
size = "4G"

[[target]]
name = "vblk-io"
kind = "qemu"
backing = ["/var/tmp/vmio/disk.img"]
bus = "virtio-blk"
iothreads = 1
queues = 2
cache = "none"
aio = "native"
vms = 1
jobs_per_vm = 4
vcpus = 2
memory = "1G"
accel = "auto"

[[workload]]
name = "4k-randread"
rw = "randread"
bs = ["4k", "16k"]
iodepth = 32
runtime = "10s"
ramp = "2s"
offered_iops = [1000, "max"]
load_processes = [0, 2]
"""


def test_good_spec_expands_to_the_product() -> None:
    camp = loads_spec(GOOD)
    assert camp.name == "bare-vs-vm"
    assert camp.targets[0] == HostTarget("bare", "/var/tmp/vmio/disk.img", 4 << 30)
    vm = camp.targets[1]
    assert isinstance(vm, QemuTarget)
    assert (vm.iothreads, vm.queues, vm.jobs_per_vm, vm.vcpus, vm.memory) == (1, 2, 4, 2, 1 << 30)
    w = camp.workloads[0]
    assert w.bs == (4096, 16384) and w.offered_iops == (1000, None) and w.ramp == 2.0
    points = camp.points()
    assert len(points) == 2 * 2 * 2 * 2 * 2  # reps × targets × bs × offered × loads
    assert len({p.key for p in points}) == len(points)
    assert points[1].key == "bare/4k-randread/bs=4k/offered=1000/load=2/rep=1"


def test_remote_target() -> None:
    text = GOOD.replace('kind = "host"', 'kind = "remote"\nhosts = ["127.0.0.1:8765", "h2:8766"]').replace(
        'path = "/var/tmp/vmio/disk.img"\nsize = "4G"', 'paths = ["/dev/sdb", "/dev/sdc"]'
    )
    target = loads_spec(text).targets[0]
    assert isinstance(target, RemoteTarget)
    assert target.hosts == ("127.0.0.1:8765", "h2:8766") and target.paths == ("/dev/sdb", "/dev/sdc")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('bs = ["4k", "16k"]', 'bs = "3000"', r"spec.toml:29: workload\[0\].bs = '3000': .*multiple of 512"),
        (
            'rw = "randread"',
            'rw = "random"',
            r"spec.toml:28: workload\[0\].rw = 'random': use one of read, write",
        ),
        ("iodepth = 32", "iodepth = 0", r"spec.toml:30: workload\[0\].iodepth = 0: must be at least 1"),
        ('runtime = "10s"', 'runtime = "ten"', r"spec.toml:31: workload\[0\].runtime = 'ten': .*duration"),
        ('offered_iops = [1000, "max"]', "offered_iops = [-5]", r"spec.toml:33: .*offered_iops.*positive"),
        (
            'bus = "virtio-blk"',
            'bus = "ide"',
            r"spec.toml:15: target\[1\].bus = 'ide': use one of virtio-blk",
        ),
        ('memory = "1G"', 'memory = "1M"', r"spec.toml:23: target\[1\].memory = '1M': .*at least '128M'"),
        ("iodepth = 32", "iodpeth = 32", r"spec.toml:30: workload\[0\]: unknown key 'iodpeth'"),
        ('name = "bare-vs-vm"', "", r"spec.toml:1: campaign.name is required"),
        ('name = "vblk-io"', 'name = "bare"', r"spec.toml:12: target\[1\].name = 'bare' is used twice"),
        ("repetitions = 2", "repetitions = 2\nrepetitions = 3", r"spec.toml:4: not valid TOML"),
        ('size = "4G"', 'size = "4Q"', r"spec.toml:9: target\[0\].size = '4Q': .*size"),
    ],
)
def test_bad_values_name_file_line_field_value(old: str, new: str, message: str) -> None:
    assert old in GOOD
    with pytest.raises(SpecError, match=message):
        loads_spec(GOOD.replace(old, new, 1), "spec.toml")


def test_missing_tables() -> None:
    with pytest.raises(SpecError, match=r"at least one \[\[workload\]\]"):
        loads_spec('[campaign]\nname = "x"\n[[target]]\nname = "a"\npath = "/x"\n')


toml_ish = st.text(alphabet=string.printable, max_size=200)


@settings(max_examples=300, deadline=None)
@given(toml_ish)
def test_garbage_gives_only_spec_error(text: str) -> None:
    with contextlib.suppress(SpecError):
        loads_spec(text)


@settings(max_examples=200, deadline=None)
@given(
    key=st.sampled_from(
        ["bs", "rw", "iodepth", "runtime", "ramp", "offered_iops", "ops", "numjobs", "direct"]
    ),
    value=st.one_of(
        st.integers(-10, 10**6), st.text(max_size=8), st.booleans(), st.lists(st.integers(-3, 3), max_size=3)
    ),
)
def test_any_workload_value_is_accepted_or_a_spec_error(key: str, value: object) -> None:
    import json

    text = '[campaign]\nname = "x"\n[[target]]\nname = "a"\npath = "/x"\n[[workload]]\nname = "w"\n'
    text += 'rw = "read"\n' if key != "rw" else ""
    text += f"{key} = {json.dumps(value)}\n"
    try:
        loads_spec(text)
    except SpecError as exc:
        assert str(exc).startswith("<spec>:")


def test_rbd_backing_needs_pool_image_and_conf() -> None:
    base = '[campaign]\nname = "x"\n[[target]]\nname = "v"\nkind = "qemu"\nbacking = ["{b}"]\n{extra}[[workload]]\nname = "w"\nrw = "read"\n'
    ok = loads_spec(base.format(b="rbd:vmio/disk", extra='conf = "/etc/ceph/ceph.conf"\n'))
    assert isinstance(ok.targets[0], QemuTarget) and ok.targets[0].conf == "/etc/ceph/ceph.conf"
    with pytest.raises(SpecError, match="spec.toml:6: .*give conf"):
        loads_spec(base.format(b="rbd:vmio/disk", extra=""), "spec.toml")
    with pytest.raises(SpecError, match="'rbd:POOL/IMAGE'"):
        loads_spec(base.format(b="rbd:vmio", extra='conf = "c"\n'), "spec.toml")


def test_cores_is_this_hosts_core_count_also_inside_lists() -> None:
    """``"cores"``: N = the host's cores, as hitachi-nvme-2016 set N (16 fio on a 16-core host)."""
    text = GOOD.replace("vms = 1", 'vms = "cores"').replace("jobs_per_vm = 4", 'jobs_per_vm = "cores"')
    text = text.replace("load_processes = [0, 2]", 'load_processes = [0, "cores"]')
    camp = loads_spec(text)
    n = os.cpu_count()
    vm = next(t for t in camp.targets if isinstance(t, QemuTarget))
    assert (vm.vms, vm.jobs_per_vm) == (n, n)
    assert camp.workloads[0].load_processes == (0, n)
    with pytest.raises(SpecError, match=r"vms = 'all'.*whole number or 'cores'"):
        loads_spec(GOOD.replace("vms = 1", 'vms = "all"'))
