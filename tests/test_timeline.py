"""Where a point's time goes (issue 42): ``vmio run --verbose`` prints each point's timeline, the store keeps
its steps with the host facts, and the campaign's measuring share is printed. Real fio on a file; no wall
time is asserted, only the order of the steps, that they fit in the point's wall time, and fio's own
runtime."""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from pathlib import Path

import pytest

from vmio.campaign import timeline
from vmio.cli import main

pytestmark = pytest.mark.fio

SPEC = """[campaign]
name = "tl"
[[target]]
name = "bare"
path = "{scratch}/tl.img"
size = "16M"
[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
runtime = "1s"
ramp = "500ms"
offered_iops = [200, "max"]
"""
# the steps a point on a host target runs, in order; the first point also starts its target
ORDER = [timeline.BOOT, timeline.FACTS, timeline.JOBS, timeline.SAMPLER_START, timeline.FIO_START,
         timeline.MEASURING, timeline.FIO_END, timeline.SAMPLER_STOP, timeline.LOGS, timeline.STORE]  # fmt: skip
LINE = re.compile(r"^timeline (\S+): ([\d.]+) s, measuring ([\d.]+) s \(\d+ %\); (.*); other ([\d.]+)$")


def test_each_point_has_its_timeline(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "tl.toml"
    spec.write_text(SPEC.format(scratch=scratch))
    db = tmp_path / "tl.db"
    assert main(["run", str(spec), "--db", str(db), "--verbose"]) == 0
    out, err = capsys.readouterr()
    lines = [m for m in map(LINE.match, err.splitlines()) if m]
    assert [m[1] for m in lines] == [
        "bare/rr/bs=4k/offered=200/load=0/rep=1",
        "bare/rr/bs=4k/offered=max/load=0/rep=1",
    ]
    walls = []
    for i, m in enumerate(lines):
        steps = [part.rsplit(" ", 1) for part in m[4].split(", ")]
        names = [name for name, _ in steps]
        assert names == (ORDER if i == 0 else ORDER[1:]), names  # the target starts once
        wall, busy = float(m[2]), sum(float(s) for _, s in steps)
        rounding = 0.005 * (len(steps) + 2)  # each figure printed to 0.01 s
        assert busy <= wall + rounding and float(m[5]) == pytest.approx(max(0.0, wall - busy), abs=rounding)
        walls.append(wall)
    with sqlite3.connect(db) as con:
        stored = [
            (key, json.loads(facts))
            for key, facts in con.execute("SELECT point_key, host_json FROM run ORDER BY id").fetchall()
        ]
        runtimes = dict(con.execute("SELECT r.point_key, MAX(x.runtime_ms) FROM run r JOIN result x "
                                    "ON x.run_id = r.id GROUP BY r.id").fetchall())  # fmt: skip
    total = 0.0
    for i, ((key, facts), wall) in enumerate(zip(stored, walls, strict=True)):
        steps = facts["timeline"]
        assert [s[0] for s in steps] == [n for n in (ORDER if i == 0 else ORDER[1:]) if n != timeline.STORE]
        assert steps[-1][0] == timeline.LOGS  # the store write ends after the record is written
        assert all(0 <= start <= end for _, start, end in steps)
        assert all(a[2] <= b[1] + 1e-3 for a, b in itertools.pairwise(steps)), steps  # one after the other
        assert steps[-1][2] <= wall + 0.005  # the wall as printed, to 0.01 s
        measuring = [end - start for name, start, end in steps if name == timeline.MEASURING]
        # fio's own runtime (its JSON) plus the ramp the spec asks
        assert measuring == [pytest.approx(runtimes[key] / 1000 + 0.5, abs=0.01)]
        total += measuring[0]
    share = re.search(r"measuring \(fio's ramp and runtime\) ([\d.]+) s of ([\d.]+) s", out)
    assert share is not None, out
    assert float(share[1]) == pytest.approx(total, abs=0.1) and float(share[1]) <= float(share[2])
    assert float(share[2]) == pytest.approx(sum(walls), abs=0.1)


def test_fio_steps_clamp_to_the_run() -> None:
    """fio's window placed on the point's clock: a ramp that would start before fio's launch starts at it,
    and the three steps tile the launch-to-exit span."""
    steps = timeline.Timeline(clock=lambda: 0.0)
    from vmio.campaign.measure import fio_steps

    fio_steps(steps, offset=2.0, launched=1.0, began=0.5, end=4.0, exited=4.5)
    assert steps.steps == [
        (timeline.FIO_START, 3.0, 3.0),
        (timeline.MEASURING, 3.0, 6.0),
        (timeline.FIO_END, 6.0, 6.5),
    ]


def test_steps_starting_together_keep_the_order_run() -> None:
    """fio's end clamped to its exit starts with the samplers' stop: the order a point runs them, whatever
    the order they were noted in."""
    steps = timeline.Timeline(clock=lambda: 0.0)
    steps.add(timeline.SAMPLER_STOP, 5.0, 5.1)
    steps.add(timeline.FIO_END, 5.0, 5.0)
    steps.add(timeline.MEASURING, 2.0, 5.0)
    assert [s[0] for s in steps.steps] == [timeline.MEASURING, timeline.FIO_END, timeline.SAMPLER_STOP]
