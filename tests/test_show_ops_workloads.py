"""vmio show CAMPAIGN --ops groups by the workload as defined, never by rw alone (issue 26), with real fio."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vmio.cli import main

pytestmark = pytest.mark.fio

OPS = 20


def test_two_ops_workloads_with_the_same_rw_stay_two_rows(
    scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # okayama-hypervisors-2020's raw device vs file comparison in small: the same reads, direct and through the page cache
    spec = tmp_path / "o.toml"
    spec.write_text(
        f'[campaign]\nname = "o"\n[[target]]\nname = "bare"\npath = "{scratch}/o.img"\nsize = "8M"\n'
        f'[[workload]]\nname = "direct"\nrw = "randread"\nops = {OPS}\n'
        f'[[workload]]\nname = "buffered"\nrw = "randread"\ndirect = false\nops = {OPS}\n'
    )
    db = str(tmp_path / "o.db")
    assert main(["run", str(spec), "--db", db]) == 0
    capsys.readouterr()
    assert main(["show", "o", "--ops", "--json", "--db", db]) == 0
    rows = json.loads(capsys.readouterr().out)
    # one fio process each ran OPS timed operations: two rows of OPS, not one of 2 x OPS
    assert [(r["workload"], r["rw"], r["ops"]) for r in rows] == [("direct", "randread", OPS),
                                                                  ("buffered", "randread", OPS)]  # fmt: skip
    assert main(["show", "o", "--ops", "--db", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "workload" in lines[0].split() and len(lines) == 3
    assert [line.split()[7:9] for line in lines[1:]] == [["direct", "randread"], ["buffered", "randread"]]
