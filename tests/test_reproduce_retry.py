"""A reproduction's campaign gives a failed point a second try (vmio.reproduce.retry): real fio on a file,
the point's first fio run cut short by the real runner's time limit, as a stalled guest's would be."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from vmio.campaign import runner
from vmio.fio.run import FIO
from vmio.reproduce.retry import Tries, run_campaign
from vmio.store import Store
from vmio.system.process import Completed, Runner

pytestmark = pytest.mark.fio

SPEC = """[campaign]
name = "retry"
repetitions = 2
[[target]]
name = "bare"
path = "{img}"
size = "16M"
[[workload]]
name = "rr"
rw = "randread"
bs = "4k"
runtime = "300ms"
"""


class CutFio(Runner):
    """The real runner; the first ``cuts`` fio job runs it starts get 0.2 s, so fio is stopped by its time
    limit (the error a stalled guest's point gets)."""

    def __init__(self, cuts: int) -> None:
        self.cuts = cuts

    def run(self, argv: Sequence[str], *, timeout: float, **kw: Any) -> Completed:
        if argv and argv[0] == FIO and str(argv[-1]).endswith(".fio") and self.cuts > 0:
            self.cuts -= 1
            timeout = 0.2
        return super().run(argv, timeout=timeout, **kw)


def campaign(scratch: Path, tmp_path: Path, cuts: int) -> tuple[Tries, Path]:
    db, tries = tmp_path / "r.db", Tries()
    with Store(db) as store:
        options = runner.Options(workdir=tmp_path / "work", runner=CutFio(cuts))
        name = run_campaign(SPEC.format(img=scratch / "r.img"), "<retry>", store, options, None, tries)
    assert name == "retry"
    return tries, db


def stored(db: Path) -> list[tuple[str, str, str | None]]:
    with Store(db) as store:
        rows = store.db.execute("SELECT point_key, status, error FROM run ORDER BY id").fetchall()
    return [(r["point_key"], r["status"], r["error"]) for r in rows]


def test_a_point_that_fails_once_is_measured_on_its_second_try(scratch: Path, tmp_path: Path) -> None:
    tries, db = campaign(scratch, tmp_path, cuts=1)
    rep1, rep2 = "bare/rr/bs=4k/offered=max/load=0/rep=1", "bare/rr/bs=4k/offered=max/load=0/rep=2"
    runs = stored(db)
    # the second try's run replaced the first's in the store (one run per point); the first's error is kept
    # in what the reproduction reports
    assert [(k, s) for k, s, _ in runs] == [(rep2, "done"), (rep1, "done")]
    assert len(tries.retried) == 1 and tries.failures == []
    point, _, error = tries.retried[0].partition(": ")
    assert point == rep1 and error == "fio on local: fio did not finish within 0.2 s and was killed", error
    # the second try measured: fio's own output, kept in the point's folder, gives the stored IOPS
    with Store(db) as store:
        run = store.db.execute("SELECT id FROM run WHERE point_key = ?", (rep1,)).fetchone()
        iops = sum(r["iops"] for r in store.results(run["id"]) if r["role"] == "measure")
    text = (tmp_path / "work" / rep1.replace("/", "_") / "fio-output.txt").read_text()
    fio_json = json.loads(text[text.index("{") :])
    assert iops == pytest.approx(sum(j["read"]["iops"] for j in fio_json["jobs"]), rel=1e-6)
    assert iops > 0


def test_a_point_that_fails_twice_is_a_failure(scratch: Path, tmp_path: Path) -> None:
    tries, db = campaign(scratch, tmp_path, cuts=3)  # rep 1, rep 2, and rep 1 again
    rep1, rep2 = "bare/rr/bs=4k/offered=max/load=0/rep=1", "bare/rr/bs=4k/offered=max/load=0/rep=2"
    runs = stored(db)
    assert [(k, s) for k, s, _ in runs] == [(rep1, "failed"), (rep2, "done")]
    assert tries.failures == [f"{rep1}: {runs[0][2]}"] and "did not finish within 0.2 s" in tries.failures[0]
    assert [f.partition(": ")[0] for f in tries.retried] == [rep2]
