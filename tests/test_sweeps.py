"""Sweeps people expect: queue depth and job lists, offered load as shares of the max point, stop_at, Poisson
arrivals. Real fio on a file; what fio itself wrote (its JSON output, the job file it ran) is the reference."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.errors import SpecError
from vmio.spec import loads_spec

from conftest import need

SPEC = """
[campaign]
name = "{name}"

[[target]]
name = "f"
kind = "host"
path = "{scratch}/disk.img"
size = "32M"

[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
iodepth = [1, 8]
runtime = "1s"
offered_iops = ["50%", "max"]
arrivals = "poisson"
stop_at = "{stop}"
"""


def write_spec(folder: Path, scratch: Path, name: str, stop: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(SPEC.format(name=name, scratch=scratch, stop=stop))
    return path


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def fio_iops(rundir: Path) -> float:
    """The measured jobs' read IOPS as fio's own JSON output gives them."""
    data = json.loads((rundir / "fio-output.txt").read_text())
    return float(sum(j["read"]["iops"] for j in data["jobs"] if j["jobname"].startswith("measure")))


@pytest.mark.fio
def test_a_sweep_stores_what_dry_run_promised(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    need("fio")
    spec = write_spec(tmp_path, scratch, "sw", "p99=10s")  # a bound no point reaches
    db, work = str(tmp_path / "v.db"), tmp_path / "work"
    code, dry, _ = cli(["run", str(spec), "--dry-run"], capsys)
    assert code == 0
    promised = re.findall(r"^## (\S+)", dry, re.M)
    assert promised == [
        "f/rr/bs=4k/qd=1/offered=max/load=0/rep=1",  # the max point runs before the share of it
        "f/rr/bs=4k/qd=1/offered=50%/load=0/rep=1",
        "f/rr/bs=4k/qd=8/offered=max/load=0/rep=1",
        "f/rr/bs=4k/qd=8/offered=50%/load=0/rep=1",
    ]
    assert "50% of the achieved IOPS of f/rr/bs=4k/qd=8/offered=max/load=0/rep=1" in dry
    assert "stops at its first point beyond p99 = 10000 ms" in dry
    assert dry.count("iodepth=8\n") == 2 and dry.count("iodepth=1\n") == 2

    code, out, _ = cli(["run", str(spec), "--db", db, "--workdir", str(work)], capsys)
    assert code == 0, out
    code, shown, _ = cli(["show", "sw", "--db", db, "--json"], capsys)
    rows = {r["point"]: r for r in json.loads(shown)}
    assert list(rows) == promised
    assert all(r["status"] == "done" for r in rows.values())
    with sqlite3.connect(db) as con:
        jobs = dict(con.execute("SELECT point_key, job_file FROM run").fetchall())
    con.close()
    for qd in (1, 8):
        max_key = f"f/rr/bs=4k/qd={qd}/offered=max/load=0/rep=1"
        share_key = f"f/rr/bs=4k/qd={qd}/offered=50%/load=0/rep=1"
        assert rows[max_key]["iodepth"] == rows[share_key]["iodepth"] == qd
        assert rows[max_key]["numjobs"] == 1 and rows[max_key]["offered_iops"] == "max"
        assert "offered_pct" not in rows[max_key] and "arrivals" not in rows[max_key]
        # fio's own achieved IOPS of the max point, halved, is the rate fio was given for the 50% point
        achieved = fio_iops(work / max_key.replace("/", "_"))
        assert rows[max_key]["read_iops"] == pytest.approx(achieved)
        rate = int(re.findall(r"^rate_iops=(\d+)$", jobs[share_key], re.M)[0])
        assert rate == round(achieved / 2)
        assert "rate_process=poisson" in jobs[share_key] and f"iodepth={qd}" in jobs[share_key]
        assert rows[share_key]["offered_iops"] == rate
        assert rows[share_key]["offered_pct"] == 50.0 and rows[share_key]["arrivals"] == "poisson"
    code, text, _ = cli(["show", "sw", "--db", db], capsys)
    assert "offered IOPS" in text and f"{rows[share_key]['offered_iops']} (50%)" in text
    # the report tells the queue depths apart (not as repetitions of one point)
    page = tmp_path / "sw.html"
    code, _, _ = cli(["report", "sw", "--db", db, "-o", str(page)], capsys)
    html = page.read_text()
    assert code == 0 and "rr qd=1" in html and "rr qd=8" in html
    sweeps = re.search(r'<section id="sweeps">.*?</section>', html, re.S)
    assert sweeps is not None
    assert "iodepth = [1, 8]" in sweeps.group(0) and "arrivals = poisson" in sweeps.group(0)
    assert "shares of the max point" in sweeps.group(0) and "stop_at p99&lt;=10000ms" in sweeps.group(0)


@pytest.mark.fio
def test_stop_at_ends_the_sweep_and_the_campaign_says_where(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    need("fio")
    spec = write_spec(tmp_path, scratch, "st", "p99=1us")  # every real I/O is slower than 1 us
    db = str(tmp_path / "v.db")
    code, out, _ = cli(["run", str(spec), "--db", db], capsys)
    assert code == 0, out
    code, shown, _ = cli(["show", "st", "--db", db, "--json"], capsys)
    rows = json.loads(shown)
    # the max point is the share's reference (its latency stops nothing); the 50% point is past the bound
    assert [r["point"] for r in rows] == [
        "f/rr/bs=4k/qd=1/offered=max/load=0/rep=1",
        "f/rr/bs=4k/qd=1/offered=50%/load=0/rep=1",
    ]
    p99_ms = rows[1]["read_lat_ns"]["p99"] / 1e6
    code, listed, _ = cli(["ls", "--db", db, "--json"], capsys)
    (stop,) = json.loads(listed)[0]["stops"]
    assert stop["point"] == "f/rr/bs=4k/qd=1/offered=50%/load=0/rep=1"
    assert stop["metric"] == "p99" and stop["bound_ms"] == 0.001
    assert stop["value_ms"] == pytest.approx(p99_ms, rel=1e-3)
    assert stop["not_run"] == [
        "f/rr/bs=4k/qd=8/offered=max/load=0/rep=1",
        "f/rr/bs=4k/qd=8/offered=50%/load=0/rep=1",
    ]
    assert "stopped at f/rr/bs=4k/qd=1/offered=50%/load=0/rep=1" in out and "2 later point(s) not run" in out
    # a re-run stops where the first did: nothing more runs
    code, again, _ = cli(["run", str(spec), "--db", db], capsys)
    assert code == 0 and "0 done, 0 failed, 2 already done" in again
    code, text, _ = cli(["show", "st", "--db", db], capsys)
    assert "2 later point(s) not run" in text
    page = tmp_path / "st.html"
    code, _, _ = cli(["report", "st", "--db", db, "-o", str(page)], capsys)
    stops = re.search(r'<ul class="stops">.*?</ul>', page.read_text(), re.S)
    assert code == 0 and stops is not None
    assert "stopped at f/rr/bs=4k/qd=1/offered=50%/load=0/rep=1" in stops.group(0)
    assert "not run: f/rr/bs=4k/qd=8/offered=max/load=0/rep=1" in stops.group(0)


def test_job_counts_sweep_on_hosts_and_in_vms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "j.toml"
    spec.write_text(
        '[campaign]\nname = "j"\n[[target]]\nname = "h"\nkind = "host"\npath = "/var/lib/vmio/x.img"\n'
        'size = "16M"\n[[target]]\nname = "vm"\nkind = "qemu"\nbacking = "/var/lib/vmio/y.img"\nsize = "16M"\n'
        'jobs_per_vm = [1, 3]\n[[workload]]\nname = "w"\nrw = "randread"\nnumjobs = [2, 4]\n'
        "offered_iops = 1200\n"
    )
    code, dry, _ = cli(["run", str(spec), "--dry-run"], capsys)
    assert code == 0
    sections = dict(re.findall(r"^## (\S+).*?\n(.*?)(?=^## |\Z)", dry, re.M | re.S))
    assert list(sections) == [
        "h/w/bs=4k/jobs=2/offered=1200/load=0/rep=1",
        "h/w/bs=4k/jobs=4/offered=1200/load=0/rep=1",
        "vm/w/bs=4k/jobs=1/offered=1200/load=0/rep=1",
        "vm/w/bs=4k/jobs=3/offered=1200/load=0/rep=1",
    ]
    for key, jobs in zip(sections, (2, 4, 1, 3), strict=True):
        assert f"numjobs={jobs}\n" in sections[key]
        assert f"rate_iops={1200 // jobs}\n" in sections[key]  # the total shared over the swept jobs


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ('offered_iops = ["50%"]', 'a share is of the achieved IOPS of the "max" point, which runs first'),
        ('offered_iops = ["150%", "max"]', "outside (0%, 100%]"),
        ('arrivals = "poisson"', 'offered_iops is only "max"'),
        ('arrivals = "bursty"', "bursty"),
        ("iodepth = [4, 4]", "lists a value twice"),
        ('stop_at = "p99=5"', "has no unit"),
    ],
)
def test_sweep_keys_refuse_what_cannot_run(workload: str, message: str) -> None:
    text = f'[campaign]\nname = "x"\n[[target]]\nname = "h"\nkind = "host"\npath = "/x"\n[[workload]]\nname = "w"\nrw = "read"\n{workload}\n'
    with pytest.raises(SpecError) as err:
        loads_spec(text, "x.toml")
    assert message in str(err.value) and "x.toml:" in str(err.value)


def test_a_campaign_without_sweeps_keeps_its_keys_and_canonical_text() -> None:
    text = '[campaign]\nname = "x"\n[[target]]\nname = "h"\nkind = "host"\npath = "/x"\n[[workload]]\nname = "w"\nrw = "read"\niodepth = 4\noffered_iops = [100, "max"]\n'
    camp = loads_spec(text)
    assert [p.key for p in camp.points()] == [
        "h/w/bs=4k/offered=100/load=0/rep=1",
        "h/w/bs=4k/offered=max/load=0/rep=1",
    ]
    for newer in ("iodepth_sweep", "numjobs_sweep", "stop_at", "arrivals", "jobs_per_vm_sweep"):
        assert newer not in camp.canonical()
