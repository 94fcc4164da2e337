"""okayama-hypervisors-2020 as it ran: seeded operation offsets replayed everywhere, loop devices, idle VMs, ``show --ops``.

One campaign (real fio, real QEMU TCG) is run once for the module: the bare host on a ``loop = true`` file
with two measured processes, and one VM on a ``loop = true`` backing with an idle VM beside it, each with
0 and 2 load processes. The checks read fio's own latency logs (kept with ``--workdir``) and QEMU's own
request trace, not the store's copies.
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.fio import iolog
from vmio.store import Store
from vmio.store import rows as summary
from vmio.system.blockdev import loops_over

from conftest import disk_folder, store_from_sql
from qemu_support import needs_qemu

DATA = Path(__file__).parent / "data" / "stores"
OPS = 20
SEED = 4004


def spec_text(root: Path, name: str = "s4") -> str:
    return f"""
[campaign]
name = "{name}"
seed = {SEED}

[[target]]
name = "bare"
path = "{root}/bare.img"
size = "64M"
loop = true

[[target]]
name = "vm"
kind = "qemu"
backing = "{root}/vm.img"
size = "64M"
loop = true
idle_vms = 1
accel = "tcg"
cache = "writeback"
aio = "threads"
trace = true

[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
ops = {OPS}
load_processes = [0, 2]

[[workload]]
name = "two"
rw = "randread"
bs = "4k"
numjobs = 2
ops = {OPS}
"""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    work = tmp_path_factory.mktemp("seed004")
    with disk_folder() as root:  # O_DIRECT needs a disk filesystem, not tmpfs
        spec = work / "s4.toml"
        spec.write_text(spec_text(root))
        db, workdir = work / "s4.db", work / "runs"
        code = main(["run", str(spec), "--db", str(db), "--workdir", str(workdir), "--boot-timeout", "300s"])
        assert code == 0
        yield {"db": db, "workdir": workdir, "root": root, "traces": work / "s4.db.traces"}


def lat_logs(workdir: Path, point: str) -> dict[str, list[list[int]]]:
    """fio's own latency log lines per log file of a point: [time, latency ns, ddir, bs, (offset), prio]."""
    folder = workdir / point.replace("/", "_")
    return {
        log.name: [[int(v) for v in line.split(",")] for line in log.read_text().splitlines() if line.strip()]
        for log in sorted(folder.glob("ops-*_lat.*.log*"))
    }


def stored_offsets(db: Path) -> list[int]:
    with sqlite3.connect(db) as con:
        return [int(o) for o in json.loads(con.execute("SELECT offsets_json FROM campaign").fetchone()[0])]


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_offsets_are_the_same_in_every_process_and_environment(campaign: dict[str, Path]) -> None:
    offsets = stored_offsets(campaign["db"])
    assert len(offsets) == OPS and len(set(offsets)) == OPS
    assert all(o % 4096 == 0 and 0 <= o <= (64 << 20) - 4096 for o in offsets)  # 64M: the targets' size
    # the bare host: every measured process of every point logged (log_offset) the same offsets, in order
    for workload, load, processes in (("rr", 0, 1), ("rr", 2, 1), ("two", 0, 2)):
        logs = lat_logs(campaign["workdir"], f"bare/{workload}/bs=4k/offered=max/load={load}/rep=1")
        assert len(logs) == processes, logs.keys()  # loads log nothing
        for lines in logs.values():
            assert [line[4] for line in lines] == offsets
            assert {line[2] for line in lines} == {0} and {line[3] for line in lines} == {4096}
    # the VM: QEMU's own trace of the guest's requests during the point without load holds exactly them
    trace = next((campaign["traces"] / "s4").glob("vm_rr_bs=4k*load=0*")) / "vmio-0.log"
    reads = [
        int(m[1]) * 512
        for m in re.finditer(
            r"virtio_blk_handle_read vdev \S+(?: req \S+)? sector (\d+) nsectors (\d+)", trace.read_text()
        )
    ]
    assert reads == offsets, (reads[:5], offsets[:5])


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_ops_table_against_fio_latency_logs(
    campaign: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "s4", "--ops", "--json", "--db", str(campaign["db"])]) == 0
    rows = json.loads(capsys.readouterr().out)
    # one row per workload as defined: rr and two are both randread 4k, and stay two rows (issue 26)
    assert [(r["target"], r["workload"], r["load_processes"]) for r in rows] == [
        ("bare", "rr", 0), ("bare", "rr", 2), ("bare", "two", 0), ("vm", "rr", 0), ("vm", "rr", 2), ("vm", "two", 0)
    ]  # fmt: skip
    for row in rows:
        assert set(row) == set(summary.OPS_FIELDS)
        # every point of the target and workload at that load, from fio's logs
        lats = [
            line[1]
            for lines in lat_logs(
                campaign["workdir"],
                f"{row['target']}/{row['workload']}/bs=4k/offered=max/load={row['load_processes']}/rep=1",
            ).values()
            for line in lines
        ]
        # measured processes: two has numjobs = 2 on the host; the VM runs one fio job per VM
        processes = {("bare", "rr", 0): 1, ("bare", "rr", 2): 1, ("bare", "two", 0): 2, ("vm", "rr", 0): 1,
                     ("vm", "rr", 2): 1, ("vm", "two", 0): 1}  # fmt: skip
        assert (
            row["ops"] == len(lats) == processes[row["target"], row["workload"], row["load_processes"]] * OPS
        )
        assert row["min_ms"] == pytest.approx(min(lats) / 1e6, abs=1e-4)
        assert row["max_ms"] == pytest.approx(max(lats) / 1e6, abs=1e-4)
        assert row["avg_ms"] == pytest.approx(sum(lats) / len(lats) / 1e6, abs=1e-4)
        assert (row["bs"], row["rw"]) == (4096, "randread")
        if row["target"] == "bare":
            assert all(
                row[k] is None for k in ("vcpus", "vms", "idle_vms", "cache", "qemu_version", "machine")
            )
        else:
            assert (row["vcpus"], row["vms"], row["idle_vms"], row["cache"]) == (1, 2, 1, "writeback")
            assert row["machine"] == "q35" and row["accel"] == "tcg" and row["qemu_version"]
    assert main(["show", "s4", "--ops", "--db", str(campaign["db"])]) == 0
    text = capsys.readouterr().out
    assert "2 (1 idle)" in text and "randread" in text


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_loop_devices_named_and_gone_after(campaign: dict[str, Path]) -> None:
    store = Store(campaign["db"], readonly=True)
    for run in store.runs("s4"):
        assert run["status"] == "done", run["error"]
        facts = json.loads(run["host_json"])
        (loop,) = facts["loop_devices"]
        assert loop["backing"] == str(campaign["root"] / f"{run['target']}.img")
        assert loop["device"].startswith("/dev/loop") and loop["direct_io"] is True
        if run["target"] == "bare":
            assert run["device"] == Path(loop["device"]).name  # the host's figures are the loop device's
    for name in ("bare.img", "vm.img"):
        assert loops_over(campaign["root"] / name) == []


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_idle_vm_runs_through_the_point(campaign: dict[str, Path]) -> None:
    store = Store(campaign["db"], readonly=True)
    for run in (r for r in store.runs("s4") if r["target"] == "vm"):
        facts = json.loads(run["host_json"])
        (idle,) = facts["idle_vms"]
        assert idle["name"] == "vmio-1" and idle["pid"] > 0 and facts["idle_vms_running"] == 1
        argvs = json.loads(run["qemu_argv"])
        assert len(argvs) == 2 and "vmio-1,debug-threads=on" in argvs[1]
        # its QEMU threads were read from /proc through the point, apart from the measured VM's
        samples = [s for s in store.samples(run["id"]) if s["source"] == "idle-qemu:vmio-1"]
        assert samples and max(s["t"] for s in samples) > 0
        measured = argvs[0][argvs[0].index("-name") + 1].split(",")[0]
        servers = facts["fio_servers"]  # each VM's fio server as fio's results name it
        assert set(servers) == {measured, "vmio-1"} and servers[measured] != servers["vmio-1"]
        hosts = {r["host"] for r in store.results(run["id"])}
        assert hosts == {servers[measured]}  # fio ran in the measured VM only


@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
def test_report_has_the_per_operation_series(campaign: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", "s4", "--db", str(campaign["db"]), "-o", str(out)]) == 0
    page = out.read_text()
    section = page[page.index('id="per-operation-latency"') :]
    for target in ("bare", "vm"):
        for load in (0, 2):
            assert f"opseries-0--{target}-{load}-load" in section


def test_loop_detached_after_a_failed_point(tmp_path: Path, scratch: Path) -> None:
    spec = tmp_path / "f.toml"
    spec.write_text(
        f'[campaign]\nname = "f"\n[[target]]\nname = "bare"\npath = "{scratch}/f.img"\nsize = "8M"\n'
        'loop = true\n[[workload]]\nname = "w"\nrw = "randread"\nioengine = "rbd"\nops = 5\n'
    )
    assert main(["run", str(spec), "--db", str(tmp_path / "f.db")]) == 1  # the point failed
    (run,) = Store(tmp_path / "f.db", readonly=True).runs("f")
    assert run["status"] == "failed"
    assert json.loads(run["host_json"])["loop_devices"][0]["device"].startswith("/dev/loop")
    assert loops_over(scratch / "f.img") == []


@pytest.mark.parametrize(
    ("campaign_keys", "target_keys", "named"),
    [
        ('seed = "four"', "", "campaign.seed"),
        ("seed = -1", "", "campaign.seed"),
        ("seed = 4", "", "campaign.seed"),  # no workload with ops
        ("", "idle_vms = -1", "target[0].idle_vms"),
        ("", 'idle_vms = "one"', "target[0].idle_vms"),
        ("", "idle_vms = 99", "target[0].idle_vms"),
        ("", 'loop = "yes"', "target[0].loop"),
        ("", "jobs_per_vm = 2", "target[0].jobs_per_vm"),  # ops beside loads: one measured process per VM
    ],
)
def test_bad_seed_idle_vms_or_loop_is_exit_2_naming_the_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], campaign_keys: str, target_keys: str, named: str
) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(
        f'[campaign]\nname = "bad"\n{campaign_keys}\n\n[[target]]\nname = "vm"\nkind = "qemu"\n'
        f'backing = "{tmp_path}/d.img"\n{target_keys}\n\n[[workload]]\nname = "w"\nrw = "randread"\n'
        + ("ops = 5\nload_processes = [0, 2]\n" if "jobs_per_vm" in target_keys else "")
    )
    assert main(["run", str(spec), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:" in err and named in err, err
    assert "Traceback" not in err


def test_offsets_are_aligned_within_the_span_and_drawn_once() -> None:
    offsets = iolog.generate(7, 100, 2 << 30, 32768)
    assert offsets == iolog.generate(7, 100, 2 << 30, 32768) != iolog.generate(8, 100, 2 << 30, 32768)
    assert all(o % 32768 == 0 and 0 <= o <= (2 << 30) - 32768 for o in offsets)
    text = iolog.render(offsets[:3], ["read", "write", "read"], 16384)
    assert text.splitlines() == [
        "fio version 2 iolog", "vmio-ops add", "vmio-ops open",
        f"vmio-ops read {offsets[0]} 16384", f"vmio-ops write {offsets[1]} 16384",
        f"vmio-ops read {offsets[2]} 16384", "vmio-ops close",
    ]  # fmt: skip


def test_v5_store_migrates_to_seeded_offsets(tmp_path: Path) -> None:
    db = store_from_sql("schema-v5.sql", tmp_path / "v5.db")
    store = Store(db)
    assert store.schema_version >= 6
    assert store.offsets("fixture") is None  # a campaign stored before seeds has none
    store.set_offsets("fixture", 3, [4096, 0])
    store.set_offsets("fixture", 9, [8192])  # stored once: they stay
    assert store.offsets("fixture") == (3, [4096, 0])
    (op,) = store.oplat(store.runs("fixture")[0]["id"])
    assert op["offset"] is None and op["lat_ns"] == 52000
    (row,) = summary.ops_rows(store, "fixture")
    assert (row["target"], row["ops"], row["min_ms"], row["vms"]) == ("host", 1, 0.052, None)


def test_ops_without_a_campaign_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    Store(tmp_path / "e.db").close()
    assert main(["show", "--ops", "--db", str(tmp_path / "e.db")]) == 2
    assert "--ops needs a campaign" in capsys.readouterr().err


def test_loop_detached_when_the_run_is_terminated(tmp_path: Path, scratch: Path) -> None:
    image = scratch / "t.img"
    spec = tmp_path / "t.toml"
    spec.write_text(
        f'[campaign]\nname = "t"\n[[target]]\nname = "bare"\npath = "{image}"\nsize = "8M"\nloop = true\n'
        '[[workload]]\nname = "w"\nrw = "randread"\nruntime = "60s"\n'
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "vmio", "run", str(spec), "--db", str(tmp_path / "t.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not loops_over(image) and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.1)
        assert loops_over(image), "the loop device never appeared"
        time.sleep(1)  # fio is running on it
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
        assert run.returncode == 143 and "terminated" in err, err
        assert loops_over(image) == []
    finally:
        if run.poll() is None:
            run.kill()
