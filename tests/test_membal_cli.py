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
    assert "cannot read scenario file" in capsys.readouterr().err


def test_sim_with_sampled_curves_says_its_bounds_are_estimates(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["membal", "sim", str(scenario), "--sample-rate", "0.5"]) == 0
    optimal = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("optimal")]
    assert optimal[0].endswith("(best split per epoch, MRCs sampled at rate 0.5: an estimate of the bound)")
    assert main(["membal", "sim", str(scenario), "--sample-size", "300", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["curves"] == {"method": "fixed-size sample of 300 keys", "rate": 1.0, "size": 300}
    assert 0 < data["optimal"]["hit_ratio"] <= 1


TRACE_CSV = "version,time,op,size,lbn\n" + "".join(
    f"1,{i},28,{4096 * (1 + i % 3)},{(i * 37 % 500) * 8}\n" for i in range(3_000)
)


def test_mrc_of_a_trace_exact_and_sampled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_CSV)
    assert main(["membal", "mrc", str(trace), "--points", "5", "--chunk", "64", "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert exact["method"] == "exact" and exact["accesses"] == exact["sampled"] == 6_000
    assert [p["pages"] for p in exact["curve"]][0] == 1 and len(exact["curve"]) == 5
    ratios = [p["miss_ratio"] for p in exact["curve"]]
    assert ratios == sorted(ratios, reverse=True) and ratios[-1] == pytest.approx(502 / 6_000, abs=1e-6)
    assert main(["membal", "mrc", str(trace), "--sample-size", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(
        "t.csv: 6000 page accesses, fixed-size sample of 100 keys, misses scaled to a HyperLogLog count of distinct keys, "
        "distances stretched alike: "
    )
    assert lines[1].split() == ["cache", "pages", "miss", "ratio"]
    assert len(lines) == 2 + 20
    assert main(["membal", "mrc", str(trace), "--sample-rate", "0.2", "--seeds", "3", "--json"]) == 0
    three = json.loads(capsys.readouterr().out)
    assert three["method"].startswith("sampled at rate 0.2, mean of 3 hash seeds") and three[
        "rate"
    ] == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sample-rate", "2"], "'2' is not in (0, 1]"),
        (["--sample-rate", "x"], "'x' is not a sampling rate"),
        (["--sample-size", "0"], "'0' is not a number of keys"),
        (["--sample-rate", "0.1", "--sample-size", "5"], "not allowed with argument"),
        (["--seeds", "3"], "--seeds 3 needs --sample-rate or --sample-size"),
        (["--sample-rate", "0.1", "--seeds", "0"], "--seeds"),
    ],
)
def test_bad_sampling_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_CSV)
    assert main(["membal", "mrc", str(trace), *args]) == 2
    assert message in capsys.readouterr().err


def test_mrc_of_a_bad_trace_is_one_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_CSV + "1,1,28,4096,-3\n")
    assert main(["membal", "mrc", str(trace), "--sample-rate", "0.1"]) == 2
    assert "t.csv:3002: size 4096 and lbn -3 are out of range" in capsys.readouterr().err
