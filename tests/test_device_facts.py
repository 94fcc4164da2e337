"""Each point names the storage it ran on: a file target on an ext4 on a loop device resolves to the disk
under the loop's backing file, and its facts in ``show --json`` are those ``lsblk`` and ``findmnt`` print;
device-mapper and partitions resolve on a synthetic /sys (this host has no dm device); a store from before
these facts still shows, without the keys."""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.spec.model import QemuTarget
from vmio.store import Store, jsontext, rows, show_json, storage_fields
from vmio.system import device_facts
from vmio.targets.base import Env
from vmio.targets.qemu import QemuRig

from conftest import need


def lsblk(device: str) -> dict[str, object]:
    out = subprocess.run(
        ["lsblk", "-J", "-d", "-b", "-o", "NAME,MODEL,REV,ROTA,SCHED,RQ-SIZE,LOG-SEC", device],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    found: dict[str, object] = json.loads(out.stdout)["blockdevices"][0]
    return found


def findmnt(path: Path) -> dict[str, str]:
    out = subprocess.run(
        ["findmnt", "-J", "-T", str(path), "-o", "TARGET,SOURCE,FSTYPE,OPTIONS"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    found: dict[str, str] = json.loads(out.stdout)["filesystems"][0]
    return found


def as_bool(value: object) -> bool | None:
    return None if value is None else value in (True, "1", 1)


@pytest.fixture
def mounted(loopdev: str, tmp_path: Path) -> Iterator[Path]:
    """An ext4 on a loop device (over a file on this host's disk), mounted; unmounted after."""
    need("mkfs.ext4")
    subprocess.run(["mkfs.ext4", "-q", loopdev], check=True, timeout=60)
    where = tmp_path / "mnt"
    where.mkdir()
    subprocess.run(["mount", "-o", "noatime", loopdev, str(where)], check=True, timeout=30)
    os.chmod(where, 0o755)
    yield where
    subprocess.run(["umount", str(where)], check=False, timeout=30)


def test_a_file_target_on_a_loop_device_names_its_filesystem_and_disk(
    mounted: Path, loopdev: str, tmp_path: Path, fio: str
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[campaign]\nname = "dev"\n'
        f'[[target]]\nname = "f"\npath = "{mounted / "t.img"}"\nsize = "4M"\n'
        '[[workload]]\nname = "r"\nrw = "randread"\nruntime = "300ms"\n'
    )
    db = str(tmp_path / "v.db")
    assert main(["run", str(spec), "--db", db]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", "dev", "--json", "--db", db]) == 0
    (point,) = json.loads(out.getvalue())
    with Store(db) as store:  # the fast text and the contract's, alike with the new keys
        assert show_json.text(store, "dev") == jsontext.dumps(
            [r.to_json(facts=False) for r in rows.point_rows(store, "dev")]
        )

    mount = findmnt(mounted / "t.img")
    assert (point["filesystem"], point["mount_options"]) == (mount["fstype"], mount["options"])
    (storage,) = point["storage"]
    assert storage["mountpoint"] == mount["target"] and Path(mount["source"]).name == storage["device"]
    backing = Path(f"/sys/block/{Path(loopdev).name}/loop/backing_file").read_text().strip()
    disk = lsblk(findmnt(Path(backing))["source"])  # the loop's file is on this host's disk
    assert storage["chain"] == [Path(loopdev).name, disk["name"]]
    assert point["disk"] == disk["name"]
    assert point["model"] == (disk["model"] or None) and point["firmware"] == (disk["rev"] or None)
    assert point["rotational"] == as_bool(disk["rota"])
    assert point["scheduler"] == disk["sched"]
    assert point["nr_requests"] == int(str(disk["rq-size"]))
    assert point["logical_block_size"] == int(str(disk["log-sec"]))

    page = tmp_path / "r.html"
    assert main(["report", "dev", "-o", str(page), "--db", db]) == 0
    text = page.read_text()
    storage_table = text[text.index('<table class="storage">') :]
    storage_table = storage_table[: storage_table.index("</table>")]
    for shown in (mount["fstype"], mount["options"], f"{Path(loopdev).name} → {disk['name']}", disk["sched"]):
        assert html.escape(str(shown)) in storage_table, shown

    # the loop device itself as the target: its backing file's filesystem, and the same disk
    direct = device_facts.of_path(loopdev)
    assert direct["backing_file"] == backing
    assert direct["filesystem"] == findmnt(Path(backing))["fstype"]
    assert [d["disk"] for d in direct["disks"]] == [disk["name"]]  # type: ignore[index,union-attr]


def fake_sys(root: Path) -> Path:
    """A synthetic /sys: dm-0 (a linear volume) over sda2 (a partition of a rotating SATA disk) and nvme0n1
    (an NVMe namespace), as the kernel lays them out."""
    sys_root = root / "sys"
    devices = sys_root / "devices" / "virtual" / "block"
    pci = sys_root / "devices" / "pci0000:00"

    def write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")

    sda = pci / "ata1" / "block" / "sda"
    write(sda / "device" / "model", "WDC WD40EFRX-68N")
    write(sda / "device" / "rev", "0A82")
    for name, value in (("rotational", "1"), ("scheduler", "mq-deadline kyber [bfq] none"),
                        ("nr_requests", "64"), ("logical_block_size", "512")):  # fmt: skip
        write(sda / "queue" / name, value)
    write(sda / "sda2" / "partition", "2")
    nvme = pci / "nvme" / "nvme0" / "nvme0n1"
    write(nvme / "device" / "model", "Samsung SSD 980 PRO 1TB")
    write(nvme / "device" / "firmware_rev", "5B2QGXA7")
    for name, value in (("rotational", "0"), ("scheduler", "[none] mq-deadline"), ("nr_requests", "1023"),
                        ("logical_block_size", "4096")):  # fmt: skip
        write(nvme / "queue" / name, value)
    dm = devices / "dm-0"
    (dm / "slaves").mkdir(parents=True)
    for link, target in ((dm / "slaves" / "sda2", sda / "sda2"), (dm / "slaves" / "nvme0n1", nvme)):
        link.symlink_to(target)
    klass = sys_root / "class" / "block"
    klass.mkdir(parents=True)
    for name, target in (("sda", sda), ("sda2", sda / "sda2"), ("nvme0n1", nvme), ("dm-0", dm)):
        (klass / name).symlink_to(target)
    return sys_root


def test_device_mapper_and_partitions_resolve_to_their_disks(tmp_path: Path) -> None:
    sys_root = fake_sys(tmp_path)
    chain: list[str] = []
    disks: list[str] = []
    device_facts._resolve("dm-0", sys_root, tmp_path, chain, disks, 0)
    assert chain == ["dm-0", "nvme0n1", "sda2", "sda"] and disks == ["nvme0n1", "sda"]
    assert device_facts.disk_facts("sda", sys_root) == {
        "disk": "sda", "model": "WDC WD40EFRX-68N", "firmware": "0A82", "rotational": True,
        "scheduler": "bfq", "nr_requests": 64, "logical_block_size": 512,
    }  # fmt: skip
    assert device_facts.disk_facts("nvme0n1", sys_root) == {
        "disk": "nvme0n1", "model": "Samsung SSD 980 PRO 1TB", "firmware": "5B2QGXA7", "rotational": False,
        "scheduler": "none", "nr_requests": 1023, "logical_block_size": 4096,
    }  # fmt: skip


def test_rbd_and_unknown_storage(tmp_path: Path) -> None:
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nfsid = 6f1c9d4e-0000-4000-8000-000000000001\nmon host = 127.0.0.1\n")
    facts = device_facts.rbd_facts("vmio", "img", conf)
    assert facts == {
        "path": "rbd:vmio/img",
        "pool": "vmio",
        "image": "img",
        "cluster_id": "6f1c9d4e-0000-4000-8000-000000000001",
    }
    fields = storage_fields.fields([facts])
    assert fields is not None and fields["storage"] == [facts] and fields["disk"] is None
    assert storage_fields.fields(None) is None  # a run from before: no keys at all


def test_a_vm_target_names_each_backing(tmp_path: Path) -> None:
    """A VM target's storage: each backing's (a file's filesystem and disks; an rbd image's pool, image and
    cluster), read as the rig reads it (no VM needs to boot for what lies under its disks)."""
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\nfsid = 0a0b0c0d-0000-4000-8000-000000000002\n")
    image = tmp_path / "vm.img"
    image.write_bytes(b"\0" * 4096)
    target = QemuTarget("vm", backing=(str(image), "rbd:vmio/disk1", str(image)), conf=str(conf))
    rig = object.__new__(QemuRig)  # the rig's facts, without booting its fleet
    rig.target, rig.env = target, Env()
    first, rbd = rig.storage()  # each backing once
    assert first == device_facts.of_path(image)
    assert (first["filesystem"], first["mount_options"]) == (
        findmnt(image)["fstype"],
        findmnt(image)["options"],
    )
    assert rbd == {
        "path": "rbd:vmio/disk1",
        "pool": "vmio",
        "image": "disk1",
        "cluster_id": "0a0b0c0d-0000-4000-8000-000000000002",
    }


def test_a_file_on_tmpfs_is_on_no_disk(tmp_path: Path) -> None:
    """A file on a filesystem with no device (tmpfs) is on no disk: its figures are not the root disk's,
    whatever is mounted at / (it used to fall through to the longest mount point with a /dev source)."""
    from vmio.system.blockdev import device_chain

    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    shm = tmp_path / "shm"
    shm.mkdir()
    (shm / "f.img").write_bytes(b"x")
    (proc / "self" / "mounts").write_text(
        f"/dev/vda1 / ext4 rw 0 0\ntmpfs {tmp_path} tmpfs rw 0 0\n/dev/vdb {shm} ext4 rw 0 0\n"
        f"tmpfs {shm} tmpfs rw 0 0\n"  # mounted over the disk: the top one is what the file is on
    )
    empty_sys = tmp_path / "sys"  # no /sys/dev/block entry: the mount table decides
    empty_sys.mkdir()
    assert device_chain(shm / "f.img", empty_sys, proc) == []
    (proc / "self" / "mounts").write_text(
        f"/dev/vda1 / ext4 rw 0 0\ntmpfs {tmp_path} tmpfs rw 0 0\n/dev/vdb {shm} ext4 rw 0 0\n"
    )
    assert device_chain(shm / "f.img", empty_sys, proc) == ["vdb"]
    if Path("/dev/shm").is_dir() and "tmpfs /dev/shm " in Path("/proc/self/mounts").read_text():
        probe = Path("/dev/shm") / f"vmio-test-{os.getpid()}"
        probe.write_bytes(b"x")
        try:
            assert device_chain(probe) == []
        finally:
            probe.unlink()
