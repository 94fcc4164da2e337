"""Commands that write several figures write all of them or none, and never through a planted link."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vmio.cli import main

DATA = Path(__file__).parent / "data" / "stores"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "v2.db"
    shutil.copy(DATA / "v2-campaign.db", path)
    return path


def report(db: Path, page: Path, pngs: Path) -> int:
    return main(["report", "base", "-o", str(page), "--png-dir", str(pngs), "--db", str(db)])


def test_report_pngs_are_all_or_none(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = tmp_path / "first"
    assert report(db, first / "r.html", first / "png") == 0
    pngs = sorted(p.name for p in (first / "png").iterdir())
    assert len(pngs) >= 3
    out = tmp_path / "second"
    (out / "png" / pngs[-1]).mkdir(parents=True)  # the last figure cannot be written: a folder is in the way
    capsys.readouterr()
    code = report(db, out / "r.html", out / "png")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and pngs[-1] in err and "Traceback" not in err
    # nothing of this command's output is left: not the page, not the figures written before the failure
    assert sorted(p.name for p in out.rglob("*")) == ["png", pngs[-1]]


def test_a_link_planted_among_the_figures_is_replaced_not_followed(db: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"data vmio must not touch\n")
    first = tmp_path / "first"
    assert report(db, first / "r.html", first / "png") == 0
    name = sorted(p.name for p in (first / "png").iterdir())[0]
    out = tmp_path / "png"
    out.mkdir()
    (out / name).symlink_to(victim)
    assert report(db, tmp_path / "r.html", out) == 0
    assert victim.read_bytes() == b"data vmio must not touch\n"
    assert not (out / name).is_symlink() and (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_relocate_figures_replace_a_planted_link_and_are_all_or_none(tmp_path: Path) -> None:
    traces = Path(__file__).parent / "data" / "relocate"
    victim = tmp_path / "victim"
    victim.write_bytes(b"data vmio must not touch\n")
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "access-distribution.png").symlink_to(victim)  # figures were once saved straight to the path
    assert main(["relocate", "analyze", str(traces / "plain.csv"), "--plot-dir", str(plots)]) == 0
    assert victim.read_bytes() == b"data vmio must not touch\n"
    assert not (plots / "access-distribution.png").is_symlink()
    # a figure that cannot be written takes the ones written before it away
    again = tmp_path / "again"
    (again / "heat-vm2.png").mkdir(parents=True)
    assert main(["relocate", "analyze", str(traces / "plain.csv"), "--plot-dir", str(again)]) == 2
    assert sorted(p.name for p in again.iterdir()) == ["heat-vm2.png"]
