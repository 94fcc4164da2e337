import contextlib
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.errors import FioError
from vmio.fio import output
from vmio.stats import histogram


def run_fio(job: str, workdir: Path) -> str:
    path = workdir / "job.fio"
    path.write_text(job)
    return subprocess.run(
        ["fio", "--output-format=json+", str(path)], capture_output=True, text=True, timeout=120, check=True
    ).stdout


JOB = """\
[global]
ioengine=libaio
direct=1
filename={file}
size=32M
rw=randread
bs=4k
iodepth=4
time_based=1
runtime=1500ms
lat_percentiles=1
percentile_list=50:90:99:99.9:99.99
{extra}
[measure]
numjobs=2
"""


@pytest.fixture
def data_file(scratch: Path) -> Path:
    path = scratch / "data.img"
    path.write_bytes(b"\x5a" * (32 << 20))
    return path


def test_percentiles_from_merged_bins_match_fios_group_percentiles(fio: str, data_file: Path) -> None:
    # With group_reporting fio merges the two jobs' histograms and reports percentiles of the merge.
    text = run_fio(JOB.format(file=data_file, extra="group_reporting=1"), data_file.parent)
    (group,) = output.parse(text).results
    doc = json.loads(text[text.index("{") :])
    fio_pcts = {float(k): v for k, v in doc["jobs"][0]["read"]["lat_ns"]["percentile"].items()}
    ours = histogram.percentiles(group.bins)
    for p, value in ours.items():
        assert value is not None
        assert histogram.same_or_adjacent_bucket(value, fio_pcts[p]), (p, value, fio_pcts[p])


def test_per_job_results_and_merge(fio: str, data_file: Path) -> None:
    text = run_fio(JOB.format(file=data_file, extra=""), data_file.parent)
    doc = json.loads(text[text.index("{") :])
    results = output.parse(text).results
    assert [r.job for r in results] == ["measure", "measure"]
    for res, job in zip(results, doc["jobs"], strict=True):
        assert res.iops == job["read"]["iops"]
        assert res.total_ios == job["read"]["total_ios"] == sum(res.bins.values())
        assert res.lat_ns["p99"] == job["read"]["lat_ns"]["percentile"]["99.000000"]
    merged = histogram.merge(r.bins for r in results)
    assert sum(merged.values()) == sum(r.total_ios for r in results)
    p99s = sorted(histogram.percentile(r.bins, 99) or 0 for r in results)
    assert p99s[0] <= (histogram.percentile(merged, 99) or 0) <= p99s[1]


def test_text_around_the_json_is_kept() -> None:
    job = {
        "jobname": "measure",
        "usr_cpu": 1.0,
        "sys_cpu": 2.0,
        "read": _DIR,
        "write": {**_DIR, "total_ios": 0},
    }
    doc = {"fio version": "fio-3.33", "jobs": [job]}
    text = "note: both iodepth >= 1 and synchronous I/O engine\n" + json.dumps(doc) + "\ntrailing words\n"
    out = output.parse(text)
    assert out.version == "fio-3.33" and [(r.job, r.ddir, r.iops) for r in out.results] == [
        ("measure", "read", 10.0)
    ]
    assert "synchronous I/O engine" in out.text and "trailing words" in out.text


_DIR = {"iops": 10.0, "bw_bytes": 40960.0, "total_ios": 20, "runtime": 2000,
        "lat_ns": {"min": 1, "mean": 2, "max": 3, "stddev": 1}, "clat_ns": {"percentile": {"50.000000": 2}}}  # fmt: skip


@pytest.mark.parametrize(
    ("jobs", "read_pct", "missing"),
    [
        ([], 100, "measured job from local"),
        ([{"jobname": "load.0", "read": _DIR}], 100, "measured job from local"),
        ([{"jobname": "measure", "read": _DIR}], 0, "writes from local"),
        ([{"jobname": "measure", "read": {**_DIR, "total_ios": 1000}}], 50, "writes from local"),
        ([{"jobname": "measure", "read": _DIR}], 50, ""),  # 10 writes were due: none by chance is possible
        ([{"jobname": "measure", "read": _DIR}], 100, ""),
    ],
)
def test_output_without_the_expected_jobs_or_directions_is_named(
    jobs: list[dict[str, object]], read_pct: int, missing: str
) -> None:
    empty = {**_DIR, "total_ios": 0}
    full = [{"usr_cpu": 0.0, "sys_cpu": 0.0, "read": empty, "write": empty, **j} for j in jobs]
    out = output.parse(json.dumps({"jobs": full}))
    assert output.missing(out, [None], read_pct) == missing


def test_a_server_without_results_is_named() -> None:
    empty = {**_DIR, "total_ios": 0}
    job = {"jobname": "measure", "hostname": "vm", "port": 5001, "usr_cpu": 0.0, "sys_cpu": 0.0, "read": _DIR,
           "write": empty}  # fmt: skip
    out = output.parse(json.dumps({"client_stats": [job]}))
    assert (
        output.missing(out, ["127.0.0.1:5001", "127.0.0.1:5002"], 100) == "measured job from 127.0.0.1:5002"
    )


def test_job_error_is_fio_error() -> None:
    doc = {"jobs": [{"jobname": "measure", "error": 5}]}
    with pytest.raises(FioError, match="ended with error 5"):
        output.parse(json.dumps(doc))


@pytest.mark.parametrize(
    "text", ["", "fio: pid=1, err=2/file:filesetup.c", "{not json", '{"jobs": 3}', "[1, 2]"]
)
def test_bad_output_is_fio_error(text: str) -> None:
    with pytest.raises(FioError):
        output.parse(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), json_values, st.text(max_size=40))
def test_garbage_is_fio_error_and_nothing_else(before: str, value: object, after: str) -> None:
    for doc in (value, {"jobs": value}, {"jobs": [value]}, {"client_stats": [value]}):
        with contextlib.suppress(FioError):
            output.parse(before + json.dumps(doc) + after)


def test_lat_log() -> None:
    ops = output.parse_lat_log("1, 52000, 0, 4096, 0\n2, 61000, 1, 4096, 8192\n")
    assert ops == [(1, 52000, "read"), (2, 61000, "write")]
    with pytest.raises(FioError, match="ops.log:2"):
        output.parse_lat_log("1, 5, 0, 4096, 0\nbroken\n", "ops.log")


@given(st.integers(min_value=0, max_value=1 << 40))
def test_bucket_index_is_monotonic(v: int) -> None:
    assert histogram.bucket_index(v) <= histogram.bucket_index(v + 1)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["clat", "clat_ns"]),
    st.dictionaries(
        st.sampled_from(["FIO_IO_U_PLAT_BITS", "0", "130", "99999999", "-1", "1e3"]),
        st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False),
        max_size=4,
    ),
    st.sampled_from(["io_bytes", "io_kbytes", "bw_bytes", "total_ios", "iops", "runtime"]),
    st.integers(min_value=-(10**400), max_value=10**400) | st.floats(allow_nan=False),
)
def test_old_fio_shapes_with_garbage_are_fio_error_and_nothing_else(
    clat: str, bins: dict[str, object], key: str, value: object
) -> None:
    """The paths only old fio output takes (µs fields, bins by bucket index, io_bytes in KiB, no bw_bytes)
    fed garbage: a ``FioError`` or a result, never another exception, and fast."""
    lat = {"min": 1, "max": 2, "mean": 1.5, "stddev": 0.1}
    d = {"io_bytes": 4, "iops": 1.0, "runtime": 1000, "total_ios": 1, key: value,
         clat: {**lat, "bins": bins}, clat.replace("clat", "lat"): lat}  # fmt: skip
    doc = {"fio version": "fio-2.18", "jobs": [{"jobname": "j", "usr_cpu": 0, "sys_cpu": 0, "read": d}]}
    with contextlib.suppress(FioError):
        output.parse(json.dumps(doc))


def test_a_direction_fio_left_out_is_no_result_and_the_0_00_fillers_are_no_percentile() -> None:
    """fio before 3.4 filled the percentile map to 20 entries with a repeated ``"0.00": 0``; a job may
    leave a direction out. Neither becomes a figure."""
    pct = '{"50.000000" : 2, "99.000000" : 3, "0.00" : 0, "0.00" : 0}'
    read = ('{"iops": 10.0, "bw_bytes": 40960, "total_ios": 20, "runtime": 2000, "lat_ns": {"min": 1, "mean": 2, '
            '"max": 3, "stddev": 1}, "clat_ns": {"percentile": ' + pct + "}}")  # fmt: skip
    text = '{"jobs": [{"jobname": "j", "usr_cpu": 1, "sys_cpu": 2, "read": ' + read + "}]}"
    (res,) = output.parse(text).results
    assert res.ddir == "read" and (res.lat_ns["p50"], res.lat_ns["p99"]) == (2.0, 3.0)
    assert res.lat_ns["p90"] is None  # not in the map: absent, not the filler's 0
