"""Every case of ``tests/data/bad/cases.toml`` through the CLI: its exit code, one line on stderr naming the
value, no traceback, no file left behind."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path
from typing import Any

import pytest

from vmio.cli import main

BAD = Path(__file__).parent / "data" / "bad"
CASES: list[dict[str, Any]] = tomllib.loads((BAD / "cases.toml").read_text())["case"]


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c["argv"])[:60] for c in CASES])
def test_bad_input_is_one_clear_error(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    fixture = tmp_path / "fixture.db"
    with sqlite3.connect(fixture) as db:
        db.executescript((BAD.parent / "stores" / "schema-v2.sql").read_text())
    db.close()
    monkeypatch.chdir(tmp)
    monkeypatch.delenv("VMIO_DB", raising=False)
    argv = [a.format(data=BAD, tmp=tmp, fixture=fixture) for a in case["argv"]]
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert case["message"] in lines[0]
    assert code == case["exit"], lines[0]
    assert list(tmp.iterdir()) == [], "a bad input left a file behind"
