"""Repeat until stable (``until_spread``, ``max_repetitions``) with real fio on a file: a point held steady by
fio's ``rate_iops`` settles in few repetitions; a point whose rate the test varies between repetitions (the real
runner, with each fio job file's ``rate_iops`` rewritten before fio reads it) runs to the maximum and says so.
The reference is a plain Student's t interval over the IOPS fio reported, with the t quantiles from a table."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rates import assert_throttled
from vmio.campaign import runner
from vmio.cli import main
from vmio.fio.run import FIO
from vmio.spec import loads_spec
from vmio.store import Store
from vmio.system.process import Completed, Runner

pytestmark = pytest.mark.fio

SPEC = """[campaign]
name = "{name}"
series = "stable"
until_spread = "5%"
max_repetitions = {most}
[[target]]
name = "bare"
path = "{img}"
size = "1M"
[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
direct = false      # reads from the page cache (warmed by the test): a disk other tests share cannot slow them
ioengine = "psync"
runtime = "1s"
offered_iops = [300]
"""
T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
}  # Student's t, 97.5 % quantile by dof


def warm(img: Path) -> Path:
    """The target file, written and read by the test so that every read the point makes hits the page cache."""
    img.write_bytes(bytes(range(256)) * 4096)
    assert len(img.read_bytes()) == 1 << 20
    return img


def half_width(values: Sequence[float]) -> float:
    """The half-width of the 95 % interval of the mean, as a fraction of the mean (a plain reference)."""
    n = len(values)
    return T975[n - 1] * statistics.stdev(values) / math.sqrt(n) / statistics.fmean(values)


def stored(db: Path, name: str) -> tuple[list[float], tuple[int, bool, float | None]]:
    """fio's IOPS of each repetition (from the stored fio results) and the point's stored settle record."""
    with Store(db, readonly=True) as s:
        runs = sorted(s.runs(name), key=lambda r: r["repetition"])
        iops = [sum(r["iops"] for r in s.results(run["id"]) if r["role"] == "measure") for run in runs]
        [settle] = s.settles(name).values()
    return iops, settle


class VaryingRate(Runner):
    """The real runner; before each fio run of a job file, its ``rate_iops=300`` becomes the next of RATES."""

    RATES = (150, 450)

    def __init__(self) -> None:
        self.runs = 0
        self.asked: list[str] = []  # each job file as fio read it

    def run(self, argv: Sequence[str], *, timeout: float, **kw: Any) -> Completed:
        if argv and argv[0] == FIO and str(argv[-1]).endswith(".fio"):
            job = Path(kw.get("cwd") or ".") / str(argv[-1])
            text = job.read_text()
            if "rate_iops=300" in text:
                job.write_text(text.replace("rate_iops=300", f"rate_iops={self.RATES[self.runs % 2]}"))
                self.asked.append(job.read_text())
                self.runs += 1
        return super().run(argv, timeout=timeout, **kw)


def test_a_steady_point_settles_in_few_repetitions(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, db = tmp_path / "steady.toml", tmp_path / "s.db"
    spec.write_text(SPEC.format(name="steady", most=8, img=warm(scratch / "s.img")))
    assert main(["run", str(spec), "--db", str(db)]) == 0
    iops, (taken, settled, spread) = stored(db, "steady")
    assert settled and taken == len(iops) < 8, iops  # before the maximum (here: 2 or 3 repetitions)
    assert spread == pytest.approx(half_width(iops), rel=1e-3)  # the table: 3 decimals
    assert half_width(iops) <= 0.05 and (
        taken == 2 or half_width(iops[:-1]) > 0.05
    )  # stopped when it settled
    capsys.readouterr()
    assert main(["trend", "stable", "--db", str(db), "--json"]) == 0
    [point] = json.loads(capsys.readouterr().out)["points"]
    assert point["settle"] == {"steady": {"repetitions": taken, "settled": True, "spread": spread}}


def test_a_varying_point_runs_to_the_maximum_and_says_so(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    text = SPEC.format(name="varying", most=3, img=warm(scratch / "v.img"))
    rates = VaryingRate()
    with Store(db) as store:
        outcome = runner.run(loads_spec(text, "varying.toml"), text, store, runner.Options(runner=rates))
    assert (outcome.done, outcome.failed) == (3, 0) and rates.runs == 3
    iops, (taken, settled, spread) = stored(db, "varying")
    # fio was asked for the rates the test set and kept under each (whether it reaches a rate depends on how
    # busy the host is: tests/rates.py; one that fell short, 300 of 450 on a loaded host, still varies)
    for achieved, rate, job in zip(iops, (150, 450, 150), rates.asked, strict=True):
        assert_throttled(achieved, rate, job)
    assert (taken, settled) == (3, False)
    assert spread == pytest.approx(
        half_width(iops), rel=1e-3
    )  # the table: 3 decimals and half_width(iops) > 0.05
    capsys.readouterr()
    assert main(["trend", "stable", "--db", str(db)]) == 0
    assert "NO (3 reps)" in capsys.readouterr().out
    assert main(["show", "varying", "--db", str(db)]) == 0
    said = f"bare/rr/bs=4k/offered=300/load=0: did NOT settle (max_repetitions = 3) after 3 repetition(s), spread {spread * 100:.1f}%"
    assert said in capsys.readouterr().out
    # the campaign's report says so too
    assert main(["report", "varying", "--db", str(db), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert (
        "<td>bare/rr/bs=4k/offered=300/load=0</td><td class='num'>3</td><td class=no>did NOT settle</td>"
        in page
    )
    # run again: the campaign is at its maximum, so the rule runs nothing more
    with Store(db) as store:
        again = runner.run(loads_spec(text, "varying.toml"), text, store, runner.Options(runner=rates))
    assert (again.done, again.skipped, rates.runs) == (0, 3, 3)
    # resumed with a higher maximum, the rule goes on where it stopped: one more pass, not three
    more = SPEC.format(name="varying", most=4, img=scratch / "v.img")
    with Store(db) as store:
        resumed = runner.run(loads_spec(more, "varying.toml"), more, store, runner.Options(runner=rates))
    assert (resumed.done, rates.runs) == (1, 4)
    assert stored(db, "varying")[1][:2] == (4, False)
