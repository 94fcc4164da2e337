"""Where the suite's time goes (issue 42): ``VMIO_TEST_TIMELINE`` has tests/conftest.py write one line a test
(wall, phases, CPU with its children), and ``scripts/suite_timeline.py`` reads them. Checked on a small run
of its own: a test that spins against one that sleeps, a child that spins, both against the clocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "suite_timeline.py"

TESTS = """
import subprocess, sys, time

def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_spins():
    spin(0.6)

def test_sleeps():
    time.sleep(0.6)

def test_a_child_spins():
    code = "import time\\nend = time.process_time() + 0.6\\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
"""


def inner_env(lines: Path) -> dict[str, str]:
    """The inner pytest's environment: this one's, without what makes it one of the outer run's workers (run
    by ``make test``'s workers, the inner controller would take itself for one, share the outer run's alone
    locks and wait for the very test that started it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST_", "VMIO_TEST_GROUPS"))}
    return {**env, "VMIO_TEST_TIMELINE": str(lines), "PYTHONPATH": f"{ROOT / 'tests'}:{ROOT / 'src'}"}


def test_each_test_has_its_line_and_the_script_reads_them(tmp_path: Path) -> None:
    (tmp_path / "test_three.py").write_text(TESTS)
    lines = tmp_path / "t.jsonl"
    env = inner_env(lines)
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:randomly", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_three.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {
        json.loads(line)["test"].split("::")[1]: json.loads(line) for line in lines.read_text().splitlines()
    }
    assert set(rows) == {"test_spins", "test_sleeps", "test_a_child_spins"}
    for r in rows.values():
        wall = r["end"] - r["start"]
        assert r["worker"] == "main" and r["waited"] == 0 and r["alone"] is False
        # the phases lie within the test's wall time, which holds at least the 0.6 s each test takes
        assert 0.6 <= r["setup"] + r["call"] + r["teardown"] <= wall + 0.05, r
    # CPU: the spinning test and the spinning child used their 0.6 s of process time; sleeping uses next to none
    # (the bounds hold however busy the host is: process time is counted, not wall time)
    assert rows["test_spins"]["cpu"] >= 0.6 and rows["test_a_child_spins"]["cpu"] >= 0.6
    assert rows["test_sleeps"]["cpu"] < 0.3
    # the starts are in the order run, each test after the one before
    order = sorted(rows.values(), key=lambda r: r["start"])
    assert all(a["end"] <= b["start"] + 0.01 for a, b in zip(order, order[1:], strict=False))
    shown = subprocess.run(
        [sys.executable, str(SCRIPT), str(lines), "--top", "2"], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.startswith("3 tests, ") and "\nmain " in out
    slowest = out.split("the 2 slowest")[1].split("\n\n")[0].strip().splitlines()[2:]
    assert len(slowest) == 2  # two of the three, the slowest first
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "none.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "none.jsonl" in bad.stderr and "Traceback" not in bad.stderr


ALONE_TESTS = """
import time, pytest

@pytest.mark.alone
def test_alone():
    time.sleep(1.5)

def test_a():
    time.sleep(1.5)

def test_b():
    time.sleep(0.5)

def test_c():
    time.sleep(0.5)
"""


def test_in_two_workers_no_test_runs_beside_an_alone_one(tmp_path: Path) -> None:
    """``make test``'s two workers: each line names its worker, and a test the alone one kept out says how
    long it waited; no other test ran (start + waited .. end) while the alone one did, and the alone one,
    handed out first, did not wait for the other worker's first test (1.5 s): that one waited for it."""
    (tmp_path / "test_four.py").write_text(ALONE_TESTS)
    lines = tmp_path / "t.jsonl"
    env = inner_env(lines)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-n", "2", "--dist", "loadgroup", "--rootdir", str(tmp_path), str(tmp_path / "test_four.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [json.loads(line) for line in lines.read_text().splitlines()]
    assert sorted(r["test"].split("::")[1] for r in rows) == ["test_a", "test_alone", "test_b", "test_c"]
    assert {r["worker"] for r in rows} <= {"gw0", "gw1"}
    (alone,) = [r for r in rows if r["alone"]]
    assert alone["waited"] < 0.5, alone
    began = alone["start"] + alone["waited"]
    for r in rows:
        if r is not alone:
            # 0.05 s for the bookkeeping between a lock's release and the clock read after it
            assert r["start"] + r["waited"] >= alone["end"] - 0.05 or r["end"] <= began + 0.05, (r, alone)
