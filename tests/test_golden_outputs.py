"""What vmio prints for a stored campaign, byte for byte, against what it printed when the store was made.

``tests/data/stores/v2-campaign.db`` is a real campaign (a bare-host file and a virtio-blk VM under TCG, two
workloads, an offered-load sweep, two repetitions) stored by vmio at schema version 2, before the package
restructure; beside it are ``show``, ``show --json``, ``compare``, ``diagnose`` and the report's tables as
that vmio printed them. A change that alters any of them on purpose regenerates the file and says why.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from vmio.cli import main

DATA = Path(__file__).parent / "data" / "stores"
COMMANDS = {
    "show.txt": ["show", "base"],
    "show.json": ["show", "base", "--json"],
    "compare.txt": ["compare", "base", "--baseline", "bare"],
    "diagnose.txt": ["diagnose", "base"],
    "diagnose.json": ["diagnose", "base", "--json"],
}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    copy = tmp_path / "vmio.db"
    shutil.copy(DATA / "v2-campaign.db", copy)
    return copy


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_output_is_unchanged(db: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*COMMANDS[name], "--db", str(db)]) == 0
    assert capsys.readouterr().out == (DATA / f"v2-campaign.{name}").read_text()


def test_report_tables_are_unchanged(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    assert main(["report", "base", "-o", str(out), "--db", str(db)]) == 0
    tables = re.findall(r"<table.*?</table>", out.read_text(), flags=re.S)
    # every table byte for byte; their order on the page may change (the summary now comes first)
    assert sorted(tables) == sorted((DATA / "v2-campaign.report-tables.html").read_text().splitlines())
