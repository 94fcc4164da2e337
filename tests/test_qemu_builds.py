"""QEMU builds side by side: `vmio qemu add/list`, per-target qemu and machine, queue mapping, microvm.

The VM tests run the system QEMU (Debian 12: 7.2) and the 10.0 build that `vmio qemu add 10.0` installs from
the Debian mirrors (bookworm-backports) into vmio's cache side by side in one campaign (TCG here)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.errors import SpecError
from vmio.qemu import QemuCaps, builds
from vmio.qemu.argv import plan_iothreads
from vmio.spec import loads_spec
from vmio.store import Store
from vmio.store import rows as summary

from qemu_support import needs_qemu

SPEC_HEAD = '[campaign]\nname = "c"\n'
WORKLOAD = '[[workload]]\nname = "w"\nrw = "randread"\n'


def caps(version: tuple[int, int, int], **props: set[str]) -> QemuCaps:
    return QemuCaps("/q", version, "", {k: frozenset(v) for k, v in props.items()})


def test_microvm_refuses_nvme_and_vfio_at_spec_time() -> None:
    for bus in ("nvme", "vfio"):
        spec = f'{SPEC_HEAD}[[target]]\nname = "m"\nkind = "qemu"\nbacking = "/x"\nmachine = "microvm"\nbus = "{bus}"\n'
        with pytest.raises(SpecError, match=r"<spec>:8: target\[0\].bus = .* microvm has no PCI bus"):
            loads_spec(spec + WORKLOAD)
    ok = loads_spec(
        f'{SPEC_HEAD}[[target]]\nname = "m"\nkind = "qemu"\nbacking = "/x"\nmachine = "microvm"\n' + WORKLOAD
    )
    assert ok.targets[0].machine == "microvm"  # type: ignore[union-attr]


def test_a_qemu_path_that_is_not_executable_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notexe = tmp_path / "qemu-system-x86_64"
    notexe.write_text("#!/bin/sh\n")
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'{SPEC_HEAD}[[target]]\nname = "m"\nkind = "qemu"\nbacking = "/x"\nqemu = "{notexe}"\n' + WORKLOAD
    )
    assert main(["run", str(spec), "--db", str(tmp_path / "db"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert str(notexe) in err and "not an executable" in err and "Traceback" not in err


def test_a_version_not_installed_stops_before_any_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'{SPEC_HEAD}[[target]]\nname = "m"\nkind = "qemu"\nbacking = "/x"\nqemu = "3.1"\n' + WORKLOAD
    )
    db = tmp_path / "db"
    assert main(["run", str(spec), "--db", str(db)]) == 2
    assert "vmio qemu add 3.1" in capsys.readouterr().err
    assert not db.exists() or Store(db).campaigns() == []


def test_queue_mapping_by_build() -> None:
    old = caps((7, 2, 22))
    new = caps(
        (10, 0, 2), **{"virtio-blk-pci": {"iothread-vq-mapping"}, "virtio-scsi-pci": {"iothread-vq-mapping"}}
    )
    nine = caps((9, 0, 0), **{"virtio-blk-pci": {"iothread-vq-mapping"}})
    assert plan_iothreads("virtio-blk", 2, new).mapped and plan_iothreads("virtio-scsi", 2, new).mapped
    assert plan_iothreads("virtio-blk", 2, nine).mapped
    scsi9 = plan_iothreads("virtio-scsi", 2, nine)
    assert (scsi9.iothreads, scsi9.mapped) == (1, False) and "QEMU 9.0.0" in str(scsi9.reason)
    blk7 = plan_iothreads("virtio-blk", 2, old)
    assert blk7.iothreads == 1 and "fell back to 1" in str(blk7.reason)
    assert plan_iothreads("virtio-blk", 1, old).reason is None
    assert old.nvme_stalls and not new.nvme_stalls


@pytest.mark.slow
def test_qemu_add_of_a_version_not_offered_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VMIO_QEMU_CACHE", str(tmp_path / "cache"))
    assert main(["qemu", "add", "99.1"]) == 2
    err = capsys.readouterr().err
    assert "QEMU 99.1 is not offered" in err and "offered: " in err and "Traceback" not in err
    offered = err.split("offered: ")[1].strip().split(", ")
    assert offered and all(v[0].isdigit() for v in offered)
    assert not list((tmp_path / "cache").glob("*/build.json"))  # nothing installed


# ---- one campaign on two builds (TCG) -------------------------------------------------------------


def vm(name: str, backing: str, **keys: object) -> str:
    lines = [
        f'[[target]]\nname = "{name}"\nkind = "qemu"\nbacking = ["{backing}"]\nsize = "128M"\naccel = "tcg"'
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def ten(tmp_path_factory: pytest.TempPathFactory) -> builds.QemuBuild:
    """The 10.0 build: the one in vmio's cache (``make test`` installs it first), else installed here from
    the Debian mirrors (which takes a private ``apt update``, ~30 s on a loaded host). Not a fixture of its
    own: the two campaigns below, one measuring CPU shares alone and one not, would then share it and so
    one worker; they take turns here instead."""
    import fcntl

    with open(tmp_path_factory.getbasetemp().parent / "vmio-qemu-add.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        there = [b for b in builds.installed() if builds.matches(b.version, "10.0")]
        return there[-1] if there else builds.add("10.0")


@contextlib.contextmanager
def disk_files(work: Path) -> Iterator[Path]:
    """A folder on a real disk for the VMs' disk files, emptied and removed after."""
    scratch = Path("/var/tmp") / f"vmio-builds-{os.getpid()}-{work.name}"
    scratch.mkdir(exist_ok=True)
    try:
        yield scratch
    finally:
        for img in scratch.glob("*.img"):
            img.unlink()
        os.rmdir(scratch)


def run_campaigns(work: Path, specs: dict[str, str]) -> list[dict[str, object]]:
    """Each spec (file name -> text) run into one store; its points as `vmio show --json` gives them."""
    db = work / "b.db"
    for name, text in specs.items():
        (work / name).write_text(text)
        assert main(["run", str(work / name), "--db", str(db)]) == 0
    return [r.to_json() for r in summary.point_rows(Store(db))]


RR = '[[workload]]\nname = "rr"\nrw = "randread"\niodepth = 8\nruntime = "4s"\n'
# a guest job that only computes (fio's null engine): the same VM's I/O threads with no disk I/O
IDLE = '[[workload]]\nname = "idle"\nrw = "randread"\nioengine = "null"\nruntime = "4s"\n'


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    """The system's QEMU and 10.0 in one campaign, and 10.0 with two I/O threads busy and idle in another:
    the I/O threads' CPU shares that ``test_each_iothread_carries_io_on_10_and_7_2_falls_back`` measures
    alone (nothing else in it). Only ten-2io's idle level is read, so only ten-2io runs the idle job (in one
    campaign with every target the idle job ran on all three VMs: two points of the alone group for
    nothing)."""
    work = tmp_path_factory.mktemp("builds")
    v = ten(tmp_path_factory).version
    with disk_files(work) as scratch:
        both = "".join([
            vm("sys-2io", f"{scratch}/a.img", iothreads=2, queues=2, jobs_per_vm=2, vcpus=2),
            vm("ten-1io", f"{scratch}/c.img", qemu=v, iothreads=1, queues=2, jobs_per_vm=2, vcpus=2),
        ])  # fmt: skip
        two = vm("ten-2io", f"{scratch}/b.img", qemu=v, iothreads=2, queues=2, jobs_per_vm=2, vcpus=2)
        return run_campaigns(work, {
            "b.toml": f'[campaign]\nname = "builds"\n{both}{RR}',
            "t.toml": f'[campaign]\nname = "ten-iothreads"\n{two}{RR}{IDLE}',
        })  # fmt: skip


@pytest.fixture(scope="module")
def ten_machines(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    """10.0's microvm and its NVMe disk, each in a campaign of its own: no CPU share is measured on them, so
    they run beside other tests, not in the alone group of ``two_builds``."""
    work = tmp_path_factory.mktemp("machines")
    v = ten(tmp_path_factory).version
    with disk_files(work) as scratch:
        micro = vm("ten-micro", f"{scratch}/d.img", qemu=v, machine="microvm")
        nvme = vm("ten-nvme", f"{scratch}/e.img", qemu=v, bus="nvme")
        return run_campaigns(work, {
            "m.toml": f'[campaign]\nname = "micro10"\n{micro}[[workload]]\nname = "rr"\nrw = "randread"\n'
                      'iodepth = 8\nruntime = "4s"\n',
            "n.toml": f'[campaign]\nname = "nvme10"\n{nvme}'
                      '[[workload]]\nname = "rw"\nrw = "randwrite"\niodepth = 32\nruntime = "10s"\n',
        })  # fmt: skip


def by_target(rows: list[dict[str, object]], workload: str = "rr") -> dict[str, dict[str, object]]:
    """The points of one workload by target (the NVMe campaign's one point under its own workload)."""
    return {str(r["target"]): r for r in rows if r["workload"] in (workload, "rw")}


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_two_builds_in_one_campaign(two_builds: list[dict[str, object]]) -> None:
    rows = by_target(two_builds)
    system = builds.system_build()
    assert system is not None
    assert rows["sys-2io"]["qemu_version"] == system.version
    assert str(rows["ten-2io"]["qemu_version"]).startswith("10.0")
    # the system's build and 10.0 side by side in one campaign
    assert str(rows["ten-1io"]["qemu_version"]).startswith("10.0")
    assert rows["sys-2io"]["campaign"] == rows["ten-1io"]["campaign"] == "builds"
    for r in rows.values():
        assert r["status"] == "done" and float(str(r["read_iops"] or r["write_iops"])) > 0


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.alone  # each I/O thread's share of a core (the campaign of two_builds), against fixed bounds
def test_each_iothread_carries_io_on_10_and_7_2_falls_back(two_builds: list[dict[str, object]]) -> None:
    # two queues need two guest CPUs (blk-mq gives a disk at most one queue per CPU)
    rows = by_target(two_builds)
    mapped, control, old = rows["ten-2io"], rows["ten-1io"], rows["sys-2io"]
    cpu = mapped["qemu_cpu_pct"]
    assert isinstance(cpu, dict) and len(cpu["iothreads"]) == 2
    [single] = control["qemu_cpu_pct"]["iothreads"]  # type: ignore[index]
    # the idle level, measured: the same VM's I/O threads while its guest computes and does no disk I/O
    idle = by_target(two_builds, "idle")["ten-2io"]
    assert idle["status"] == "done" and idle["read_ops"], idle  # fio ran its null-engine job
    idle_cpu = idle["qemu_cpu_pct"]
    assert isinstance(idle_cpu, dict) and len(idle_cpu["iothreads"]) == 2
    assert idle_cpu["vcpu"] > 10, idle_cpu  # the guest ran its job meanwhile (29 % of a core measured)
    for k, share in enumerate(cpu["iothreads"]):
        level = idle_cpu["iothreads"][k]
        # busy, not the idle level: several times it and at least a point of one core above it (measured
        # here: 6.2 and 8.2 % busy against 0.0 and 0.0 % idle; one I/O thread alone 5.5 %)
        assert share > max(5 * level, level + 1.0), (k, cpu, idle_cpu)
        assert share > 0.2 * single, (cpu, single)  # a real part of what one I/O thread does alone
    facts = old["host_facts"]
    assert isinstance(facts, dict)
    assert facts["iothreads"] == 1 and "fell back to 1" in facts["iothread_fallback"]
    assert len(old["qemu_cpu_pct"]["iothreads"]) == 1  # type: ignore[index]


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_nvme_randwrite_on_10_without_the_timeout_workaround(ten_machines: list[dict[str, object]]) -> None:
    row = by_target(ten_machines)["ten-nvme"]
    assert row["status"] == "done"  # (test_two_builds_in_one_campaign's check when it was in that campaign)
    facts = row["host_facts"]
    assert isinstance(facts, dict)
    assert facts["nvme_io_timeout_workaround"] is False
    assert row["guest_io_warnings"] == 0
    assert float(str(row["write_iops"])) > 100  # 7.2 stalled this point at ~5 IOPS


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_microvm_boots_and_measures(ten_machines: list[dict[str, object]]) -> None:
    row = by_target(ten_machines)["ten-micro"]
    assert row["qemu_machine"] == "microvm" and row["status"] == "done"
    assert float(str(row["read_iops"])) > 0 and int(str(row["read_ops"])) > 0
