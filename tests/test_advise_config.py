"""The configuration guideline (hitachi-nvme-2016, Fig. 9): every branch, over real QEMU facts and a fake sysfs."""

from __future__ import annotations

import dataclasses
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from test_advise_host import make_host
from vmio import published
from vmio.advise.config_guideline import Advice, Requirements, advise, parse_buses
from vmio.advise.disk_config import Config
from vmio.advise.inventory import BlockDevice, HostFacts, read_host_facts
from vmio.advise.text import format_advice
from vmio.cli import main
from vmio.errors import InputError
from vmio.store import Store
from vmio.system.process import Runner

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="needs qemu-system-x86_64"),
]


@pytest.fixture(scope="module")
def host_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_host(tmp_path_factory.mktemp("host"))


@pytest.fixture(scope="module")
def facts(host_root: tuple[Path, Path]) -> HostFacts:
    sysfs, proc = host_root
    return read_host_facts(Runner(), sysfs=sysfs, proc=proc)


@pytest.fixture
def qemu_7_2(facts: HostFacts) -> HostFacts:
    """This host's QEMU told to be 7.2 (Debian 12), without iothread-vq-mapping."""
    blk = facts.device_properties["virtio-blk-pci"] - {"iothread-vq-mapping"}
    return dataclasses.replace(
        facts, qemu_version="7.2.0", device_properties={**facts.device_properties, "virtio-blk-pci": blk}
    )


@pytest.fixture
def qemu_9(facts: HostFacts) -> HostFacts:
    """What QEMU 9.0 adds: virtio-blk's iothread-vq-mapping property (beside libvirt 10.0, which maps it)."""
    blk = facts.device_properties["virtio-blk-pci"] | {"iothread-vq-mapping"}
    return dataclasses.replace(
        facts,
        qemu_version="9.0.0",
        device_properties={**facts.device_properties, "virtio-blk-pci": blk},
        libvirt_version="10.0.0",
    )


def nodes(advice: Advice) -> list[str]:
    return [s.node for s in advice.path]


def test_scale_out_picks_one_job_per_vm_spread_over_both_ssds(qemu_7_2: HostFacts) -> None:
    a = advise(qemu_7_2, Requirements(scale_out=True))
    assert (a.config.name, a.config.bus, a.config.iothreads) == ("1 fio/VM x N", "virtio-blk", 0)
    assert a.config.spread_over == ("nvme0n1", "nvme1n1")
    assert (a.ratio.read, a.ratio.write, a.ratio.source) == (0.79, 1.0, published.SEED_SOURCE)
    assert nodes(a) == ["disks", "a"]
    assert "1.57x read, 2.75x write" in a.path[0].answer


def test_scale_out_needs_a_shared_bus(qemu_7_2: HostFacts) -> None:
    with pytest.raises(InputError, match="scale-out needs a bus that VMs can share"):
        advise(qemu_7_2, Requirements(scale_out=True, buses=("vfio",)))


def test_dedicated_disk_passes_the_free_ssd_through_with_vfio(qemu_7_2: HostFacts) -> None:
    a = advise(qemu_7_2, Requirements(dedicated_disk=True))
    c = a.config
    assert (c.name, c.passthrough, c.device, c.pci_address) == (
        "N fio/VM + passthrough",
        "vfio",
        "nvme1n1",
        "0000:02:00.0",
    )
    assert a.qemu_args == ("-device", "vfio-pci,host=0000:02:00.0")
    address = ET.fromstring(a.libvirt_xml).find("source/address")
    assert address is not None and address.attrib == {
        "domain": "0x0000",
        "bus": "0x02",
        "slot": "0x00",
        "function": "0x0",
    }
    assert (a.ratio.read, a.ratio.write) == (1.0, 1.0)


def test_dedicated_disk_without_vfio_gives_the_raw_device_to_virtio_blk(qemu_7_2: HostFacts) -> None:
    a = advise(qemu_7_2, Requirements(dedicated_disk=True, buses=("virtio-blk", "block")))
    assert (a.config.passthrough, a.config.bus, a.config.iothreads) == ("block", "virtio-blk", 1)
    assert "file.driver=host_device,file.filename=/dev/nvme1n1" in a.qemu_args[3]
    disk = ET.fromstring(a.libvirt_xml.split("\n", 1)[1])
    source = disk.find("source")
    assert disk.attrib["type"] == "block"
    assert source is not None and source.attrib == {"dev": "/dev/nvme1n1"}


def test_live_migration_rules_out_passthrough(qemu_7_2: HostFacts) -> None:
    a = advise(qemu_7_2, Requirements(dedicated_disk=True, live_migration=True))
    assert a.config.name == "N fio/VM + iothread"
    assert "blocks live migration" in a.path[2].answer


def test_a_device_the_host_uses_is_never_passed_through(qemu_7_2: HostFacts) -> None:
    ssd = BlockDevice("nvme0n1", False, 1 << 30, "0000:01:00.0", "/dev/nvme0n1p2 on /")
    a = advise(dataclasses.replace(qemu_7_2, block_devices=(ssd,)), Requirements(dedicated_disk=True))
    assert a.config.passthrough is None
    assert "the host uses every device (/dev/nvme0n1p2 on /)" in a.path[2].answer


def test_shared_disk_on_qemu_7_2_gets_one_iothread_and_never_vq_mapping(qemu_7_2: HostFacts) -> None:
    a = advise(qemu_7_2, Requirements())
    assert (a.config.name, a.config.iothreads, a.config.vq_mapping) == ("N fio/VM + iothread", 1, False)
    assert not any("vq-mapping" in arg for arg in a.qemu_args)
    assert "iothreads><iothread" not in a.libvirt_xml.replace("\n", "").replace(" ", "")
    assert nodes(a) == ["disks", "a", "d", "e", "vq"]
    assert (a.ratio.read, a.ratio.write) == (0.78, 0.99)


def test_shared_disk_on_qemu_9_spreads_queues_over_iothreads(qemu_9: HostFacts) -> None:
    a = advise(qemu_9, Requirements())
    assert (a.config.iothreads, a.config.vq_mapping) == (4, True)
    device = json.loads(a.qemu_args[a.qemu_args.index("-device") + 1])
    assert device["iothread-vq-mapping"] == [{"iothread": f"iothread{i}"} for i in range(4)]
    assert a.qemu_args.count("-object") == 4
    driver = ET.fromstring(a.libvirt_xml.split("\n", 1)[1]).find("driver")
    assert driver is not None and driver.get("queues") == "4"
    assert [e.get("id") for e in driver.iter("iothread")] == ["1", "2", "3", "4"]


def test_vq_mapping_needs_cpus_for_more_than_one_iothread(qemu_9: HostFacts) -> None:
    small = advise(dataclasses.replace(qemu_9, cpus=2), Requirements())
    assert (small.config.iothreads, small.config.vq_mapping) == (1, False)
    assert advise(dataclasses.replace(qemu_9, cpus=6), Requirements()).config.iothreads == 3


def test_virtio_scsi_gets_an_iothread_when_qemu_has_one_but_the_seed_has_no_figure(
    qemu_7_2: HostFacts,
) -> None:
    a = advise(qemu_7_2, Requirements(buses=("virtio-scsi",)))
    assert (a.config.name, a.config.bus, a.config.iothreads) == ("N fio/VM + iothread", "virtio-scsi", 1)
    assert a.ratio == published.SEED_RATIO_ONE_VM
    assert "virtio-scsi-pci,id=scsi0,iothread=iothread0" in a.qemu_args


def test_without_an_iothread_property_the_seed_falls_back_to_one_vm(qemu_7_2: HostFacts) -> None:
    bare = dataclasses.replace(qemu_7_2, device_properties={})
    a = advise(bare, Requirements())
    assert (a.config.name, a.config.iothreads) == ("N fio/VM", 0)
    assert (a.ratio.read, a.ratio.write) == (0.21, 0.93)


def test_stored_measurements_replace_the_seed_figures(qemu_7_2: HostFacts) -> None:
    mine = published.Ratio(0.66, 0.97, "vmio.db campaign 'bare-vs-vm'", "N fio/VM + iothread at N = 4 (...)")
    asked = []

    def measured(config: Config) -> published.Ratio | None:
        asked.append(config)
        return mine if config.name == "N fio/VM + iothread" else None

    a = advise(qemu_7_2, Requirements(), measured=measured)
    assert a.ratio == mine and asked == [a.config]
    assert a.n.endswith("the expected ratio is for N fio/VM + iothread at N = 4")


# Fig. 9 branch by branch, against the paper: "スケールアウトを行う場合には「1 fio/vm × N」", "SSD を VM に占有
# させることが可能であれば「N fio/vm + Path Through」", "SSD を他の VM に利用する場合には「N fio/vm + iothread」",
# "virtio-blk を利用しない場合には「N fio/vm」"; each configuration's ratio from the paper's figure for it
PAPER_FIG9 = [
    # (requirements, the paper's configuration, vmio's name, the paper's figure, read, write)
    (Requirements(scale_out=True), "1 fio/vm x N", "1 fio/VM x N", "Fig. 4", 0.79, 1.0),
    (Requirements(dedicated_disk=True), "N fio/vm + Path Through", "N fio/VM + passthrough", "Fig. 5", 1.0, 1.0),
    (Requirements(dedicated_disk=True, buses=("virtio-blk", "block")), "N fio/vm + Path Through",
     "N fio/VM + passthrough", "Fig. 5", 1.0, 1.0),
    (Requirements(), "N fio/vm + iothread", "N fio/VM + iothread", "Fig. 8", 0.78, 0.99),
    (Requirements(buses=("virtio-scsi",)), "N fio/vm", "N fio/VM + iothread", "Fig. 4", 0.21, 0.93),
]  # fmt: skip


@pytest.mark.parametrize(("req", "paper", "name", "figure", "read", "write"), PAPER_FIG9)
def test_each_fig9_branch_gives_the_papers_configuration_and_ratio(
    qemu_7_2: HostFacts, req: Requirements, paper: str, name: str, figure: str, read: float, write: float
) -> None:
    one_ssd = dataclasses.replace(qemu_7_2, block_devices=qemu_7_2.block_devices[1:])
    a = advise(one_ssd, req)
    assert a.config.name == name
    assert (a.ratio.read, a.ratio.write, a.ratio.source) == (read, write, published.SEED_SOURCE)
    assert a.ratio.basis.endswith(f"({figure})")
    assert "N = 16 in the paper's figures" in a.n
    if req.buses == ("virtio-blk", "block"):  # no vfio: the raw device, with an iothread, named
        (dep,) = a.departures
        assert (dep.node, dep.paper) == (
            "d",
            "N fio/VM + passthrough (the device given to the VM, no iothread)",
        )
    elif name.lower() == paper.lower().replace("path through", "passthrough"):
        assert a.departures == ()  # the paper's answer, as written
    else:  # virtio-blk not allowed: vmio gives virtio-scsi an iothread and says the paper's answer beside
        (dep,) = a.departures
        assert dep.node == "e" and dep.paper.startswith("N fio/VM") and "virtio-scsi" in dep.vmio
        assert "the paper: N fio/VM" in format_advice(a)


def test_the_device_named_goes_into_the_arguments_and_xml(qemu_7_2: HostFacts, tmp_path: Path) -> None:
    image = tmp_path / "disk.raw"
    a = advise(qemu_7_2, Requirements(device=str(image)))
    assert f"file.filename={image}" in " ".join(a.qemu_args) and f'file="{image}"' in a.libvirt_xml
    assert a.disk == f"{image} (advise --device)"
    placeholder = advise(qemu_7_2, Requirements())
    assert "is a placeholder" in placeholder.disk and "advise --device PATH" in format_advice(placeholder)
    block = advise(qemu_7_2, Requirements(device="/dev/vdz", device_is_block=True))
    assert "file.driver=host_device,file.filename=/dev/vdz" in " ".join(block.qemu_args)
    assert '<source dev="/dev/vdz" />' in block.libvirt_xml and 'type="block"' in block.libvirt_xml


def test_a_host_without_ssds_is_told_the_figures_do_not_fit(qemu_7_2: HostFacts) -> None:
    hdd = BlockDevice("sda", True, 1 << 30)
    a = advise(dataclasses.replace(qemu_7_2, block_devices=(hdd,)), Requirements())
    assert a.path[0].answer == "none non-rotational (sda)"
    assert a.path[-1].answer == "no SSD found; they are for NVMe SSDs"


def test_parse_buses() -> None:
    assert parse_buses(" virtio-blk, vfio ") == ("virtio-blk", "vfio")
    with pytest.raises(InputError, match="--bus 'nvme' is not a bus vmio advises on"):
        parse_buses("virtio-blk,nvme")
    with pytest.raises(InputError, match="names no bus"):
        parse_buses(",")


def qemu_accepts(args: tuple[str, ...]) -> None:
    """Start this QEMU paused with the fragment and quit at once: its syntax and devices must be valid."""
    argv = ["qemu-system-x86_64", "-machine", "q35,accel=tcg", "-S", "-display", "none", "-nodefaults"]
    Runner().run([*argv, "-monitor", "stdio", *args], timeout=30, input_text="quit\n")


@pytest.mark.parametrize("buses", [("virtio-blk",), ("virtio-scsi",)])
def test_this_qemu_accepts_the_argv_fragment(
    tmp_path: Path, qemu_7_2: HostFacts, buses: tuple[str, ...]
) -> None:
    image = tmp_path / "vm0.raw"
    image.write_bytes(b"\0" * (1 << 20))
    a = advise(qemu_7_2, Requirements(buses=buses), image=str(image))
    qemu_accepts(a.qemu_args)


def test_human_text_of_one_advice(qemu_7_2: HostFacts) -> None:
    assert format_advice(advise(qemu_7_2, Requirements())) == EXPECTED


EXPECTED = """\
Recommended: N fio/VM + iothread (virtio-blk; 1 iothread; disks spread over nvme0n1, nvme1n1)
Path through Fig. 9 (hitachi-nvme-2016's configuration guideline):
  (disks) Which SSDs can hold VM disks? nvme0n1, nvme1n1: spread VM disks over them \
(16 VMs x 1 fio with VM disks spread over 2 SSDs (689k read / 247k write) vs bare metal on 1 SSD (438k / 90k) (Fig. 7): 1.57x read, 2.75x write)
  (a) Will capacity grow by adding VMs (scale-out)? no -> (c) tune one VM's settings
  (d) Can a device be dedicated to the VM? no -> (e) share the device
  (e) Does the shared bus get an iothread? yes -> N fio/VM + iothread on virtio-blk
  (vq) Can one disk's queues be spread over several iothreads (iothread-vq-mapping)? \
no: QEMU 7.2.0 lacks it (needs 9.0) -> 1 iothread
Where this departs from Fig. 9 as the paper wrote it:
  (disks) vmio: VM disks spread over nvme0n1, nvme1n1; the paper: one SSD (Fig. 9 does not ask) \
(the paper's Fig. 7: two SSDs gave 1.57x/2.75x bare metal on one)
Expected VM/bare IOPS: read 0.78x, write 0.99x
  source: hitachi-nvme-2016 (NVMe, KVM); \
1 VM x 16 fio, virtio-blk + 1 iothread: 342k read / 89k write (Fig. 8)
  N = the fio jobs (application threads doing I/O) the one VM runs; the expected ratio is for N = 16 in the \
paper's figures
VM disk: /var/lib/vmio/vm0.raw is a placeholder: put your VM disk's file or block device there (in \
-blockdev's file.filename and the XML's <source>), or name it with advise --device PATH
QEMU arguments:
  -object iothread,id=iothread0
  -blockdev driver=raw,node-name=disk0,file.driver=file,file.filename=/var/lib/vmio/vm0.raw,\
file.aio=native,cache.direct=on
  -device virtio-blk-pci,drive=disk0,iothread=iothread0
libvirt XML:
  <iothreads>1</iothreads>
  <disk type="file" device="disk">
    <driver name="qemu" type="raw" cache="none" io="native" iothread="1" />
    <source file="/var/lib/vmio/vm0.raw" />
    <target dev="vda" bus="virtio" />
  </disk>
"""


def test_cli_json(host_root: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    sysfs, proc = host_root
    argv = ["advise", "--scale-out", "yes", "--json", "--sysfs", str(sysfs), "--proc", str(proc)]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {
        "config",
        "path",
        "departures",
        "n",
        "disk",
        "expected_ratio",
        "qemu_args",
        "libvirt_xml",
    }
    assert out["config"]["name"] == "1 fio/VM x N"
    assert out["expected_ratio"] == {
        "read": 0.79,
        "write": 1.0,
        "source": published.SEED_SOURCE,
        "basis": "16 VMs x 1 fio, virtio-blk (Fig. 4)",
    }


def test_cli_device_goes_into_the_output(
    host_root: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sysfs, proc = host_root
    disk = tmp_path / "vm.raw"
    disk.write_bytes(b"")
    argv = ["advise", "--json", "--sysfs", str(sysfs), "--proc", str(proc), "--db", str(tmp_path / "none.db")]
    Store(tmp_path / "none.db").close()
    assert main([*argv, "--device", str(disk)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any(f"file.filename={disk}" in arg for arg in out["qemu_args"]) and str(disk) in out["libvirt_xml"]
    assert out["disk"] == f"{disk} (advise --device)"
    assert main([*argv, "--device", "vm.raw"]) == 2
    assert "is not an absolute path" in capsys.readouterr().err
    assert main([*argv, "--device", str(tmp_path / "missing.raw")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_bad_bus_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--bus", "ide"]) == 2
    assert "--bus 'ide' is not a bus" in capsys.readouterr().err
