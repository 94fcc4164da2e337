"""Real fio on a file and on a loop device, through the whole spine: spec → fio → samplers → store."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rates import assert_throttled
from vmio.cli import main
from vmio.fio import output
from vmio.metrics.sampler import window_means
from vmio.stats import histogram
from vmio.store import Store
from vmio.store import rows as summary

from conftest import need

pytestmark = pytest.mark.fio


def spec(path: Path, target: str, workloads: str, name: str = "t") -> Path:
    text = f'[campaign]\nname = "{name}"\n\n{target}\n{workloads}'
    file = path / f"{name}.toml"
    file.write_text(text)
    return file


def file_target(scratch: Path) -> str:
    return f'[[target]]\nname = "bare"\nkind = "host"\npath = "{scratch}/disk.img"\nsize = "64M"\n'


SWEEP = """
[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "2s"
ramp = "500ms"
offered_iops = [200, 500, 1000]

[[workload]]
name = "rw"
rw = "randwrite"
bs = "4k"
iodepth = 4
runtime = "2s"
load_processes = [2]

[[workload]]
name = "ops"
rw = "randread"
bs = "4k"
ops = 100
load_processes = [0, 2]
"""


@pytest.fixture(scope="module")
def file_campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path]:
    scratch = Path("/var/tmp") / f"vmio-test-module-{os.getpid()}"
    scratch.mkdir(exist_ok=True)
    work = tmp_path_factory.mktemp("work")
    db = work / "vmio.db"
    code = main(
        [
            "run",
            str(spec(work, file_target(scratch), SWEEP)),
            "--db",
            str(db),
            "--workdir",
            str(work / "runs"),
        ]
    )
    assert code == 0
    yield Store(db), work / "runs"
    for f in scratch.iterdir():
        f.unlink()
    scratch.rmdir()


def need_iostat() -> None:
    if shutil.which("iostat") is None:
        pytest.skip("needs iostat (Debian sysstat; make test installs it)")


def fio_json(rundir: Path) -> dict[str, object]:
    out = output.extract_json((rundir / "fio-output.txt").read_text())[0]
    return out


def test_every_point_is_stored_done(file_campaign: tuple[Store, Path]) -> None:
    store, _ = file_campaign
    rows = summary.point_rows(store, "t")
    assert len(rows) == 3 + 1 + 2
    assert {r.status for r in rows} == {"done"}
    for r in rows:
        assert (
            r.accel is None and r.metric("dev_busy_pct") is not None and r.metric("cpu_usr_pct") is not None
        )
        assert r.host_facts["fio_version"].startswith("fio-")


def test_stored_iops_equal_fios_own_output(file_campaign: tuple[Store, Path]) -> None:
    store, runs = file_campaign
    for run in store.runs("t"):
        doc = fio_json(runs / run["point_key"].replace("/", "_"))
        fio_iops = [
            (j["jobname"], d, j[d]["iops"])
            for j in doc["jobs"]
            for d in ("read", "write")
            if j[d]["total_ios"]
        ]
        stored = [(r["job"], r["ddir"], r["iops"]) for r in store.results(run["id"])]
        assert stored == fio_iops


def test_offered_rate_is_asked_of_fio_and_kept(file_campaign: tuple[Store, Path]) -> None:
    """Each throttled point's job file asks fio for the offered rate, and fio's own rate keeps under it
    (whether fio reaches it depends on how busy the machine is, so that is not asserted)."""
    store, _ = file_campaign
    jobs = {r["point_key"]: r["job_file"] for r in store.runs("t")}
    throttled = [row for row in summary.point_rows(store, "t") if row.workload == "rr"]
    assert throttled
    for row in throttled:
        assert row.offered_iops is not None
        assert_throttled(row.read_iops, row.offered_iops, jobs[row.point])


def test_load_processes_run_beside_the_measured_job(file_campaign: tuple[Store, Path]) -> None:
    store, _ = file_campaign
    for run in store.runs("t"):
        roles = [r["role"] for r in store.results(run["id"])]
        assert roles.count("measure") == 1
        if run["workload"] == "ops":
            # fio is asked for the loads; with exitall they stop when the 100 measured operations are done,
            # which on a busy host can be before a load's first I/O (fio keeps no row for a job of no I/O)
            assert f"numjobs={run['load_processes']}" in run["job_file"] or not run["load_processes"]
            assert roles.count("load") <= run["load_processes"]
        else:
            assert roles.count("load") == run["load_processes"]


def test_ops_runs_keep_every_operation(file_campaign: tuple[Store, Path]) -> None:
    store, _ = file_campaign
    ops_runs = [r for r in store.runs("t") if r["workload"] == "ops"]
    assert len(ops_runs) == 2
    for run in ops_runs:
        lat = store.oplat(run["id"])
        assert len(lat) == 100
        (measure,) = [r for r in store.results(run["id"]) if r["role"] == "measure"]
        assert measure["total_ios"] == 100
        ns = [r["lat_ns"] for r in lat]
        # fio logs the same operations it summarises: min and max agree to the microsecond.
        assert abs(min(ns) - measure["lat_min"]) < 1000 and abs(max(ns) - measure["lat_max"]) < 1000


def test_merged_percentiles_come_from_histograms(file_campaign: tuple[Store, Path]) -> None:
    store, _ = file_campaign
    run = next(r for r in store.runs("t") if r["workload"] == "rw")
    (res,) = [r for r in store.results(run["id"]) if r["role"] == "measure"]
    bins = store.histogram(res["id"])
    assert sum(bins.values()) == res["total_ios"]
    row = summary.point_row(store, "t", run)
    assert row.write_lat_ns["p99"] == histogram.percentile(bins, 99) == res["p99"]


def test_show_json_has_the_contract_fields(
    file_campaign: tuple[Store, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = file_campaign
    assert main(["show", "t", "--db", store.path, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    need = {"campaign", "target", "workload", "bs", "offered_iops", "load_processes", "repetition", "status",
            "accel", "read_iops", "write_iops", "read_bw", "write_bw", "read_lat_ns", "write_lat_ns",
            "dev_read_iops", "dev_write_iops", "dev_busy_pct", "cpu_usr_pct", "cpu_sys_pct", "cpu_iowait_pct",
            "cpu_steal_pct"}  # fmt: skip
    assert all(need <= set(r) for r in rows)
    lat = next(r["read_lat_ns"] for r in rows if r["read_lat_ns"])
    assert set(lat) >= {"min", "mean", "max", "p50", "p99", "p99.9"}
    assert {r["offered_iops"] for r in rows} == {200, 500, 1000, "max"}


def test_show_table_and_exports(
    file_campaign: tuple[Store, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = file_campaign
    assert main(["show", "t", "--db", store.path]) == 0
    table = capsys.readouterr().out.splitlines()
    notes = [line for line in table if line.startswith("note: other work shared the host")]  # a busy host's
    table = [line for line in table if line not in notes]
    assert table[0].split()[:4] == ["point", "status", "accel", "IOPS"] and len(table) == 7
    for fmt in ("csv", "json", "parquet"):
        out = tmp_path / f"t.{fmt}"
        assert main(["export", "t", "--db", store.path, "--format", fmt, "-o", str(out)]) == 0
        assert out.stat().st_size > 0
    doc = json.loads((tmp_path / "t.json").read_text())
    assert len(doc["points"]) == 6 and doc["series"]
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "t.series.parquet").num_rows == len(doc["series"])
    assert (tmp_path / "t.csv").read_text().count("\n") == 7


def test_rerun_skips_done_points(
    file_campaign: tuple[Store, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, runs = file_campaign
    ids = [r["id"] for r in store.runs("t")]
    spec_path = next(runs.parent.glob("t.toml"))
    assert main(["run", str(spec_path), "--db", store.path]) == 0
    assert "0 done, 0 failed, 6 already done" in capsys.readouterr().out
    assert [r["id"] for r in store.runs("t")] == ids


class Iostat:
    """``iostat -x`` every second on one device, each report stamped with the wall clock as it arrives
    (iostat prints a report the moment its interval ends, so report i covers (stamp[i-1], stamp[i]])."""

    COLUMNS = ("r/s", "w/s", "r_await", "w_await", "aqu-sz", "%util")

    def __init__(self, device: str) -> None:
        self.device = Path(device).name
        self.reports: list[tuple[float, dict[str, float]]] = []
        self.proc = subprocess.Popen(
            ["stdbuf", "-oL", "iostat", "-x", "-y", "-d", self.device, "1"],
            stdout=subprocess.PIPE, text=True, env={**os.environ, "LC_ALL": "C", "S_COLORS": "never"},
        )  # fmt: skip
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        header: list[str] = []
        for line in self.proc.stdout:
            words = line.split()
            if words[:1] == ["Device"]:
                header = words
            elif words[:1] == [self.device] and header:
                values = dict(zip(header[1:], map(float, words[1:]), strict=True))
                self.reports.append((time.time(), {k: values[k] for k in self.COLUMNS}))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.thread.join(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def over(self, start: float, end: float) -> tuple[float, float, dict[str, float]]:
        """The whole reports inside [start, end] (wall clock): their span and iostat's figures over it."""
        inside = [
            (t0, t1, r) for (t0, _), (t1, r) in itertools.pairwise(self.reports) if t0 >= start and t1 <= end
        ]
        assert len(inside) >= 2, f"iostat gave {len(inside)} whole report(s) inside the measured window"
        span = inside[-1][1] - inside[0][0]

        def mean(key: str) -> float:  # each report weighs its own interval
            return sum(r[key] * (t1 - t0) for t0, t1, r in inside) / span

        ios = sum((r["r/s"] + r["w/s"]) * (t1 - t0) for t0, t1, r in inside)
        waited = sum((r["r/s"] * r["r_await"] + r["w/s"] * r["w_await"]) * (t1 - t0) for t0, t1, r in inside)
        figures = {"read_iops": mean("r/s"), "write_iops": mean("w/s"), "busy_pct": mean("%util"),
                   "queue": mean("aqu-sz"), "await_ms": waited / ios}  # fmt: skip
        return inside[0][0], inside[-1][1], figures


@pytest.fixture
def busy_loopdev(scratch: Path) -> Iterator[str]:
    """A loop device doing direct I/O to a written 64 MiB file on a real disk, so it has real latency."""
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    image = scratch / "busy.img"
    with open(image, "wb") as f:
        for _ in range(64):
            f.write(os.urandom(1 << 20))
        os.setxattr(f.fileno(), "user.vmio.scratch", b"vmio")  # scratch: judged by the backing file's mark
    dev = subprocess.check_output(["losetup", "-f", "--show", "--direct-io=on", str(image)], text=True,
                                  timeout=30).strip()  # fmt: skip
    yield dev
    subprocess.run(["losetup", "-d", dev], check=False, timeout=30)


def test_loop_device_figures_agree_with_iostat(busy_loopdev: str, tmp_path: Path) -> None:
    """Device IOPS, busy %, queue and await against sysstat's iostat over the same window.

    iostat runs beside the campaign; vmio's stored samples (placed on the wall clock by the run's
    ``samples_t0``) are averaged over exactly the span of iostat's whole reports that fall inside the
    measured window, so both describe the same seconds however the machine's load varies."""
    need_iostat()
    need("stdbuf")
    target = f'[[target]]\nname = "loop"\nkind = "host"\npath = "{busy_loopdev}"\n'
    work = """
[[workload]]
name = "mix"
rw = "randrw"
rwmixread = 70
bs = "4k"
iodepth = 16
runtime = "5s"
ramp = "1s"
"""
    db = tmp_path / "l.db"
    iostat = Iostat(busy_loopdev)
    try:
        code = main(
            ["run", str(spec(tmp_path, target, work, "loop")), "--db", str(db), "--interval", "100ms"]
        )
    finally:
        iostat.stop()
    assert code == 0
    with Store(db) as store:
        [run] = store.runs("loop")
        [row] = summary.point_rows(store, "loop")
        samples = [(s["t"], s["source"], s["metric"], s["value"]) for s in store.samples(run["id"])]
    assert row.device == Path(busy_loopdev).name
    t0 = row.host_facts["samples_t0"]
    start, end = (t0 + t for t in row.host_facts["measured_window"])
    first, last, seen = iostat.over(start, end)
    ours = {metric: value for (source, metric), value in window_means(samples, first - t0, last - t0).items()
            if source == f"dev:{row.device}"}  # fmt: skip
    assert seen["queue"] > 1 and seen["await_ms"] > 0.1, f"the loop device was not loaded: {seen}"
    for key in ("read_iops", "write_iops", "queue", "await_ms"):
        assert ours[key] == pytest.approx(seen[key], rel=0.05), (key, ours, seen)
    assert ours["busy_pct"] == pytest.approx(seen["busy_pct"], abs=2.0), (ours, seen)
    # and the stored figures are the measured window's, which contains iostat's span: same load
    assert row.metric("dev_read_iops") == pytest.approx(row.read_iops, rel=0.1)


def test_kill_9_then_rerun_keeps_every_done_point_once(scratch: Path, tmp_path: Path) -> None:
    work = "\n".join(
        f'[[workload]]\nname = "w{i}"\nrw = "randread"\nbs = "4k"\nruntime = "1s"\n' for i in range(6)
    )
    spec_path = spec(tmp_path, file_target(scratch), work, "crash")
    db = tmp_path / "crash.db"
    cmd = [
        sys.executable,
        "-m",
        "vmio",
        "run",
        str(spec_path),
        "--db",
        str(db),
        "--workdir",
        str(tmp_path / "w"),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    done_before: list[tuple[int, str]] = []
    while time.monotonic() < deadline and len(done_before) < 2:
        time.sleep(0.2)
        if db.exists():
            try:
                with sqlite3.connect(db) as c:
                    done_before = c.execute("SELECT id, point_key FROM run WHERE status='done'").fetchall()
            except sqlite3.OperationalError:
                pass
    time.sleep(0.4)  # now most likely inside the next point's fio run
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert len(done_before) >= 2
    time.sleep(0.5)
    leftover = subprocess.run(["pgrep", "-af", str(tmp_path / "w")], capture_output=True, text=True).stdout
    assert leftover == "", "fio outlived the killed vmio"
    with Store(db) as store:
        kept = {(r["id"], r["point_key"]) for r in store.runs("crash")}
    assert set(done_before) <= kept
    assert subprocess.run(cmd, capture_output=True, timeout=120).returncode == 0
    with Store(db) as store:
        runs = store.runs("crash")
        assert sorted(r["point_key"] for r in runs) == sorted({r["point_key"] for r in runs})
        assert len(runs) == 6 and {r["status"] for r in runs} == {"done"}
        assert set(done_before) <= {(r["id"], r["point_key"]) for r in runs}
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_failed_point_is_recorded_and_the_rest_go_on(scratch: Path, tmp_path: Path) -> None:
    work = (
        '[[workload]]\nname = "bad"\nrw = "randread"\nioengine = "rbd"\nruntime = "1s"\n'
        '[[workload]]\nname = "good"\nrw = "randread"\nruntime = "1s"\n'
    )
    db = tmp_path / "f.db"
    assert main(["run", str(spec(tmp_path, file_target(scratch), work, "fail")), "--db", str(db)]) == 1
    with Store(db) as store:
        runs = {r["workload"]: r for r in store.runs("fail")}
        assert runs["bad"]["status"] == "failed" and "fio failed" in runs["bad"]["error"]
        assert "rbd pool name must be provided" in runs["bad"]["log"]  # fio, not vmio, refused it
        assert runs["good"]["status"] == "done"
    # the failed point is not "done", so a re-run tries it again
    assert main(["run", str(spec(tmp_path, file_target(scratch), work, "fail")), "--db", str(db)]) == 1


def test_relative_workdir(scratch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    work = '[[workload]]\nname = "w"\nrw = "randread"\nruntime = "1s"\n'
    args = [
        "run",
        str(spec(tmp_path, file_target(scratch), work, "rel")),
        "--db",
        "r.db",
        "--workdir",
        "runs",
    ]
    assert main(args) == 0
    assert list((tmp_path / "runs").glob("*/fio-output.txt"))


def test_the_ramp_is_left_out_of_the_device_figures(loopdev: str, tmp_path: Path) -> None:
    """During the ramp a second fio (started here, not by vmio) adds 3000 reads/s for 1 s to the device; the
    measured phase offers 500/s alone. Device IOPS must be what fio measured in that phase: counting the
    ramp would add about 3000 / 6 = 500/s. The ramp is 3 s so the extra load ends inside it even when a
    busy machine is slow to start fio (checked on the wall clock below)."""
    target = f'[[target]]\nname = "loop"\nkind = "host"\npath = "{loopdev}"\n'
    work = """
[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "3s"
ramp = "3s"
offered_iops = [500]
"""
    db, workdir = tmp_path / "r.db", tmp_path / "w"
    codes: list[int] = []
    campaign = threading.Thread(target=lambda: codes.append(main(
        ["run", str(spec(tmp_path, target, work, "ramp")), "--db", str(db), "--interval", "100ms",
         "--workdir", str(workdir)])))  # fmt: skip
    campaign.start()
    try:
        deadline = time.monotonic() + 60
        while not list(workdir.glob("*/job0.fio")):
            assert campaign.is_alive() and time.monotonic() < deadline, "fio never started"
            time.sleep(0.02)
        subprocess.run(
            ["fio", "--name=ramp-only", f"--filename={loopdev}", "--rw=randread", "--bs=4k", "--direct=1",
             "--rate_iops=3000", "--time_based", "--runtime=1000ms", "--output=/dev/null"],
            check=True, timeout=30,
        )  # fmt: skip
        extra_ended = time.time()
    finally:
        campaign.join(timeout=120)
    assert codes == [0]
    with Store(db) as store:
        [run] = store.runs("ramp")
        [row] = summary.point_rows(store, "ramp")
        samples = [(s["t"], s["source"], s["metric"], s["value"]) for s in store.samples(run["id"])]
    source = f"dev:{Path(loopdev).name}"
    start, end = row.host_facts["measured_window"]
    assert extra_ended < row.host_facts["samples_t0"] + start, "the extra load ran into the measured phase"
    ramp = window_means(samples, 0.0, start)[(source, "read_iops")]
    assert ramp > 800, f"the ramp's extra load did not reach the device ({ramp:.0f}/s)"  # 500/s alone
    assert_throttled(row.read_iops, 500, run["job_file"])  # fio's own measured phase
    # the device saw what fio did in the measured window, not the ramp's extra 3000/s
    assert row.metric("dev_read_iops") == pytest.approx(row.read_iops, rel=0.1)
