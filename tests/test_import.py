"""``vmio import``: fio's JSON and json+ output from runs made without vmio become stored points with fio's
own figures. The reference is fio's JSON itself, read here with the json module (not vmio's parser)."""

from __future__ import annotations

import json
import math
import shutil
import socket
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from vmio.cli import main

from conftest import need

EXAMPLES = Path(__file__).parent / "data" / "fio-examples"
CLIENT_SERVER = EXAMPLES / "client-server-2hosts.jsonplus"  # two `fio --server` on 127.0.0.1 (see README)

JOB = """[global]
ioengine=psync
filename={scratch}/data.img
size=8M
runtime=1
time_based=1
[rr]
rw=randread
bs=4k
numjobs=2
iodepth=1
[sw]
rw=write
bs=64k
"""


def fio_doc(path: Path) -> dict[str, Any]:
    text = path.read_text()
    return dict(json.loads(text[text.index("{") :]))


def fio_jobs(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [j for j in doc.get("client_stats", doc.get("jobs", [])) if j["jobname"] == name]


def reference_percentile(jobs: list[dict[str, Any]], ddir: str, pct: float) -> int:
    """fio's own rule over the jobs' summed json+ bins: the first bin at which the count reaches pct %."""
    bins: dict[int, int] = {}
    for j in jobs:
        for value, count in j[ddir]["clat_ns"]["bins"].items():
            bins[int(value)] = bins.get(int(value), 0) + count
    total, seen = sum(bins.values()), 0
    for value in sorted(bins):
        seen += bins[value]
        if seen >= math.ceil(total * pct / 100):
            return value
    raise AssertionError("no bins")


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def shown(db: Path, campaign: str, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    code, out, _ = cli(["show", campaign, "--db", str(db), "--json"], capsys)
    assert code == 0
    return {r["point"]: r for r in json.loads(out)}


@pytest.mark.fio
@pytest.mark.parametrize("form", ["json", "json+"])
def test_import_keeps_fios_own_figures(
    form: str, scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    need("fio")
    job = tmp_path / "two.fio"
    job.write_text(JOB.format(scratch=scratch))
    out = tmp_path / "out.json"
    subprocess.run(["fio", f"--output-format={form}", f"--output={out}", str(job)], check=True, timeout=60,
                   cwd=tmp_path, capture_output=True)  # fmt: skip
    doc, db = fio_doc(out), tmp_path / "v.db"
    code, printed, _ = cli(
        ["import", str(out), "--campaign", "mine", "--target", "lab", "--db", str(db)], capsys
    )
    assert code == 0, printed
    rows = shown(db, "mine", capsys)
    assert list(rows) == [
        "lab/rr/bs=4k/qd=1/jobs=2/offered=max/load=0/rep=1",
        "lab/sw/bs=64k/offered=max/load=0/rep=1",
    ]
    rr, sw = rows.values()
    rr_jobs, sw_jobs = fio_jobs(doc, "rr"), fio_jobs(doc, "sw")
    assert len(rr_jobs) == 2 and rr["numjobs"] == 2 and rr["iodepth"] == 1
    assert rr["read_iops"] == pytest.approx(sum(j["read"]["iops"] for j in rr_jobs), rel=1e-12)
    assert rr["read_bw"] == pytest.approx(sum(j["read"]["bw_bytes"] for j in rr_jobs), rel=1e-12)
    assert sw["write_iops"] == pytest.approx(sw_jobs[0]["write"]["iops"], rel=1e-12)
    assert rr["write_iops"] == 0 and rr["write_lat_ns"] is None  # no writes: nothing to tell
    for p in ("50", "99", "99.9"):  # one job: fio's percentile exactly
        assert sw["write_lat_ns"][f"p{p}"] == sw_jobs[0]["write"]["clat_ns"]["percentile"][f"{float(p):.6f}"]
    if form == "json+":  # two jobs: merged over their bins by fio's own rule
        for p in (50.0, 99.0, 99.9):
            assert rr["read_lat_ns"][f"p{p:g}"] == reference_percentile(rr_jobs, "read", p)
    else:  # fio recorded no bins: a two-job percentile cannot be merged, so it is absent, not zero
        assert rr["read_lat_ns"]["p99"] is None
    assert rr["read_lat_ns"]["min"] == min(j["read"]["lat_ns"]["min"] for j in rr_jobs)
    assert rr["usr_cpu"] == pytest.approx(sum(j["usr_cpu"] for j in rr_jobs), abs=1e-3)
    assert rr["sys_cpu"] == pytest.approx(sum(j["sys_cpu"] for j in rr_jobs), abs=1e-3)
    # not recorded by fio: absent, never zero
    assert rr["cpu_usr_pct"] is None and rr["dev_await_ms"] is None and rr["accel"] is None
    # fio's disk_util is the whole run's (issue 38): two jobs of one file do not each keep the disk busy, so
    # neither point has it; it is stored once for the file, which ls --json lists and each of its points in
    # show --json names (imported_file)
    assert doc.get("disk_util"), "fio measured no disk here: nothing to attribute"
    assert "disk_util" not in rr and rr["dev_busy_pct"] is None and sw["dev_busy_pct"] is None
    the_file = {"file": str(out.resolve()), "jobs": ["rr", "sw"], "disk_util": doc["disk_util"]}
    assert rr["imported_file"] == sw["imported_file"] == the_file
    code, listed, _ = cli(["ls", "--json", "--db", str(db)], capsys)
    (files,) = [c["imported_files"] for c in json.loads(listed) if c["name"] == "mine"]
    assert files == [the_file]
    code, text, _ = cli(["show", "mine", "--db", str(db)], capsys)  # the table says it under the points
    disk = doc["disk_util"][0]
    assert (
        f"{out.resolve()} (2 jobs: rr, sw): disk busy over the whole run {disk['name']} {disk['util']:.1f} %"
        in text
    )
    with sqlite3.connect(db) as c:  # once: one row for the file, none of it in either point's facts
        assert c.execute("SELECT COUNT(*) FROM imported_file").fetchone() == (1,)
        assert not any("disk_util" in text for (text,) in c.execute("SELECT host_json FROM run"))
    # a file of one job: that job's busy % is fio's util
    one = tmp_path / "one.json"
    subprocess.run(["fio", f"--output-format={form}", f"--output={one}", f"--filename={scratch}/data.img", "--size=8M",
                    "--runtime=300ms", "--time_based", "--ioengine=psync", "--name=solo", "--rw=randread"],
                   check=True, timeout=60, capture_output=True)  # fmt: skip
    assert cli(["import", str(one), "--campaign", "solo", "--target", "lab", "--db", str(db)], capsys)[0] == 0
    (solo,) = shown(db, "solo", capsys).values()
    util = fio_doc(one)["disk_util"]
    assert solo["disk_util"] == solo["imported_file"]["disk_util"] == util
    assert solo["dev_busy_pct"] == util[0]["util"] and solo["device"] == util[0]["name"]
    # the same file again is a second repetition
    code, printed, _ = cli(
        ["import", str(out), "--campaign", "mine", "--target", "lab", "--db", str(db)], capsys
    )
    assert code == 0 and "lab/rr/bs=4k/qd=1/jobs=2/offered=max/load=0/rep=2" in printed


def test_import_of_a_client_server_run_with_two_hosts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, db = fio_doc(CLIENT_SERVER), tmp_path / "v.db"
    code, _, _ = cli(["import", str(CLIENT_SERVER), "--campaign", "cs", "--db", str(db)], capsys)
    assert code == 0
    (row,) = shown(db, "cs", capsys).values()
    jobs = fio_jobs(doc, "rr")
    hosts = sorted(f"{j['hostname']}:{j['port']}" for j in jobs)
    assert len(hosts) == 2 and row["hosts"] == hosts
    assert row["read_iops"] == pytest.approx(sum(j["read"]["iops"] for j in jobs), rel=1e-12)
    everyone = fio_jobs(doc, "All clients")[0]["read"]["iops"]  # fio's own sum over the clients
    assert row["read_iops"] == pytest.approx(everyone, rel=1e-6)
    for p in (50.0, 99.0, 99.9):
        assert row["read_lat_ns"][f"p{p:g}"] == reference_percentile(jobs, "read", p)
    with sqlite3.connect(db) as con:  # each host's own figures, as fio gave them
        stored = {(h, p99) for h, p99 in con.execute("SELECT host, p99 FROM result")}
    con.close()
    assert stored == {
        (f"{j['hostname']}:{j['port']}", j["read"]["clat_ns"]["percentile"]["99.000000"]) for j in jobs
    }
    assert [d["util"] for d in row["disk_util"]] == [d["util"] for d in doc["disk_util"]]


def test_import_refuses_what_is_not_fio_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    db = tmp_path / "v.db"
    code, _, err = cli(["import", str(bad), "--campaign", "x", "--db", str(db)], capsys)
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [bad]  # nothing half-stored: not even an empty store
    code, _, err = cli(["import", str(tmp_path / "missing.json"), "--campaign", "x", "--db", str(db)], capsys)
    assert code == 2 and "missing.json: no such file" in err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.fio
def test_import_of_a_live_client_server_run(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two `fio --server` on 127.0.0.1, one client run with two --client connections, imported."""
    need("fio")
    job = tmp_path / "cs.fio"
    job.write_text(f"[global]\nioengine=psync\nsize=8M\nruntime=1\ntime_based=1\n"
                   f"[rr]\nrw=randread\nbs=4k\nfilename={scratch}/cs.img\n")  # fmt: skip
    ports = [free_port(), free_port()]
    servers = [subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{p}"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for p in ports]  # fmt: skip
    try:
        out = tmp_path / "cs.json"
        argv = ["fio", "--output-format=json+"]
        for p in ports:
            argv += [f"--client=ip:127.0.0.1,{p}", str(job)]
        for _ in range(50):  # the servers listen within a moment
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path)
            # fio's client exits 0 even when a server is not listening yet ("failed to connect"): retry then too
            if done.returncode == 0 and "failed to connect" not in done.stderr:
                break
            time.sleep(0.2)
        assert done.returncode == 0 and "failed to connect" not in done.stderr, done.stderr
        out.write_text(done.stdout)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)
    doc, db = fio_doc(out), tmp_path / "v.db"
    code, _, _ = cli(["import", str(out), "--campaign", "live", "--target", "pair", "--db", str(db)], capsys)
    assert code == 0
    (row,) = shown(db, "live", capsys).values()
    jobs = fio_jobs(doc, "rr")
    assert row["hosts"] == sorted(f"127.0.0.1:{p}" for p in ports)
    assert row["read_iops"] == pytest.approx(sum(j["read"]["iops"] for j in jobs), rel=1e-12)
    for p in (50.0, 99.0):
        assert row["read_lat_ns"][f"p{p:g}"] == reference_percentile(jobs, "read", p)


STORES = Path(__file__).parent / "data" / "stores"


@pytest.mark.parametrize("written", ["issue 38, round 1", "before issue 38"])
def test_migration_11_stores_a_files_disk_util_once(
    written: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tests/data/stores/import-v10.db: ``vmio import`` (schema 10) of fio's JSON of two jobs (a, b: one run,
    its disk_util in each point's facts as ``fio_disk_util_of_file``), then of one job (``one``: its own
    ``fio_disk_util`` and busy %). Before issue 38 every point held a copy as ``fio_disk_util`` with its util
    as busy %; that store is made from the fixture here. Migration 11 keeps it once per file and takes the
    busy % off the points of the two-job file."""
    db = tmp_path / "v.db"
    shutil.copy(STORES / "import-v10.db", db)
    with sqlite3.connect(db) as c:
        facts = [json.loads(t) for (t,) in c.execute("SELECT host_json FROM run ORDER BY id")]
        two, one = facts[0]["fio_disk_util_of_file"], facts[2]["fio_disk_util"]  # as fio wrote them
        if written == "before issue 38":
            for run_id in (1, 2):
                old = {
                    k: v
                    for k, v in facts[run_id - 1].items()
                    if k not in ("fio_disk_util_of_file", "fio_file_jobs")
                }
                c.execute("UPDATE run SET host_json = ?, dev_busy_pct = ?, device = 'vda' WHERE id = ?",
                          (json.dumps({**old, "fio_disk_util": two}), two[0]["util"], run_id))  # fmt: skip
                c.execute(
                    "INSERT INTO run_metric VALUES (?, 'dev:vda', 'busy_pct', ?)", (run_id, two[0]["util"])
                )
    for _ in ("read through a copy in memory", "migrated by a write"):
        rows = shown(db, "imp", capsys)
        a, b, solo = rows.values()
        assert a["imported_file"] == b["imported_file"] and a["imported_file"]["disk_util"] == two
        assert a["imported_file"]["jobs"] == ["a", "b"] and solo["imported_file"]["jobs"] == ["one"]
        assert "disk_util" not in a and a["dev_busy_pct"] is None and b["dev_busy_pct"] is None
        assert solo["disk_util"] == one and solo["dev_busy_pct"] == one[0]["util"]
        code, listed, _ = cli(["ls", "--json", "--db", str(db)], capsys)
        (files,) = [c["imported_files"] for c in json.loads(listed) if c["name"] == "imp"]
        assert [f["disk_util"] for f in files] == [two, one]
        assert cli(["rename", "imp", "imp2", "--db", str(db)], capsys)[0] == 0  # a write: migrates the file
        assert cli(["rename", "imp2", "imp", "--db", str(db)], capsys)[0] == 0
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM imported_file").fetchone() == (2,)
        assert not any("fio_disk_util_of_file" in t for (t,) in c.execute("SELECT host_json FROM run"))
        assert c.execute("SELECT COUNT(*) FROM run_metric WHERE metric = 'busy_pct'").fetchone() == (1,)
