"""The bad-input rule kept by Hypothesis, one property per input format: for generated and mutated specs, fio
job files, membal scenarios, traces, relocation plans, evidence files and stores, the CLI either succeeds or
exits 2 with one line, never raises (a traceback), never hangs (an alarm beside Hypothesis' ``deadline``) and,
when it fails, leaves no file. Specs run with ``--dry-run`` only; plans are applied only from a loop device
to a file in a scratch folder; stores get read-only commands. Examples are fixed in number and derandomized
(pytest-randomly is on)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmio.cli import main
from vmio.relocate.layout import Layout
from vmio.relocate.plan_io import plan_to_dict
from vmio.relocate.planner import build_plan
from vmio.store import Store

from conftest import disk_folder, need, store_from_sql

HERE = Path(__file__).parent
HANG_S = 30


def rule(examples: int) -> Callable[[Any], Any]:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=timedelta(seconds=20),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


# -- running the CLI and checking the rule -----------------------------------------------------------------


def _hung(_signum: int, _frame: object) -> None:
    raise AssertionError(f"the command still runs after {HANG_S} s: a hang")


def run_cli(argv: list[str], workdir: Path) -> tuple[int, str]:
    """``vmio argv`` in ``workdir``; the exit code and stderr. An exception escaping ``main`` fails the test."""
    err, out = io.StringIO(), io.StringIO()
    old_dir = os.getcwd()
    old = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(HANG_S)
    try:
        os.chdir(workdir)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        os.chdir(old_dir)
    return code, err.getvalue()


def check_rule(code: int, err: str, workdir: Path, ok: tuple[int, ...] = (0,)) -> None:
    assert "Traceback" not in err
    if code in ok:
        return
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vmio: error: "), err
    assert list(workdir.iterdir()) == [], f"a failed command left {list(workdir.iterdir())}"


@contextlib.contextmanager
def fresh_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="vmio-prop-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- mutations of text -------------------------------------------------------------------------------------

NASTY = [
    "0", "-1", "1e400", "-1e400", "nan", "inf", "1P", "1E", "9" * 5000, '""', '"x"', "[]", "{}", "[[[[[[",
    "true", "null", "\x00", "\x7f", "é", "1.5", "4097", "2e30", str(2**63), str(2**64), '"1P"', '"-4k"',
    '"1e400"', "'", '"', "=", ",", "\\", "\ufeff", "0x10", "1_000",
]  # fmt: skip


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """``text`` with one to three edits: a value replaced, a line deleted, doubled or cut, garbage put in."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            lines = [""]
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["value", "value", "delete", "double", "cut", "insert"]))
        line = lines[i]
        if kind == "value":
            sep = "=" if "=" in line else ("," if "," in line else " ")
            head = line.split(sep)[0] if sep in line else line
            lines[i] = f"{head}{sep}{draw(st.sampled_from(NASTY) | st.text(max_size=12))}"
        elif kind == "delete":
            del lines[i]
        elif kind == "double":
            lines.insert(i, line)
        elif kind == "cut":
            lines[i] = line[: draw(st.integers(0, len(line)))]
        else:
            lines.insert(i, draw(st.text(max_size=30)))
    return "\n".join(lines) + "\n"


def write_text(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


# -- specs (dry run only) ----------------------------------------------------------------------------------

SPEC = """[campaign]
name = "p"
repetitions = 1
[[target]]
name = "t"
kind = "host"
path = "{dir}/p.img"
size = "4M"
[[workload]]
name = "w"
rw = "randread"
bs = "4k"
iodepth = 4
runtime = "1s"
offered_iops = [100, "max"]
"""


@rule(80)
@given(text=mutated_text(SPEC))
def test_specs_dry_run(text: str, tmp_path: Path) -> None:
    with fresh_dir() as work, fresh_dir() as inputs:
        spec = write_text(inputs / "spec.toml", text.replace("{dir}", str(tmp_path)))
        code, err = run_cli(["run", str(spec), "--dry-run", "--db", str(work / "v.db")], work)
        check_rule(code, err, work)


# -- fio job files (dry run only) --------------------------------------------------------------------------

JOB = (HERE / "data" / "fio-examples" / "fio-rand-RW.fio").read_text()


@rule(80)
@given(text=mutated_text(JOB))
def test_fio_job_files_dry_run(text: str, tmp_path: Path) -> None:
    with fresh_dir() as work, fresh_dir() as inputs:
        job = write_text(inputs / "job.fio", text)
        argv = ["run", str(job), "--target", str(tmp_path / "t.img"), "--size", "4M", "--dry-run"]
        code, err = run_cli(argv + ["--db", str(work / "v.db")], work)
        check_rule(code, err, work)


# -- membal scenarios --------------------------------------------------------------------------------------

SCENARIO = """[scenario]
name = "p"
memory = 200
epoch = 1000
accesses = 2000
seed = 4
policies = ["marginal"]
[[vm]]
name = "u"
workload = "uniform"
pages = 300
[[vm]]
name = "z"
workload = "zipf"
pages = 500
alpha = 1.0
"""


@rule(40)
@given(text=mutated_text(SCENARIO))
def test_membal_scenarios(text: str) -> None:
    with fresh_dir() as work, fresh_dir() as inputs:
        scenario = write_text(inputs / "s.toml", text)
        code, err = run_cli(["membal", "sim", str(scenario)], work)
        check_rule(code, err, work)


# -- traces ------------------------------------------------------------------------------------------------

CELL = (
    st.sampled_from(NASTY)
    | st.integers(-(2**70), 2**70).map(str)
    | st.floats().map(repr)
    | st.text(max_size=8)
)


@st.composite
def csv_trace(draw: st.DrawFn) -> str:
    rows = ["time,image,op,offset,length"]
    for n in range(draw(st.integers(0, 8))):
        good = [str(n * 0.01), draw(st.sampled_from(["vm1", "vm2"])), draw(st.sampled_from(["r", "w"])),
                str(draw(st.integers(0, 1 << 30)) * 512), str(draw(st.integers(1, 256)) * 512)]  # fmt: skip
        if draw(st.booleans()):
            good[draw(st.integers(0, 4))] = draw(CELL)
        rows.append(",".join(good))
    return "\n".join(rows) + "\n"


@st.composite
def cloudphysics_trace(draw: st.DrawFn) -> str:
    rows = ["version,time,op,size,lbn"]
    for n in range(draw(st.integers(0, 8))):
        good = ["1", str(n), draw(st.sampled_from(["28", "2a"])), str(draw(st.integers(0, 1 << 31))),
                str(draw(st.integers(0, 1 << 40)))]  # fmt: skip
        if draw(st.booleans()):
            good[draw(st.integers(0, 4))] = draw(CELL)
        rows.append(",".join(good))
    return "\n".join(rows) + "\n"


IOLOG = "fio version 2 iolog\n/dev/vdb add\n/dev/vdb open\n/dev/vdb read 0 4096\n/dev/vdb wait 0 100\n"
QEMU = "1@1700000000.000001:virtio_blk_handle_read vdev 0x55 req 0x1 sector 8 nsectors 8\n"
BLKPARSE = (
    "  8,0    0        1     0.000000000  1234  D   R 2048 + 8 [fio]\n"
    "  8,0    0        2     0.000100000  1234  D   W 4096 + 16 [fio]\n"
)


@rule(80)
@given(
    trace=csv_trace()
    | cloudphysics_trace()
    | mutated_text(IOLOG)
    | mutated_text(QEMU)
    | mutated_text(BLKPARSE)
    | st.text(max_size=80),
    command=st.sampled_from([["relocate", "analyze"], ["relocate", "plan"], ["membal", "mrc"]]),
)
def test_traces(trace: str, command: list[str]) -> None:
    with fresh_dir() as work, fresh_dir() as inputs:
        path = write_text(inputs / "trace.csv", trace)
        argv = [*command, str(path)]
        if command[1] == "plan":
            argv += ["-o", str(work / "plan.json")]
        code, err = run_cli(argv, work)
        check_rule(code, err, work)


# -- relocation plans, applied only from a loop device -----------------------------------------------------

E = 4096
DEVICE_BYTES = 2 << 20


def _plan() -> dict[str, Any]:
    layout = Layout.consecutive(["vm1", "vm2"], [128 * E, 128 * E], E, DEVICE_BYTES)
    return plan_to_dict(build_plan(layout, [np.arange(0, 128, 9), np.arange(2, 128, 13)], position="after"))


PLAN = _plan()
JSON_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=8,
)


@st.composite
def mutated_json(draw: st.DrawFn, doc: Any) -> str:
    """``doc`` with one to three values replaced or keys deleted, sometimes then cut as text."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 3))):
        node: Any = doc
        while True:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, (dict, list)) and child and draw(st.integers(0, 2)):
                node = child
                continue
            if isinstance(node, dict) and draw(st.integers(0, 3)) == 0:
                del node[key]
            else:
                node[key] = draw(JSON_VALUE)
            break
    text = json.dumps(doc)
    if draw(st.integers(0, 5)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


@pytest.fixture(scope="module")
def loop_source() -> Iterator[str]:
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    need("losetup")
    with disk_folder() as folder:
        image = folder / "src.img"
        image.write_bytes(np.random.default_rng(5).bytes(DEVICE_BYTES))
        dev = subprocess.check_output(["losetup", "-f", "--show", str(image)], text=True, timeout=30).strip()
        try:
            yield dev
        finally:
            subprocess.run(["losetup", "-d", dev], check=False, timeout=30)


@rule(80)
@given(text=mutated_json(PLAN))
def test_plans_applied_from_a_loop_device(text: str, loop_source: str) -> None:
    with fresh_dir() as work, fresh_dir() as inputs:
        plan = write_text(inputs / "plan.json", text)
        out = work / "out.img"
        code, err = run_cli(
            ["relocate", "apply", str(plan), "--source", loop_source, "--to-image", str(out)], work
        )
        check_rule(code, err, work)
        if code == 0:  # a plan that still holds: the output is the relocated copy, checked extent by extent
            data = json.loads(text)
            src, dst = Path(loop_source).read_bytes(), out.read_bytes()
            e = data["extent_bytes"]
            for _image, _logical, old, new in data["moves"]:
                assert dst[new * e : (new + 1) * e] == src[old * e : (old + 1) * e]


# -- evidence files ----------------------------------------------------------------------------------------

EVIDENCE = {
    "host": {"cpus": 16, "qemu_version": "7.2.0"},
    "vm": {"count": 1, "jobs_per_vm": 16, "bus": "virtio-blk", "iothreads": 0},
    "workload": {"read_pct": 100, "bs": 4096, "iodepth": 32},
    "measured": {"read_iops": 92000, "write_iops": 0, "dev_busy_pct": 60, "dev_queue": 3.1},
}


@rule(80)
@given(text=mutated_json(EVIDENCE))
def test_evidence_files(text: str) -> None:
    with fresh_dir() as work, fresh_dir() as inputs:
        path = write_text(inputs / "ev.json", text)
        code, err = run_cli(["diagnose", "--evidence", str(path)], work)
        check_rule(code, err, work, ok=(0, 1))  # 1: the diagnosis found a limit


# -- stores, read-only commands ----------------------------------------------------------------------------

CELLS = [
    ("campaign", "canonical"), ("campaign", "spec_text"), ("run", "host_json"), ("run", "offered_iops"),
    ("run", "bs"), ("run", "status"), ("run", "started"), ("result", "iops"), ("result", "p99"),
    ("result", "lat_mean"), ("histogram", "bins"), ("sample", "value"), ("sample", "t"), ("oplat", "lat_ns"),
    ("run_metric", "value"), ("membal_run", "settings"), ("membal_decision", "inputs"), ("migrations", "version"),
]  # fmt: skip
SQL_VALUE = (
    st.none() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(max_size=12) | st.binary(max_size=8)
    | JSON_VALUE.map(json.dumps)
)  # fmt: skip


@rule(80)
@given(
    edits=st.lists(st.tuples(st.sampled_from(CELLS), SQL_VALUE), min_size=1, max_size=3),
    command=st.sampled_from([["show"], ["show", "fixture"], ["export", "fixture", "--format", "json", "-o"]]),
)
def test_stores_read_only(
    edits: list[tuple[tuple[str, str], Any]], command: list[str], tmp_path: Path
) -> None:
    with fresh_dir() as work, fresh_dir() as folder:
        db = folder / "vmio.db"
        store_from_sql("schema-v2.sql", db)
        with Store(db):
            pass
        with contextlib.closing(sqlite3.connect(db)) as con:
            for (table, column), value in edits:
                with contextlib.suppress(sqlite3.IntegrityError):
                    con.execute(f'UPDATE "{table}" SET "{column}" = ?', (value,))
            con.commit()
        before = sorted(folder.iterdir())
        argv = command + ([str(work / "out.json")] if command[-1] == "-o" else [])
        code, err = run_cli([*argv, "--db", str(db)], work)
        check_rule(code, err, work)
        assert sorted(folder.iterdir()) == before, "a read-only command left a file beside the store"
