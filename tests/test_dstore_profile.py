"""Profile pieces without a cluster: block-size lists, verdicts, profile files, fio JSON, CLI bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmio.cli import main
from vmio.dstore.figures import Figures, Side, figures, of_results
from vmio.dstore.profile import Criteria, load_profile, parse_bs_list, verdict
from vmio.errors import FioError, InputError
from vmio.fio import output
from vmio.stats import histogram
from vmio.system.process import Runner
from vmio.units import format_size


def test_bs_list_sorted_in_bytes() -> None:
    assert parse_bs_list("64k, 4k,1m") == [4096, 65536, 1 << 20]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("1000,4k", "'1000' is not a positive multiple of 512"),
        ("4k,,8k", "is not a size"),
        ("4k,4k", "'4k' is given twice"),
        ("lots", "'lots' is not a size"),
        ("0", "'0' is not a positive multiple"),
    ],
)
def test_bad_bs_lists(text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        parse_bs_list(text)


@pytest.mark.parametrize(
    ("mean", "iops", "expected"),
    [
        (5.0, 6000, "ideal"),
        (20.0, 600, "ideal"),
        (20.1, 600, "acceptable"),
        (100.0, 600, "acceptable"),
        (100.1, 6000, "fails"),
        (5.0, 499, "fails"),
    ],
)
def test_verdicts_follow_seed_002(mean: float, iops: float, expected: str) -> None:
    assert verdict(mean, iops, Criteria()) == expected


def test_criteria_are_configurable_and_checked() -> None:
    assert verdict(30.0, 100, Criteria(ideal_ms=50, acceptable_ms=60, min_iops_host=50)) == "ideal"
    with pytest.raises(InputError, match="ideal 200"):
        Criteria(ideal_ms=200, acceptable_ms=100)


def test_load_profile_names_the_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(
            {
                "points": [
                    {"bs": 4096, "iops": 100, "mean_lat_ms": 1},
                    {"bs": 8192, "iops": "fast", "mean_lat_ms": 1},
                ]
            }
        )
    )
    with pytest.raises(InputError, match=r"points\[1\]\.iops = 'fast'"):
        load_profile(path)
    path.write_text("{not json")
    with pytest.raises(InputError, match="not readable JSON"):
        load_profile(path)
    with pytest.raises(InputError, match="does not exist"):
        load_profile(tmp_path / "missing.json")


def _fio_doc(sides: dict[str, tuple[int, float, float, dict[int, int]]]) -> dict[str, object]:
    """fio's JSON for one job, with the fields fio 3.x always writes (``fio.output.parse`` reads them)."""
    job: dict[str, object] = {"jobname": "j", "error": 0, "usr_cpu": 1.0, "sys_cpu": 2.0}
    for d in ("read", "write"):
        ios, iops, mean, bins = sides.get(d, (0, 0.0, 0.0, {}))
        job[d] = {
            "total_ios": ios,
            "iops": iops,
            "bw_bytes": iops * 4096,
            "runtime": 1000,
            "lat_ns": {"min": 0, "max": 0, "mean": mean, "stddev": 0.0},
            "clat_ns": {
                "mean": mean,
                "percentile": {"99.000000": 0},
                "bins": {str(k): v for k, v in bins.items()},
            },
        }
    return {"fio version": "fio-3.33", "jobs": [job]}


def _sides(text: str) -> list[Side]:
    """The measured sides of fio's output as ``fio.output.parse`` (the one parser) reads it."""
    return of_results(output.parse(text).results)


def parse_fio(text: str) -> Figures:
    """A profile point's figures (``dstore.figures``) of fio's output."""
    return figures(_sides(text), "the test's fio")


bins_st = st.dictionaries(st.integers(1, 10**9), st.integers(1, 1000), min_size=1, max_size=30)


@given(read=bins_st, write=bins_st, noise=st.text(alphabet="abc xyz\n:=", max_size=40))
def test_parser_merges_histograms_for_the_combined_p99(
    read: dict[int, int], write: dict[int, int], noise: str
) -> None:
    doc = _fio_doc(
        {"read": (sum(read.values()), 100.0, 2e6, read), "write": (sum(write.values()), 300.0, 4e6, write)}
    )
    result = parse_fio(noise + "\n" + json.dumps(doc) + "\n" + noise)
    merged = sorted(v for b in (read, write) for v, n in b.items() for _ in range(n))
    rank = -(-len(merged) * 99 // 100)
    assert result.p99_lat_ms == merged[rank - 1] / 1e6
    assert result.iops == 400.0
    n_r, n_w = sum(read.values()), sum(write.values())
    assert result.mean_lat_ms == pytest.approx((2.0 * n_r + 4.0 * n_w) / (n_r + n_w))


def test_percentile_from_bins_nearest_rank() -> None:
    assert histogram.percentile({10: 98, 20: 1, 30: 1}, 99.0) == 20
    assert histogram.percentile({10: 1}, 99.0) == 10


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("fio: engine rbd not loadable", "no JSON object"),
        ('{"jobs": []}', "completed no I/O"),
        ('{"jobs": [{"jobname": "j", "read": {}}]}', "unexpected shape"),
        ('{"jobs": [{"jobname": "j", "error": 5}]}', "ended with error 5"),
        ('{"jobs": [ {"x": 1,, }]}', "not valid JSON"),
    ],
)
def test_parser_rejects_bad_output(text: str, needle: str) -> None:
    with pytest.raises(FioError, match=needle):
        parse_fio(text)


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_parser_reads_real_fio_json_plus() -> None:
    argv = [
        "fio",
        "--name=x",
        "--ioengine=null",
        "--rw=randrw",
        "--rwmixread=30",
        "--size=8m",
        "--bs=4k",
        "--output-format=json+",
    ]
    out = Runner().run(argv, timeout=60).stdout
    sides = _sides(out)
    raw = json.loads(out)["jobs"][0]
    ios = {d: sum(s.ios for s in sides if s.ddir == d) for d in ("read", "write")}
    assert ios == {d: raw[d]["total_ios"] for d in ("read", "write")} and sum(ios.values()) == 2048
    # the merged-histogram p99 of one direction equals fio's own (fio reports bin values too)
    write = figures([s for s in sides if s.ddir == "write"], "writes")
    assert write.p99_lat_ms * 1e6 == pytest.approx(
        raw["write"]["clat_ns"]["percentile"]["99.000000"], rel=0.02
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["dstore", "profile", "--dir", "/nonexistent/vmio-cluster"],
        ["dstore", "status", "--dir", "/nonexistent/vmio-cluster"],
        ["dstore", "down", "--dir", "/nonexistent/vmio-cluster"],
        ["dstore", "profile"],
        ["dstore", "profile", "--conf", "/nonexistent/ceph.conf", "--pool", "p", "--image", "i"],
        ["dstore", "model", "--calibrate", "/nonexistent/p.json"],
        ["dstore", "model", "--network", "fast"],
        ["dstore", "model", "--bs", "4k,1000"],
        ["dstore", "up", "--dir", "/tmp", "--osds", "0"],
    ],
)
def test_cli_bad_input_exits_2_with_one_message(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("vmio: error:") and "Traceback" not in err


def test_cli_profile_rejects_bad_bs_before_touching_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "vmio-dstore.json").write_text(
        json.dumps(
            {
                "conf": str(tmp_path / "ceph.conf"),
                "pool": "p",
                "image": "i",
                "root": str(tmp_path),
                "replicas": 3,
                "osds": 3,
            }
        )
    )
    (tmp_path / "ceph.conf").write_text("[global]\n")
    assert main(["dstore", "profile", "--dir", str(tmp_path), "--bs", "4k,1000"]) == 2
    assert "'1000' is not a positive multiple of 512" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--name", "taken"], "--name 'taken': a campaign of that name is already stored in"),
        (["--db", "x.db"], "--db 'x.db' names the store for --name; give --name NAME too"),
        (
            ["--name", "taken", "--fail-osd", "1"],
            "--name 'taken': a campaign of that name is already stored in",
        ),
    ],
)
def test_cli_profile_name_is_checked_before_touching_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    from vmio.store import Store

    db = tmp_path / "vmio.db"
    with Store(str(db)) as store:
        store.ensure_campaign("taken", "<spec>", "", "{}")
    # no cluster in this folder: a refusal that reached it would name the missing state file instead
    argv = ["dstore", "profile", "--dir", str(tmp_path / "none"), "--db", str(db), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    with Store(str(db), readonly=True) as store:
        assert store.campaigns() == ["taken"]


def test_cli_up_refuses_a_folder_with_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "keep.txt").write_text("data")
    assert main(["dstore", "up", "--dir", str(tmp_path)]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "data"


def test_cli_down_refuses_a_folder_vmio_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("data")
    assert main(["dstore", "down", "--dir", str(tmp_path)]) == 2
    assert (tmp_path / "keep.txt").exists()


def test_cli_model_what_if_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    points = [
        {"bs": bs, "iops": iops, "mean_lat_ms": 50e3 / iops, "p99_lat_ms": 150e3 / iops}
        for bs, iops in ((4096, 5150), (16384, 3350), (65536, 1450))
    ]
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"points": points, "setup": {"replicas": 3, "osds": 3, "iodepth": 50}}))
    assert (
        main(
            [
                "dstore",
                "model",
                "--calibrate",
                str(path),
                "--replicas",
                "2",
                "--network",
                "25G",
                "--bs",
                "4k,1m",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["what_if"]["changes"] == {"replicas": 2, "network": "25G"}
    assert [p["bs"] for p in out["baseline"]] == [4096, 1 << 20]
    assert out["what_if"]["points"][0]["iops"] > out["baseline"][0]["iops"]
    assert out["baseline"][0]["iops"] == pytest.approx(5150, rel=0.1)


@given(st.sets(st.integers(1, 1 << 14), min_size=1, max_size=12), st.booleans())
def test_bs_list_round_trip(units: set[int], spaced: bool) -> None:
    sizes = [u * 512 for u in units]
    text = (", " if spaced else ",").join(format_size(s) for s in sizes)
    assert parse_bs_list(text) == sorted(sizes)


@pytest.mark.parametrize(
    ("p99", "top", "expected"),
    [(40.0, 90.0, "ok"), (40.0, 100.0, "ok"), (80.0, 100.1, "max-over"), (100.1, 300.0, "p99-over")],
)
def test_spikes_are_judged_against_100_ms(p99: float, top: float, expected: str) -> None:
    from vmio.dstore.profile import spike_verdict

    assert spike_verdict(p99, top, Criteria()) == expected


def test_table_names_both_criteria(tmp_path: Path) -> None:
    from vmio.dstore.profile import format_table

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"points": [
        {"bs": 4096, "iops": 3000, "mean_lat_ms": 15, "p99_lat_ms": 60, "max_lat_ms": 140},
        {"bs": 1 << 20, "iops": 600, "mean_lat_ms": 80, "p99_lat_ms": 300, "max_lat_ms": 500},
    ]}))  # fmt: skip
    profile = load_profile(path)
    assert [p.spikes for p in profile.points] == ["max-over", "p99-over"]
    text = format_table(profile)
    assert "mean ≤ 20 ms ideal, ≤ 100 ms acceptable under constant load" in text
    line_4k, line_1m = text.splitlines()[2:4]
    assert "ideal" in line_4k and "max > 100 ms, p99 within" in line_4k
    assert "acceptable under constant load" in line_1m and "p99 > 100 ms" in line_1m


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_per_second_rows_from_real_fio_histogram_logs(tmp_path: Path) -> None:
    """A degraded run's seconds from fio's per-second histogram logs (what the runner stores with a timed
    point): they add up to fio's own I/O count, each direction's."""
    from vmio.dstore.degraded import seconds

    job = tmp_path / "j.fio"
    job.write_text(
        "[x]\nioengine=null\nrw=randrw\nrwmixread=30\nbs=4k\nsize=1g\ntime_based=1\nruntime=3s\n"
        f"rate_iops=300,700\nwrite_hist_log={tmp_path}/h\nlog_hist_msec=1000\nper_job_logs=1\n"
    )
    out = Runner().run(["fio", "--output-format=json", str(job)], timeout=60).stdout
    log = [("local", "x", t, d, b) for f in sorted(tmp_path.glob("h_clat_hist.*.log"))
           for t, d, b in output.parse_hist_log(f.read_text())]  # fmt: skip
    rows = seconds(log)
    raw = json.loads(out)["jobs"][0]
    assert 2 <= len(rows) <= 4  # fio may not log the last, partial window
    for d in ("read", "write"):  # no completion counted twice (fio may not log the last, partial second)
        assert sum(getattr(r, f"{d}_iops") for r in rows) <= raw[d]["total_ios"]
    for r in rows[:2]:  # a whole second carries fio's own rate (the asked 300/700 or what a busy host did)
        assert r.read_iops == pytest.approx(raw["read"]["total_ios"] / 3, rel=0.2)
        assert r.write_iops == pytest.approx(raw["write"]["total_ios"] / 3, rel=0.2)
        assert r.mean_lat_ms is not None and r.mean_lat_ms >= 0
    assert [r.t_s for r in rows] == [float(i) for i in range(1, len(rows) + 1)]


def test_figures_take_the_largest_max_and_count_clients_once() -> None:
    doc = _fio_doc({"read": (10, 100.0, 2e6, {1000: 10}), "write": (5, 50.0, 3e6, {2000: 5})})
    job = doc["jobs"][0]  # type: ignore[index]
    job["read"]["lat_ns"]["max"] = 7e6
    job["write"]["lat_ns"]["max"] = 9e6
    client = {"client_stats": [job, {**job, "jobname": "All clients"}]}
    for text in (json.dumps(doc), json.dumps(client)):
        result = parse_fio(text)
        reads = figures([s for s in _sides(text) if s.ddir == "read"], "reads")
        assert result.max_lat_ms == 9.0 and reads.max_lat_ms == 7.0
        assert sum(s.ios for s in _sides(text)) == 15  # "All clients" is not counted twice


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--baseline", "replicas=x"], "replicas must be a whole number"),
        (["--baseline", "nfs:/x"], "is not a baseline; use replicas=1 or file:PATH"),
        (["--baseline", "file:"], "give a path after 'file:'"),
        (["--fail-osd", "1", "--bs", "4k,8k"], "takes one block size"),
        (["--fail-osd", "7"], "the cluster has OSDs 0 to 2"),
        (["--fail-osd", "1", "--at", "30s", "--back-at", "20s"], "need 0 < at < back-at < runtime"),
        (["--fail-osd", "1", "--baseline", "replicas=1"], "cannot be combined with --fail-osd"),
        (["--at", "5s"], "needs --fail-osd N"),
    ],
)
def test_cli_new_profile_options_reject_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    (tmp_path / "vmio-dstore.json").write_text(json.dumps({
        "conf": str(tmp_path / "ceph.conf"), "pool": "p", "image": "i", "root": str(tmp_path),
        "replicas": 3, "osds": 3, "fsid": "f", "mon_port": 1,
    }))  # fmt: skip
    (tmp_path / "ceph.conf").write_text("[global]\n")
    assert main(["dstore", "profile", "--dir", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


@pytest.mark.fio
def test_a_profile_is_stored_with_fio_s_own_figures_and_reported(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A profile's configuration is a campaign target run by ``campaign.runner`` (here a local file, as a
    ``file:`` baseline runs, so no cluster is needed): its points are stored with their ``dstore`` facts
    and verdicts, ``show`` holds fio's own counts and percentiles, and the profile read back from the store
    is fio's own figures judged."""
    from vmio.campaign.runner import Options
    from vmio.campaign.runner import run as run_campaign
    from vmio.dstore.cluster import ClusterRef
    from vmio.dstore.stored import (
        CephVersions,
        Config,
        Labeller,
        campaign_of,
        file_target,
        read_profiles,
        setup,
        workload,
    )
    from vmio.spec.dump import dumps
    from vmio.store import Store
    from vmio.targets.host import prepare_file

    path, db = scratch / "f.img", tmp_path / "v.db"
    prepare_file(path, 32 << 20)
    load = workload([4096, 65536], 30, 4, 1.0, 0.0)
    facts = setup(ClusterRef(tmp_path / "none.conf", "p", "i"), load, "file", where="local file, libaio",
                  path=str(path)) | {"pool": None, "image": None}  # fmt: skip
    config = Config(file_target("file", path), "file", "baseline", facts, None)
    campaign = campaign_of("local", [config], load)
    labeller = Labeller({"file": config}, Criteria(), CephVersions(), Runner())
    with Store(str(db)) as store:
        options = Options(workdir=tmp_path / "work", around_point=labeller.around)
        outcome = run_campaign(campaign, dumps(campaign), store, options)
        assert (outcome.done, outcome.failed) == (2, 0)
        (read,) = read_profiles(store, "local")
    # fio's own output of each point, as fio.run keeps it in the point's folder
    logs = {
        p.bs: (tmp_path / "work" / p.key.replace("/", "_") / "fio-output.txt").read_text()
        for p in campaign.points()
    }
    assert [p.key for p in campaign.points()] == [
        "file/randrw/bs=4k/offered=max/load=0/rep=1",
        "file/randrw/bs=64k/offered=max/load=0/rep=1",
    ]
    assert main(["show", "local", "--db", str(db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    for row, point in zip(rows, read.profile.points, strict=True):
        text = logs[row["bs"]]
        (job,) = json.loads(text[text.index("{") :])["jobs"]  # fio's own document for this point
        ios = {d: job[d]["total_ios"] for d in ("read", "write")}
        for d in ("read", "write"):
            assert row[f"{d}_ops"] == ios[d]
            # the stored p99 is the nearest rank of fio's own json+ bins (total latency where fio gives its
            # bins, as vmio stores them; else completion latency)
            fio_bins = job[d]["lat_ns"].get("bins") or job[d]["clat_ns"]["bins"]
            ranked = sorted(int(v) for v, n in fio_bins.items() for _ in range(n))
            assert row[f"{d}_lat_ns"]["p99"] == ranked[-(-len(ranked) * 99 // 100) - 1]
        # the profile read back is fio's own figures: IOPS, the mean weighted by operations, judged
        assert point.iops == pytest.approx(job["read"]["iops"] + job["write"]["iops"], rel=1e-6)
        mean_ns = sum(job[d]["lat_ns"]["mean"] * ios[d] for d in ios) / sum(ios.values())
        assert point.mean_lat_ms == pytest.approx(mean_ns / 1e6, rel=1e-6)
        assert point.verdict == verdict(mean_ns / 1e6, point.iops, Criteria())
        assert row["dstore"]["verdict"] == point.verdict and row["dstore"]["path"] == str(path)
        assert row["dstore"]["iodepth"] == row["iodepth"] == 4 and row["dstore"]["ceph_version"] is None
        assert row["dstore"]["osds_down"] is None  # a local file: no cluster map to watch
    assert read.role == "baseline" and read.profile.setup["where"] == "local file, libaio"
    with Store(str(db)) as store:  # the stored spec names the engine the file's runs used (rbd targets
        (stored_load,) = store.spec("local").workloads  # get theirs from their placement)
    assert stored_load.ioengine == "libaio" and stored_load.rwmixread == 30 and stored_load.iodepth == 4
    assert main(["report", "local", "--db", str(db), "-o", str(tmp_path / "r.html")]) == 0
    assert "randrw" in (tmp_path / "r.html").read_text()
    capsys.readouterr()
    # its stored spec reads back as the campaign, so commands that need the spec (the model's fit) work
    model = ["dstore", "model", "--calibrate", "local", "--db", str(db), "--target", "file", "--json"]
    assert main(model) == 0
    assert json.loads(capsys.readouterr().out)["fit"]["fit_bs"] == [4096, 65536]


def test_the_cli_takes_every_default_from_the_settings() -> None:
    """One place for the defaults: a profile asked with no option is ``ProfileSettings()``, and relocate's
    requests with no option are the requests' own defaults."""
    from vmio.cli import dstore as cli_dstore
    from vmio.cli import relocate as cli_relocate
    from vmio.cli.main import build_parser
    from vmio.dstore.settings import ModelSettings, ProfileSettings, UpSettings
    from vmio.relocate.requests import EvaluateRequest, PlanRequest

    parser = build_parser(["dstore"])
    args = parser.parse_args(["dstore", "profile", "--dir", "d"])
    assert cli_dstore._settings(args) == ProfileSettings()
    up = parser.parse_args(["dstore", "up", "--dir", "d"])
    assert (up.osds, cli_dstore._duration("--deadline", up.deadline)) == (
        UpSettings.osds,
        UpSettings.deadline_s,
    )
    model = parser.parse_args(["dstore", "model"])
    names = ("base_network", "rtt", "base_write_path", "dev_op", "dev_bw")
    assert {k: getattr(model, k) for k in names} == {k: getattr(ModelSettings(), k) for k in names}
    parser = build_parser(["relocate"])
    args = parser.parse_args(["relocate", "evaluate", "--synthetic", "ffsb"])
    assert cli_relocate._request(EvaluateRequest, args) == EvaluateRequest(synthetic="ffsb")
    args = parser.parse_args(["relocate", "plan", "t.csv", "-o", "plan.json"])
    names = ("format", "extent", "coverage", "hot_bytes", "zone", "order")
    assert PlanRequest(**{k: getattr(args, k) for k in names}) == PlanRequest()
