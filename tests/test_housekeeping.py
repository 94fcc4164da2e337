"""Campaign housekeeping from the command line, with real fio: ls, rm, rename, run --name, a failed first
run that does not hold its name, a job file's own runtime and a fio workload's name."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.cli import main

from conftest import disk_folder, need

JOB = """[global]
ioengine=psync
direct=1
runtime={runtime}
[randread]
rw=randread
bs=4k
"""


def _job(folder: Path, runtime: str = "1") -> Path:
    job = folder / "ssd-test.fio"
    job.write_text(JOB.format(runtime=runtime))
    return job


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_failed_first_run_gives_its_name_back_and_ls_rm_rename_manage_campaigns(
    fio: str, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(scratch / "vmio.db")
    job = _job(scratch)
    # The newcomer: a target that cannot be made fails the first run ...
    assert main(["run", str(job), "--target", str(scratch / "missing" / "x.img"), "--db", db]) == 2
    # ... and the fixed command is not refused with "already stored": the campaign held no done point.
    assert main(["run", str(job), "--target", str(scratch / "t.img"), "--size", "8M", "--db", db]) == 0
    assert main(["run", str(job), "--target", str(scratch / "t.img"), "--size", "8M", "--db", db,
                 "--name", "second"]) == 0  # fmt: skip
    listed = _json(capsys, ["ls", "--json", "--db", db])
    assert isinstance(listed, list)
    assert [(c["name"], c["points_done"], c["points_failed"]) for c in listed] == [
        ("ssd-test", 1, 0),
        ("second", 1, 0),
    ]
    assert listed[0]["targets"] == ["target"] and listed[0]["workloads"] == ["ssd-test.fio:randread"]
    # the store itself agrees (read with sqlite3, not vmio)
    with sqlite3.connect(db) as raw:
        names = [r[0] for r in raw.execute("SELECT name FROM campaign ORDER BY id")]
    assert names == ["ssd-test", "second"]

    # `show` without a campaign lists campaigns; `show --json` stays the array of every point
    capsys.readouterr()
    assert main(["show", "--db", db]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:2] == ["campaign", "created"] and "second" in text
    points = _json(capsys, ["show", "--json", "--db", db])
    assert isinstance(points, list) and [p["campaign"] for p in points] == ["ssd-test", "second"]

    assert main(["rename", "second", "ssd-test", "--db", db]) == 2  # taken
    assert "already stored" in capsys.readouterr().err
    assert main(["rename", "second", "third", "--db", db]) == 0
    shown = _json(capsys, ["show", "third", "--json", "--db", db])
    assert isinstance(shown, list) and len(shown) == 1 and shown[0]["campaign"] == "third"
    assert shown[0]["read_iops"] > 0
    assert main(["rm", "third", "--db", db]) == 0
    assert main(["show", "third", "--db", db]) == 2
    assert "no campaign 'third'" in capsys.readouterr().err
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT COUNT(*) FROM run").fetchone()[0] == 1  # the removed points are gone
    assert main(["rm", "third", "--db", db]) == 2


def test_a_campaign_with_a_done_point_keeps_its_name(fio: str, scratch: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    db = str(scratch / "vmio.db")
    job = _job(scratch)
    assert main(["run", str(job), "--target", str(scratch / "t.img"), "--size", "8M", "--db", db]) == 0
    capsys.readouterr()
    assert main(["run", str(job), "--target", str(scratch / "u.img"), "--size", "8M", "--db", db]) == 2
    assert "already stored" in capsys.readouterr().err


def test_a_job_files_own_runtime_is_kept_unless_overridden(
    fio: str, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(scratch / "vmio.db")
    job = _job(scratch, runtime="3s")
    capsys.readouterr()
    assert main(["run", str(job), "--target", str(scratch / "t.img"), "--size", "8M", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "runtime=3000ms" in out and "runtime=3s" not in out.split("replaced")[-1]
    assert main(["run", str(job), "--target", str(scratch / "t.img"), "--size", "8M", "--runtime", "1s",
                 "--dry-run"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "runtime=1000ms" in out and "runtime=3s" in out  # the file's, listed as replaced
    assert main(["run", str(job), "--target", str(scratch / "t.img"), "--size", "8M", "--db", db]) == 0
    with sqlite3.connect(db) as raw:  # fio's own runtime of the measured job, as fio reported it
        (runtime_ms,) = raw.execute("SELECT runtime_ms FROM result WHERE role = 'measure'").fetchone()
    assert 2900 <= runtime_ms <= 3300


def _spec(folder: Path, workload: str) -> Path:
    spec = folder / "s.toml"
    spec.write_text(f'[campaign]\nname = "n"\n[[target]]\nname = "t"\npath = "{folder}/t.img"\n'
                    f'size = "8M"\n[[workload]]\n{workload}\n')  # fmt: skip
    return spec


def test_a_fio_workload_takes_a_name(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _job(scratch)
    spec = _spec(scratch, 'name = "mine"\nfio = "ssd-test.fio"')
    assert main(["run", str(spec), "--dry-run"]) == 0
    assert "## t/mine/bs=4k/" in capsys.readouterr().out
    (scratch / "two.fio").write_text("[a]\nrw=read\n[b]\nrw=write\n")
    spec = _spec(scratch, 'name = "mine"\nfio = "two.fio"')
    assert main(["run", str(spec), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "## t/mine:a/" in out and "## t/mine:b/" in out


def test_an_unknown_key_says_unknown_key(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(scratch, 'name = "w"\nrw = "read"\nnmae = "x"')
    assert main(["run", str(spec), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'nmae'" in err and f"{spec}:" in err


def _vm_spec(folder: Path, extra: str) -> Path:
    spec = folder / "vm.toml"
    spec.write_text(f'[campaign]\nname = "vm"\n[[target]]\nname = "v"\nkind = "qemu"\n'
                    f'backing = "{folder}/d.img"\nsize = "64M"\n{extra}\n'
                    '[[workload]]\nname = "w"\nrw = "randread"\n')  # fmt: skip
    return spec


@pytest.mark.parametrize(("cache", "aio"), [("writeback", "threads"), ("writethrough", "threads"),
                                            ("none", "native"), ("directsync", "native")])  # fmt: skip
def test_aio_follows_cache(scratch: Path, cache: str, aio: str, capsys: pytest.CaptureFixture[str]) -> None:
    from vmio.spec import QemuTarget, load_spec

    spec = _vm_spec(scratch, f'cache = "{cache}"')
    (target,) = load_spec(spec).targets
    assert isinstance(target, QemuTarget) and target.aio == aio
    assert main(["run", str(spec), "--dry-run"]) == 0  # and --dry-run says which it is
    assert f"cache {cache}, aio {aio})" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('cache = "writeback"\naio = "native"', "aio = 'native' needs O_DIRECT"),
        ('bus = "vfio"', "is not a PCI address"),
        ('bus = "nvme"\nmachine = "microvm"', "microvm has no PCI bus"),
    ],
)
def test_conflicting_keys_are_refused_by_dry_run(
    scratch: Path, capsys: pytest.CaptureFixture[str], extra: str, message: str
) -> None:
    spec = _vm_spec(scratch, extra)
    assert main(["run", str(spec), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert message in err and f"{spec}:" in err and err.count("\n") == 1


@pytest.fixture(scope="module")
def ran() -> Iterator[tuple[Path, str]]:
    """A store with one campaign of one done point (real fio), shared by the read-only tests below."""
    need("fio")
    with disk_folder() as folder:
        db = str(folder / "vmio.db")
        job = _job(folder, runtime="3")  # long enough for fio's per-second latency histograms
        assert main(["run", str(job), "--target", str(folder / "t.img"), "--size", "8M", "--db", db]) == 0
        yield folder, db


def test_export_to_stdout_and_the_format_from_the_suffix(
    ran: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = ran
    capsys.readouterr()
    assert main(["export", "ssd-test", "--format", "json", "-o", "-", "--db", db]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["campaign"] == "ssd-test" and len(doc["points"]) == 1
    assert main(["export", "ssd-test", "--format", "json", "-o", str(tmp_path / "x.json"), "--db", db]) == 0
    assert json.loads((tmp_path / "x.json").read_text()) == doc  # stdout holds what the file holds
    assert not (Path.cwd() / "-").exists()
    assert main(["export", "ssd-test", "--format", "csv", "-o", "-", "--db", db]) == 2
    assert "side files" in capsys.readouterr().err
    assert main(["export", "ssd-test", "-o", str(tmp_path / "p.csv"), "--db", db]) == 0
    with open(tmp_path / "p.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and float(rows[0]["read_iops"]) == pytest.approx(doc["points"][0]["read_iops"])
    assert (tmp_path / "p.series.csv").exists()
    assert main(["export", "ssd-test", "-o", str(tmp_path / "p.prom"), "--db", db]) == 0
    assert "vmio_read_operations_per_second" in (tmp_path / "p.prom").read_text()
    assert main(["export", "ssd-test", "-o", str(tmp_path / "p.xyz"), "--db", db]) == 2
    assert "cannot tell the export format" in capsys.readouterr().err


def test_a_bare_sla_number_is_refused_but_a_stored_one_still_loads(
    ran: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "copy.db")
    with sqlite3.connect(ran[1]) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    scratch = tmp_path
    capsys.readouterr()
    assert main(["show", "ssd-test", "--sla", "p99=2", "--db", db]) == 2
    assert "has no unit" in capsys.readouterr().err
    assert main(["show", "ssd-test", "--sla", "p99=2s", "--db", db]) == 0
    # a store written before units were required: its spec text holds sla = "p99=2" (2 s then)
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE campaign SET spec_text = replace(spec_text, '[campaign]', "
                    "'[campaign]' || char(10) || 'sla = \"p99=2\"')")  # fmt: skip
    capsys.readouterr()
    assert main(["report", "ssd-test", "--db", db, "-o", str(scratch / "r.html")]) == 0
    assert "IOPS at p99 &lt;= 2000 ms" in (scratch / "r.html").read_text()


def test_progress_counts_down_within_a_point_with_live_device_iops(fio: str, scratch: Path) -> None:
    from vmio.campaign import runner
    from vmio.cli.campaign import fio_campaign_text
    from vmio.spec import loads_spec
    from vmio.store import Store

    text = fio_campaign_text(str(_job(scratch, runtime="3")), str(scratch / "t.img"), "8M")
    seen: list[runner.Progress] = []
    with Store(scratch / "vmio.db") as store:
        outcome = runner.run(loads_spec(text), text, store, runner.Options(tick_s=0.25), seen.append)
    assert outcome.done == 1
    ticks = [p for p in seen if p.tick]
    left = [p.point_left_s for p in ticks]
    assert len(ticks) >= 6 and all(x is not None for x in left)
    assert left == sorted(left, reverse=True) and left[0] > 2.0 and left[-1] < 1.0  # type: ignore[operator]
    assert all(p.eta_s is not None and p.eta_s >= p.point_left_s for p in ticks)  # type: ignore[operator]
    # the device under the file, read from /proc/diskstats while fio runs: reads were seen
    assert any(p.iops for p in ticks)
    assert seen[-1].status == "done" and not seen[-1].tick and seen[-1].iops


def test_calibrate_shows_progress_and_human_rates(
    fio: str, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    image, db = scratch / "cal.img", str(scratch / "vmio.db")
    assert main(["calibrate", str(image), "--size", "16M", "--runtime", "50ms", "--db", db]) == 0
    captured = capsys.readouterr()
    steps = [line for line in captured.err.splitlines() if "calibrating" in line]
    assert (
        steps[0].startswith("[0/4]") and "randread 4k at queue depths 1," in steps[0] and "left)" in steps[0]
    )
    assert len(steps) == 4 and captured.err.rstrip().endswith("[4/4] calibrated")  # a file: reads and writes
    bw = [line for line in captured.out.splitlines() if "read_bw_by_qd" in line]
    assert (
        bw and re.search(r"qd1 \d+(\.\d+)? (KiB|MiB|GiB)/s", bw[0]) and "B/s" not in bw[0].replace("iB/s", "")
    )


def test_human_units_are_closed_form() -> None:
    from vmio.units import human_bytes, human_rate

    assert human_bytes(24684092 * 1024) == "23.5 GiB"  # the memory_bytes 24684092k
    assert human_rate(1_193_134_929) == "1.11 GiB/s"  # calibrate's 1,193,134,929 B/s
    assert (human_bytes(512), human_bytes(4096), human_bytes(150 << 20)) == ("512 B", "4.00 KiB", "150 MiB")


def test_report_figures_have_one_title_a_shaded_ramp_and_distinct_percentiles(
    ran: tuple[Path, str], tmp_path: Path
) -> None:
    from vmio.report import data, plots_percentiles
    from vmio.store import Store

    _, db = ran
    page = tmp_path / "r.html"
    assert main(["report", "ssd-test", "--db", db, "-o", str(page)]) == 0
    text = page.read_text()
    figures = re.findall(r"<figure.*?</figure>", text, flags=re.S)
    assert figures
    for fig in figures:
        (title,) = re.findall(r"<figcaption>(.*?)</figcaption>", fig)
        words = title.split(":")[0]
        assert fig.count(words) == 1, f"{words!r} appears more than once in its figure"
    (device,) = [f for f in figures if 'id="time-0"' in f]
    assert "--ramp-" in device and "start-up and ramp (not averaged)" in device
    with Store(db, readonly=True) as store:
        loaded = data.load(store, "ssd-test")
    (plot,) = plots_percentiles.over_time_plots(loaded, None)
    lines = {line.get_label().split()[-1]: line for ax in plot.figure.axes for line in ax.get_lines()}
    styles = {name: (line.get_linestyle(), line.get_marker()) for name, line in lines.items()}
    assert set(styles) == {"p50", "p99", "p99.9"} and len(set(styles.values())) == 3
    assert len({marker for _, marker in styles.values()}) == 3  # told apart by marker too, not only dashes


def test_block_sizes_are_spelled_alike_and_an_older_store_is_not_rerun(
    ran: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, source = ran
    db = str(tmp_path / "old.db")
    with sqlite3.connect(source) as s, sqlite3.connect(db) as copy:
        s.backup(copy)
        (key,) = copy.execute("SELECT point_key FROM run").fetchone()
        assert "/bs=4k/" in key  # the point's name spells its block size as compare and show --ops do
        # a store written before: the same point under bs=4096
        copy.execute("UPDATE run SET point_key = replace(point_key, '/bs=4k/', '/bs=4096/')")
    job = folder / "ssd-test.fio"
    capsys.readouterr()
    args = ["run", str(job), "--target", str(folder / "t.img"), "--size", "8M", "--db", db]
    assert main(args) == 0
    assert "0 done, 0 failed, 1 already done" in capsys.readouterr().out  # not measured again
    assert main([*args, "--force"]) == 0  # redone: the older row is replaced, not kept beside the new one
    with sqlite3.connect(db) as raw:
        assert [r[0] for r in raw.execute("SELECT point_key FROM run")] == [key]


def test_run_name_renames_a_toml_spec_too(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(scratch, 'name = "w"\nrw = "read"')
    assert main(["run", str(spec), "--dry-run", "--name", "other"]) == 0
    assert capsys.readouterr().out.startswith("campaign 'other': 1 points\n")
    assert main(["run", str(spec), "--dry-run", "--name", "bad\nname"]) == 2
    assert "control character" in capsys.readouterr().err
