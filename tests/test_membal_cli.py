"""``vmio membal sim``: the text table, the --json contract, plots, and bad input as one message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vmio.cli import main

SCENARIO = """\
[scenario]
name = "cli"
memory = 800
epoch = 2000
accesses = 40000
seed = 4
policies = ["marginal", "efficiency"]

[[vm]]
name = "u"
workload = "uniform"
pages = 900

[[vm]]
name = "z"
workload = "zipf"
pages = 5000
alpha = 1.0
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO)
    return p


def test_json_shape_is_the_contract(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["membal", "sim", str(scenario), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["policies"]) == ["equal", "marginal", "efficiency"]
    assert data["policies"]["equal"]["vs_equal"] == 1.0
    optimal = data["optimal"]["hit_ratio"]
    assert 0 < optimal <= 1
    for entry in data["policies"].values():
        assert {"hit_ratio", "vs_equal", "vs_optimal"} <= set(entry)
        assert entry["vs_optimal"] == pytest.approx(entry["hit_ratio"] / optimal, abs=1e-5)
        assert entry["hit_ratio"] <= optimal


def test_text_table_and_plots(scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "plots"
    assert main(["membal", "sim", str(scenario), "--plots", str(out_dir)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "scenario cli: 2 VMs sharing 3200k, 40000 accesses, epoch 2000"
    assert lines[1].split()[:5] == ["policy", "hit", "ratio", "vs", "equal"]
    assert [ln.split()[0] for ln in lines[2:7]] == ["equal", "marginal", "efficiency", "optimal", "oracle"]
    assert lines[2].split()[2] == "1.000"
    for name in ("hit_ratio.png", "hit_ratio.svg", "memory.png", "memory.svg"):
        assert (out_dir / name).stat().st_size > 1000
        assert f"wrote {out_dir / name}" in text
    assert (out_dir / "hit_ratio.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_scenario_is_one_message_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(SCENARIO.replace("alpha = 1.0", "alpha = 'steep'"))
    assert main(["membal", "sim", str(bad)]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"vmio: error: {bad}:18: vm[1].alpha = 'steep' is not accepted; use a number from 0.0 up to 5.0\n"
    )
    assert main(["membal", "sim", str(tmp_path / "missing.toml")]) == 2
    assert "cannot read the scenario file" in capsys.readouterr().err
