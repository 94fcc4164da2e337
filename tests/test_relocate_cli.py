"""``vmio relocate`` end to end: analyze, plan, evaluate (the seed's FFSB-like gains), bad input."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vmio.cli import main
from vmio.membal.reference import lru_hits
from vmio.relocate.heat import ADDRESS_ROWS, heat_over_time
from vmio.relocate.plan_io import read_plan
from vmio.traces.readers import read_trace

from conftest import CLOUDPHYSICS_SAMPLE

DATA = Path(__file__).parent / "data" / "relocate"
SRC = str(Path(__file__).resolve().parents[1] / "src")
MiB = 1 << 20


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


def test_analyze_json_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "relocate",
            "analyze",
            str(DATA / "plain.csv"),
            str(DATA / "qemu.log"),
            "--json",
            "--plot-dir",
            str(tmp_path),
        ]
    )
    assert code == 0
    out = _json(capsys)
    assert out["requests"] == 7 and [i["name"] for i in out["images"]][:2] == ["vm1", "vm2"]
    assert out["images"][0]["accesses"] == 2
    assert (tmp_path / "access-distribution.png").exists() and (tmp_path / "heat-vm1.png").exists()
    assert main(["relocate", "analyze", str(DATA / "fio_v2.log")]) == 0
    assert "hot 1 extents" in capsys.readouterr().out


def test_bad_trace_gives_one_error_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("time,image,op,offset,length\n0,vm1,r,0,4096\n0,vm1,q,0,4096\n")
    assert main(["relocate", "analyze", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3:" in err and "'0,vm1,q,0,4096'" in err and "Traceback" not in err


def test_plan_from_traces_writes_a_valid_plan(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    code = main(
        [
            "relocate",
            "plan",
            str(DATA / "plain.csv"),
            "--extent",
            "4k",
            "--image",
            "vm1=1M",
            "--image",
            "vm2=2M",
            "--hot-bytes",
            "4k",
            "--zone",
            "after",
            "--order",
            "first",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    plan = read_plan(out)
    assert plan.layout.nextents == (256, 512) and plan.zone_extents == 2 and plan.order == "first"
    assert main(["relocate", "plan", str(DATA / "plain.csv"), "--image", "vm1", "-o", str(out)]) == 2


# `vmio relocate plan TRACE -o OUT` with the address space capped (what a plan over the disk's extents, one
# dense array each, could not stay under: it needed 2.7 GB for the trace below)
LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from vmio.cli import main
sys.exit(main(["relocate", "plan", sys.argv[1], "-o", sys.argv[2]]))
"""
# `vmio relocate analyze TRACE --plot-dir DIR` within 2 GiB (matplotlib's own start takes some): its heat map
# was one int64 a time bin and extent, 11 GiB for the trace below
LIMITED_PLOTS = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from vmio.cli import main
sys.exit(main(["relocate", "analyze", sys.argv[1], "--plot-dir", sys.argv[2]]))
"""


def _limited(script: str, *args: Path, **env: str) -> None:
    """``script`` (LIMITED or LIMITED_PLOTS) run on ``args`` in a Python of its own, one thread for numpy; it
    must succeed within its address-space cap."""
    env |= {
        "PYTHONPATH": SRC,
        "PATH": os.environ["PATH"],
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr


def test_plan_of_one_request_far_into_a_huge_image(tmp_path: Path) -> None:
    """One request ~28 TiB into its image (29.6 M extents of 1 MiB, the image's size inferred from it): the
    plan moves that extent into a zone of one extent and the zone's cold extent into the hole it left, and
    the command does it within 1 GiB of address space."""
    lbn = 60626179329  # in 512-byte sectors
    trace, out = tmp_path / "t.csv", tmp_path / "plan.json"
    trace.write_text(f"version,time,op,size,lbn\n1,0,2a,0,{lbn}\n")
    _limited(LIMITED, trace, out)
    hot = lbn * 512 // MiB  # the one extent accessed
    image = hot + 1  # no --image: the image ends with its highest extent accessed
    disk = 2 * image  # no --disk-size: the images, then as much again (the default hot budget: one image)
    zone = disk // 4  # no access outside the hot set: the seed's place, a quarter into the disk
    doc = json.loads(out.read_text())
    assert doc["images"] == [{"name": "t", "extents": image, "base_extent": 0}]
    assert doc["disk_bytes"] == disk * MiB
    assert (doc["zone"]["start_extent"], doc["zone"]["extents"]) == (zone, 1)
    assert doc["moves"] == [[0, zone, zone, hot], [0, hot, hot, zone]]
    plan = read_plan(out)  # checked again as `apply` reads it
    where = plan.physical_offset(np.zeros(3, np.int32), np.array([hot * MiB + 5, zone * MiB, MiB], np.int64))
    assert where.tolist() == [zone * MiB + 5, hot * MiB, MiB]


def test_the_heat_map_of_a_huge_image_sums_its_accesses_in_rows(tmp_path: Path) -> None:
    """The same one request's image analysed with figures: the heat map sums consecutive extents into at
    most ADDRESS_ROWS rows (every access kept, in the row of its extent), and both figures are written
    within 2 GiB of address space."""
    lbn = 60626179329
    hot = lbn * 512 // MiB
    trace = tmp_path / "t.csv"
    trace.write_text(f"version,time,op,size,lbn\n1,0,2a,0,{lbn}\n1,1,2a,8,0\n")
    grid, _edges, per = heat_over_time(read_trace(trace), 0, MiB, hot + 1)
    assert per == -(-(hot + 1) // ADDRESS_ROWS) and grid.shape == (50, -(-(hot + 1) // per))
    assert grid.shape[1] <= ADDRESS_ROWS and grid.sum() == 2
    assert grid[:, hot // per].sum() == 1 and grid[:, 0].sum() == 1
    plots = tmp_path / "plots"
    _limited(LIMITED_PLOTS, trace, plots, MPLCONFIGDIR=str(tmp_path / "mpl"))
    assert sorted(p.name for p in plots.iterdir()) == ["access-distribution.png", "heat-t.png"]


@pytest.mark.parametrize(("vms", "seed_gain"), [(2, 0.10), (3, 0.20)])
def test_uniform_ffsb_model_gain_is_at_least_the_seeds(
    vms: int, seed_gain: float, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "relocate",
            "evaluate",
            "--synthetic",
            "ffsb",
            "--ffsb-model",
            "uniform",
            "--vms",
            str(vms),
            "--image-size",
            "100G",
            "--hot",
            "2G",
            "--seed",
            "5",
            "--requests",
            "6000",
            "--json",
        ]
    )
    assert code == 0
    r = _json(capsys)
    assert r["gain"] >= seed_gain
    assert r["after"]["throughput_iops"] > r["before"]["throughput_iops"]
    assert r["after"]["mean_response_ms"] < r["before"]["mean_response_ms"]
    assert set(r["order_gains"]) == {"image", "first", "coaccess"}
    assert r["order_adds"] == pytest.approx(r["order_gains"]["coaccess"] - r["order_gains"]["image"])
    assert r["plan"]["zone"]["bytes"] == vms * (2 << 30)


def test_evaluate_a_trace_text_output_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "ba.png"
    plan = tmp_path / "p.json"
    code = main(
        [
            "relocate",
            "evaluate",
            "--trace",
            str(DATA / "fio_v3.log"),
            str(DATA / "plain.csv"),
            "--plot",
            str(png),
            "--save-plan",
            str(plan),
            "--policy",
            "elevator",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "before:" in out and "after:" in out and "in-zone order:" in out
    assert png.exists() and read_plan(plan).layout.names == ("/tmp/fiot/f", "vm1", "vm2")


def test_evaluate_rejects_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["relocate", "evaluate", "--synthetic", "ffsb", "--disk", "hp97560", "--requests", "10"]) == 2
    assert "images need" in capsys.readouterr().err
    assert main(["relocate", "evaluate", "--synthetic", "ffsb", "--policy", "sstf", "--requests", "10"]) == 2
    assert (
        main(["relocate", "evaluate", "--trace", str(DATA / "fio_v3.log"), "--open-loop", "--disk", "7200"])
        == 0
    )
    assert main(["relocate", "evaluate"]) == 2


@pytest.mark.skipif(
    not CLOUDPHYSICS_SAMPLE.is_file(), reason=f"needs the shared CloudPhysics trace {CLOUDPHYSICS_SAMPLE}"
)
def test_analyze_cache_curve_against_a_plain_lru(capsys: pytest.CaptureFixture[str]) -> None:
    """The CloudPhysics sample's pages (each request's 4 KiB pages, read here with the csv module) through
    a plain LRU at 16M, 256M and 1G: the exact curve matches it to the rounding, a SHARDS sample at rate
    0.01 within 0.02."""
    pages: list[int] = []
    with CLOUDPHYSICS_SAMPLE.open() as f:
        for row in csv.DictReader(f):
            start, size = int(row["lbn"]) * 512, int(row["size"])
            if size > 0:  # a request of no bytes touches no page
                pages += range(start // 4096, (start + size - 1) // 4096 + 1)
    want = [1 - lru_hits(pages, size) / len(pages) for size in (4096, 65536, 262144)]  # the plain LRU
    args = ["relocate", "analyze", str(CLOUDPHYSICS_SAMPLE), "--format", "cloudphysics", "--cache-curve"]
    for extra, tolerance in (([], 1e-6), (["--sample-rate", "0.01"], 0.02)):
        assert main([*args, "--cache", "16M,256M,1G", "--json", *extra]) == 0
        (image,) = _json(capsys)["images"]
        curve = image["cache_curve"]
        assert curve["accesses"] == len(pages)
        assert [p["cache_bytes"] for p in curve["points"]] == [16 << 20, 256 << 20, 1 << 30]
        assert [p["miss_ratio"] for p in curve["points"]] == pytest.approx(want, abs=tolerance), extra
    assert main([*args, "--cache", "0"]) == 2
    assert "every cache size must be at least one 4 KiB page" in capsys.readouterr().err
