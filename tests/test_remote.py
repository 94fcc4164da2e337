"""A remote target made of two real ``fio --server`` processes on 127.0.0.1."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rates import OVERSHOOT, assert_throttled
from vmio.cli import main
from vmio.stats import histogram
from vmio.store import Store
from vmio.store import rows as summary
from vmio.system import device_facts
from vmio.targets.remote import LocalFioServer

pytestmark = pytest.mark.fio


@pytest.fixture
def servers(fio: str) -> Iterator[list[LocalFioServer]]:
    with LocalFioServer() as a, LocalFioServer() as b:
        yield [a, b]


def pair(servers: list[LocalFioServer], scratch: Path) -> tuple[list[Path], str, str]:
    """A 16 MiB file for each server, and the spec's ``hosts`` and ``paths`` lists (TOML) naming them."""
    files = [scratch / "a.img", scratch / "b.img"]
    for f in files:
        f.write_bytes(b"\xa5" * (16 << 20))
    return files, ", ".join(f'"{s.address}"' for s in servers), ", ".join(f'"{f}"' for f in files)


def test_two_servers_start_together_and_report_per_host(
    servers: list[LocalFioServer], scratch: Path, tmp_path: Path
) -> None:
    files, hosts, paths = pair(servers, scratch)
    spec = tmp_path / "r.toml"
    spec.write_text(
        f'[campaign]\nname = "remote"\n[[target]]\nname = "pair"\nkind = "remote"\nhosts = [{hosts}]\n'
        f'paths = [{paths}]\nsize = "16M"\n'
        '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\nruntime = "2s"\noffered_iops = [400]\n'
        '[[workload]]\nname = "ops"\nrw = "randread"\nbs = "4k"\nops = 50\n'
    )
    db = tmp_path / "r.db"
    assert main(["run", str(spec), "--db", str(db)]) == 0
    with Store(db) as store:
        rows = {r.workload: r for r in summary.point_rows(store, "remote")}
        rr = rows["rr"]
        assert list(rr.hosts) == sorted(s.address for s in servers)
        run = next(r for r in store.runs("remote") if r["workload"] == "rr")
        assert_throttled(rr.read_iops, 400, run["job_file"])  # the offered total, split over both hosts
        per_host = store.results(run["id"])
        assert len(per_host) == 2 and rr.read_iops == pytest.approx(sum(r["iops"] for r in per_host))
        assert all(0 < r["iops"] <= 200 * OVERSHOOT for r in per_host)
        merged = histogram.merge(store.histogram(r["id"]) for r in per_host)
        assert rr.read_lat_ns["p99"] == histogram.percentile(merged, 99)
        # each path's storage: the disks fio's disk_util names there (the disk under the file, as this
        # host's sysfs has it: fio reads /sys on the server's side)
        disk = device_facts.of_path(files[0])["disks"][0]["disk"]  # type: ignore[index]
        storage = rr.host_facts["storage"]
        assert [(e["host"], e["path"], e["fio_disks"]) for e in storage] == [  # type: ignore[index,union-attr]
            (s.address, str(f), [disk]) for s, f in zip(servers, files, strict=True)
        ]
        ops_run = next(r for r in store.runs("remote") if r["workload"] == "ops")
        lat = store.oplat(ops_run["id"])
        assert len(lat) == 100 and {r["host"] for r in lat} == {s.address for s in servers}


def test_write_to_remote_device_needs_destroy_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "w.toml"
    spec.write_text(
        '[campaign]\nname = "w"\n[[target]]\nname = "r"\nkind = "remote"\nhosts = ["127.0.0.1:9"]\n'
        'path = "/dev/sdz"\n[[workload]]\nname = "w"\nrw = "randwrite"\n'
    )
    assert main(["run", str(spec), "--db", str(tmp_path / "w.db")]) == 3
    assert "cannot check a remote device" in capsys.readouterr().err
    # a data file on the remote host is as much somebody's data as a device (vmio cannot look)
    spec.write_text(spec.read_text().replace("/dev/sdz", "/srv/data/db.img"))
    assert main(["run", str(spec), "--db", str(tmp_path / "w.db")]) == 3
    assert "add --destroy-data /srv/data/db.img" in capsys.readouterr().err


def exact_percentile(values: list[int], p: float) -> int:
    """The p-th percentile of every operation: the smallest value with at least p % of them at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def test_merged_percentiles_agree_with_every_operation_logged_by_fio(
    servers: list[LocalFioServer], scratch: Path, tmp_path: Path
) -> None:
    """Percentiles merged across two hosts against fio's own per-operation latencies.

    fio's "All clients" aggregate carries no percentiles, so the referee is fio's latency log of every
    operation on both hosts, read here as plain text: each merged percentile must fall in the same
    histogram bucket as the exact one, or the next. The two hosts differ (one file in the page cache, one
    read from the disk), so a merge that favoured either host, or averaged their percentiles, would miss."""
    cached, direct = scratch / "cached.img", scratch / "direct.img"
    for f in (cached, direct):
        f.write_bytes(os.urandom(16 << 20))
    with open(direct, "rb") as f:  # out of the page cache: its reads go to the disk
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    hosts = ", ".join(f'"{s.address}"' for s in servers)
    spec = tmp_path / "p.toml"
    spec.write_text(
        f'[campaign]\nname = "pct"\n[[target]]\nname = "pair"\nkind = "remote"\nhosts = [{hosts}]\n'
        f'paths = ["{cached}", "{direct}"]\nsize = "16M"\n'
        '[[workload]]\nname = "ops"\nrw = "randread"\nbs = "4k"\nops = 1500\ndirect = false\n'
    )
    db, work = tmp_path / "p.db", tmp_path / "w"
    assert main(["run", str(spec), "--db", str(db), "--workdir", str(work)]) == 0
    logs = sorted(work.rglob("ops-*_lat.*.log*"))  # total latency, as lat_percentiles=1 makes fio bin
    assert len(logs) == 2, logs
    every = [int(line.split(",")[1]) for log in logs for line in log.read_text().splitlines() if line.strip()]
    assert len(every) == 3000
    with Store(db) as store:
        [row] = summary.point_rows(store, "pct")
    per_host = [
        [int(line.split(",")[1]) for line in log.read_text().splitlines() if line.strip()] for log in logs
    ]
    assert exact_percentile(per_host[1], 50) > 3 * exact_percentile(per_host[0], 50), (
        "the hosts do not differ"
    )
    for p in (50, 99, 99.9):
        ours, exact = row.read_lat_ns[f"p{p:g}"], exact_percentile(every, p)
        assert abs(histogram.bucket_index(int(ours)) - histogram.bucket_index(exact)) <= 1, (p, ours, exact)


def test_a_seeded_log_is_put_on_each_server_once_for_the_targets_points_and_removed_after(
    servers: list[LocalFioServer], scratch: Path, tmp_path: Path
) -> None:
    """Three points replaying the campaign's seeded operations on two fio servers: each server gets the log
    by one put job, before the first point, every point replays that file (fio's own log of each operation
    counts the log's operations on each host), and nothing is left in vmio's folder on the servers' host."""
    _, hosts, paths = pair(servers, scratch)
    spec = tmp_path / "r.toml"
    spec.write_text(
        f'[campaign]\nname = "seeded"\nseed = 11\nrepetitions = 3\n[[target]]\nname = "pair"\nkind = "remote"\n'
        f'hosts = [{hosts}]\npaths = [{paths}]\nsize = "16M"\n'
        '[[workload]]\nname = "ops"\nrw = "randread"\nbs = "4k"\nops = 30\n'
    )
    db, work = tmp_path / "r.db", tmp_path / "work"
    assert main(["run", str(spec), "--db", str(db), "--workdir", str(work)]) == 0
    puts = sorted(work.rglob("put-iolog-*.fio"))
    assert len(puts) == 2 and len({p.parent for p in puts}) == 1, puts  # one log a server, one point put them
    put = [
        "".join(bytes.fromhex(h).decode() for h in re.findall(r"buffer_pattern=0x(\w+)", p.read_text()))
        for p in puts
    ]
    offsets = [int(line.split()[2]) for line in put[0].splitlines()[3:-1]]
    assert len(offsets) == 30 and put[0] == put[1]
    replayed = {
        m for job in work.rglob("job*.fio") for m in re.findall(r"^read_iolog=(.+)$", job.read_text(), re.M)
    }
    assert len(replayed) == 2, replayed  # the three points read the same two files
    with Store(db) as store:
        runs = store.runs("seeded")
        assert len(runs) == 3 and all(r["status"] == "done" for r in runs)
        for run in runs:  # fio's own record of each operation: the log's 30 on each host, at every point
            lat = store.oplat(run["id"])
            assert sorted(r["host"] for r in lat) == sorted([s.address for s in servers] * 30), run[
                "point_key"
            ]
    folders = {os.path.dirname(p) for p in replayed}
    assert len(folders) == 1 and not os.listdir(folders.pop())  # removed after the target's last point
