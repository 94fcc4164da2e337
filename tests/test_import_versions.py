"""``vmio import`` of fio JSON from every fio still in use (2.x and 3.x) and of bench-fio's result tree.

The files are in ``tests/data/fio-versions`` (its README says where each comes from). Every expected figure
below is the file's own number converted by hand by that fio version's definitions, written out here:
fio 2.x latencies are µs (× 1000 for ns), ``io_bytes`` is KiB up to fio 2.20 (× 1024 for bytes), and
bytes/s is ``1000 × bytes // runtime`` as fio 3.2 defines ``bw_bytes``."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from vmio.cli import main
from vmio.report import data, page
from vmio.store import Store

VERSIONS = Path(__file__).parent / "data" / "fio-versions"


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def imported(
    path: Path, db: Path, capsys: pytest.CaptureFixture[str], target: str = "fio"
) -> dict[str, dict[str, Any]]:
    code, out, err = cli(
        ["import", str(path), "--campaign", "c", "--target", target, "--db", str(db)], capsys
    )
    assert code == 0, err
    code, out, _ = cli(["show", "c", "--db", str(db), "--json"], capsys)
    return {r["point"]: r for r in json.loads(out)}


def per_job(db: Path) -> list[tuple[Any, ...]]:
    """The store's per-job rows (host, ddir, total_ios, p99, lat_stddev), read with SQL."""
    con = sqlite3.connect(db)
    try:
        return list(con.execute("SELECT host, ddir, total_ios, p99, lat_stddev FROM result ORDER BY id"))
    finally:
        con.close()


def test_fio_2_2_10_microseconds_and_io_bytes_in_kib(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    rows = imported(VERSIONS / "fio-2.2.10-randwrite.json", db, capsys)
    # no job options before fio 2.3: bs is fio's bytes over I/Os, 10551256 KiB × 1024 / 2637814 = 4096
    (row,) = rows.values()
    assert row["point"] == "fio/randwrite/bs=4k/offered=max/load=0/rep=1"
    assert row["fio_version"] == "fio-2.2.10"
    assert row["write_iops"] == 43962.833953 and row["write_ops"] == 2637814
    assert row["write_bw"] == 1000 * 10551256 * 1024 // 60001  # io_bytes in KiB, runtime 60001 ms
    lat = row["write_lat_ns"]  # fio's lat: min 63, mean 727.56, max 48219 µs; clat percentiles in µs
    assert (lat["min"], lat["mean"], lat["max"]) == (63_000, 727_560, 48_219_000)
    assert (lat["p50"], lat["p99"], lat["p99.9"]) == (652_000, 1_704_000, 6_048_000)
    assert row["read_iops"] == 0 and row["read_lat_ns"] is None  # the empty direction tells nothing
    assert per_job(db) == [("local", "write", 2637814, 1_704_000, 402.77 * 1000)]
    assert row["dev_busy_pct"] == 99.85


def test_fio_2_1_10_client_server_without_total_ios(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    (row,) = imported(VERSIONS / "fio-2.1.10-client-server.json", db, capsys).values()
    assert row["hosts"] == ["nodeA:8765", "nodeB:8765"] and row["fio_version"] == "fio-2.1.10"
    assert row["read_iops"] == 4066 + 3958  # whole numbers in fio 2.1; "All clients" is not added in
    # no total_ios before fio 2.1.14: fio's iops = 1000 × ios / runtime, read backwards
    assert row["read_ops"] == 121980 + 118744  # 4066 × 30000 / 1000, 3958 × 30001 / 1000 = 118743.958
    assert row["read_bw"] == 1000 * 488012 * 1024 // 30000 + 1000 * 475000 * 1024 // 30001
    assert row["read_lat_ns"]["min"] == 64_000 and row["read_lat_ns"]["max"] == 21_415_000
    assert row["read_lat_ns"]["p99"] is None  # two hosts and no bins: not mergeable, so absent
    assert sorted((h, p99) for h, _, _, p99, _ in per_job(db)) == [
        ("nodeA:8765", 700_000),
        ("nodeB:8765", 724_000),
    ]


def test_fio_2_18_json_plus_bins_by_bucket_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "v.db"
    (row,) = imported(VERSIONS / "fio-2.18-randread.jsonplus", db, capsys).values()
    assert row["point"] == "fio/qd8/bs=4k/qd=8/jobs=2/offered=max/load=0/rep=1"
    assert row["fio_version"] == "fio-2.18" and row["numjobs"] == 2 and row["iodepth"] == 8
    # bucket index → µs by fio 2.x's plat_idx_to_val (64 buckets a group): 100→100, 101→101, 130→133,
    # 131→135, 200→290, 201→294, 300→868, 330→1192, 420→3216, 480→6176, 600→22656, 700→63744.
    # The two clones' counts (500, 800, 3000, 2500, 4000, 4500, 2400, 2190, 99, 9, 1, 1) add up to
    # 500, 1300, 4300, 6800, 10800, 15300, 17700, 19890, 19989, 19998, 19999, 20000 of 20000:
    lat = row["read_lat_ns"]
    assert (lat["p50"], lat["p99"], lat["p99.9"]) == (290_000, 1_192_000, 3_216_000)
    assert lat["min"] == 34_000 and lat["max"] == 63_800_000
    assert sorted(p99 for _, _, _, p99, _ in per_job(db)) == [868_000, 1_192_000]  # each clone's own
    assert row["read_iops"] == 2000.0 and row["read_bw"] == 2 * 1000 * 40000 * 1024 // 10000


def test_fio_2_21_bins_in_microseconds_and_io_bytes_in_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    (row,) = imported(VERSIONS / "fio-2.21-randrw.jsonplus", db, capsys).values()
    assert row["point"] == "fio/mix/bs=8k/qd=4/offered=max/load=0/rep=1"
    assert row["read_bw"] == 1000 * 57344000 // 5000  # io_bytes in bytes from 2.21 (io_kbytes beside it)
    assert row["write_bw"] == 1000 * 24584192 // 5000
    assert row["read_ops"] == 7000 and row["write_ops"] == 3001
    # bins 100:1000, 290:4000, 434:1990, 1888:10 µs (reads); 99:1501, 241:1400, 2928:100 µs (writes)
    assert (row["read_lat_ns"]["p50"], row["read_lat_ns"]["p99.9"]) == (290_000, 1_888_000)
    assert (row["write_lat_ns"]["p50"], row["write_lat_ns"]["p99"]) == (99_000, 2_928_000)
    assert row["write_lat_ns"]["mean"] == 252_400


def test_bench_fio_tree_of_fio_3_1_is_one_swept_campaign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fio-plot's published data shape: fio 3.1 (``*_ns``, no ``bw_bytes``), one file per iodepth × numjobs;
    the campaign sweeps them and its report draws IOPS and latency against the queue depth."""
    db, tree = tmp_path / "v.db", VERSIONS / "benchfio-3.1"
    rows = imported(tree, db, capsys, target="sata")
    files = sorted(tree.rglob("*.json"))
    assert len(rows) == len(files) == 7
    for path in files:
        rw, qd, nj = re.fullmatch(r"(\w+)-(\d+)-(\d+)\.json", path.name).groups()  # type: ignore[union-attr]
        doc = json.loads(path.read_text())
        ddir = "read" if rw == "randread" else "write"
        row = rows[f"sata/iotest-{rw}/bs=4k/qd={qd}/jobs={nj}/offered=max/load=0/rep=1"]
        assert (row["iodepth"], row["numjobs"], row["fio_version"]) == (int(qd), int(nj), "fio-3.1")
        jobs = doc["jobs"]
        assert len(jobs) == int(nj)
        assert row[f"{ddir}_iops"] == pytest.approx(sum(j[ddir]["iops"] for j in jobs), rel=1e-12)
        # no bw_bytes in fio 3.1: fio 3.2's own definition from io_bytes (bytes since 2.21) and runtime
        assert row[f"{ddir}_bw"] == sum(1000 * j[ddir]["io_bytes"] // j[ddir]["runtime"] for j in jobs)
        assert row[f"{ddir}_lat_ns"]["min"] == min(j[ddir]["lat_ns"]["min"] for j in jobs)  # ns already
        if nj == "1":
            assert row[f"{ddir}_lat_ns"]["p99"] == jobs[0][ddir]["clat_ns"]["percentile"]["99.000000"]
    report = page.build(data.load(Store(db, readonly=True), "c"))  # the report's figures, not drawn
    depth = report.section("depth")
    assert depth is not None and len(depth.plots) == 1  # randread sweeps; randwrite ran at one point
    (plot,) = depth.plots
    for nj in (1, 2):  # a curve per job count over the queue depths, at the files' own IOPS
        docs = [
            json.loads((tree / f"RAID_SATA_SSD/4k/randread-{qd}-{nj}.json").read_text()) for qd in (1, 4, 16)
        ]
        want = [sum(j["read"]["iops"] for j in doc["jobs"]) for doc in docs]
        assert [x for x, _ in plot.values[f"sweep-0--numjobs-{nj}"]] == [1, 4, 16]
        assert [y for _, y in plot.values[f"sweep-0--numjobs-{nj}"]] == pytest.approx(want, rel=1e-12)
    assert "fio-3.1" in plot.caption  # the figure names the fio that made its points


def test_bench_fio_tree_made_here_with_fio_3_33(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, tree = tmp_path / "v.db", VERSIONS / "benchfio-3.33"
    rows = imported(tree, db, capsys)
    assert len(rows) == 5
    for path in sorted(tree.rglob("*.json")):
        rw, qd, nj = path.stem.split("-")
        doc = json.loads(path.read_text())
        ddir = "read" if rw == "randread" else "write"
        row = rows[f"fio/FIOJOB-{rw}/bs=4k/qd={qd}/jobs={nj}/offered=max/load=0/rep=1"]
        assert row["fio_version"] == doc["fio version"] == "fio-3.33"
        assert row[f"{ddir}_iops"] == pytest.approx(sum(j[ddir]["iops"] for j in doc["jobs"]), rel=1e-12)
        assert row[f"{ddir}_bw"] == sum(j[ddir]["bw_bytes"] for j in doc["jobs"])
        assert row[f"{ddir}_ops"] == sum(j[ddir]["total_ios"] for j in doc["jobs"])
    code, out, _ = cli(["show", "c", "--db", str(db)], capsys)
    assert code == 0 and out.splitlines()[0].split()[-1] == "fio"  # `show` names each point's fio
    assert all(line.split()[-1] == "3.33" for line in out.splitlines()[1:] if line.startswith("c:"))


def test_a_folder_without_fio_output_and_unified_rw_reporting_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli(["import", str(empty), "--campaign", "c", "--db", str(db)], capsys)
    assert code == 2 and "holds no fio output" in err and not db.exists()
    doc = json.loads((VERSIONS / "benchfio-3.33/null/4k/randread-1-1.json").read_text())
    job = doc["jobs"][0]
    job["mixed"] = job.pop("read")  # what unified_rw_reporting=1 writes instead of read/write/trim
    del job["write"], job["trim"]
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(doc))
    code, _, err = cli(["import", str(mixed), "--campaign", "c", "--db", str(db)], capsys)
    assert code == 2 and "unified_rw_reporting" in err and len(err.strip().splitlines()) == 1


def test_one_folder_of_every_version_is_one_campaign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole fixture folder (json and json+ files of six fio versions) imports as one campaign, each
    point with the fio that wrote its file."""
    rows = imported(VERSIONS, tmp_path / "v.db", capsys)
    files = [p for p in VERSIONS.rglob("*") if p.suffix in (".json", ".jsonplus")]
    by_file = {json.loads(p.read_text()[p.read_text().index("{") :])["fio version"] for p in files}
    assert {r["fio_version"] for r in rows.values()} == by_file == {
        "fio-2.1.10", "fio-2.2.10", "fio-2.18", "fio-2.21", "fio-3.1", "fio-3.33"
    }  # fmt: skip
    assert len(rows) == len(files) == 16  # one job name per file here
