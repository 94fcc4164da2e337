"""``vmio membal run`` settings: defaults, --config files, command-line precedence and bad input (no VMs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vmio.cli import build_parser, main
from vmio.cli.membal_live import settings_from
from vmio.errors import InputError, SpecError
from vmio.membal.liverun import LiveSettings
from vmio.membal.livework import Load, job_text, load_config

M = 1 << 20


def settings(argv: list[str]) -> LiveSettings:
    return settings_from(build_parser().parse_args(["membal", "run", *argv]))


def test_defaults_give_two_vms_halfway_between_floor_and_memory() -> None:
    s = settings([])
    rules = s.rules()
    assert (s.vms, s.policy, s.interval, s.duration) == (2, "refault", 2.0, 60.0)
    assert rules.budget == 768 * M and rules.initial() == [384 * M, 384 * M]
    assert rules.max_step == 64 * M and rules.deflate == 64 * M


def test_config_then_command_line(tmp_path: Path) -> None:
    conf = tmp_path / "live.toml"
    conf.write_text(
        '[run]\npolicy = "mom"\ninterval = "1s"\nmax_step = "16M"\n\n[policy]\nshrink = 0.5\n\n'
        '[[vm]]\nload = "100M"\nrw = "read"\nfloor = "300M"\n\n[[vm]]\n'
    )
    s = settings(["--config", str(conf), "--interval", "3s"])
    assert (s.policy, s.interval, s.max_step) == ("mom", 3.0, 16 * M)
    assert s.floors == (300 * M, 256 * M) and s.params == {"shrink": 0.5}
    assert s.loads == (Load(100 * M, "read"), Load(0))
    s = settings(["--config", str(conf), "--floor", "280M", "--load", "50M,60M", "--param", "grow=0.2"])
    assert s.floors == (280 * M, 280 * M) and s.loads == (Load(50 * M), Load(60 * M))
    assert s.params == {"shrink": 0.5, "grow": 0.2}


def test_refault_step_is_given_in_bytes_and_kept_in_pages() -> None:
    assert settings(["--param", "step=32M", "--param", "hysteresis=0.2"]).params == {
        "step": 32 * M // 4096, "hysteresis": 0.2,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[run]\nmemory = "lots"\n', r"live.toml:2: run.memory: 'lots' is not a size"),
        ("[run]\ncolour = 1\n", r"live.toml:2: run.colour is not known"),
        ('[[vm]]\nload = "1M"\n\n[[vm]]\nrw = "write"\n', r"live.toml:5: vm.rw = 'write' is not accepted"),
        ("[disk]\n", r"unknown tables \['disk'\]"),
        ('[[vm]]\nload = "100M"\nhot = "10M"\n', r"live.toml:3: vm.hot and vm.hot_share go together"),
        (
            '[[vm]]\nload = "100M"\nhot = "200M"\nhot_share = 0.9\n',
            r"live.toml:3: vm.hot = \d+ bytes must lie",
        ),
        (
            '[[vm]]\nload = "100M"\nhot = "10M"\nhot_share = 1.5\n',
            r"live.toml:4: vm.hot_share: 1.5 is not a frac",
        ),
    ],
)
def test_bad_config_names_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    conf = tmp_path / "live.toml"
    conf.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_config(conf)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--policy", "marginal"], "cannot run live: it needs sampled stack distances"),
        (["--policy", "nonsense"], "is not a policy; live policies are equal, refault, mom, efficiency"),
        (["--floor", "600M"], "at most its memory"),
        (["--floor", "1M,2M,3M"], "3 values for 2 VMs"),
        (["--vms", "3", "--budget", "700M"], "more than the budget"),
        (["--interval", "100ms"], "too short"),
        (["--param", "alpha=1"], "has no parameter 'alpha'"),
        (["--load", "1M,1M,1M"], "3 workloads for 2 VMs"),
        (["--psi-threshold", "2"], "use a share in"),
    ],
)
def test_bad_options_fail_before_any_vm_boots(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError, match=message):
        settings(argv).rules()
    assert main(["membal", "run", *argv]) == 2
    assert "vmio: error:" in capsys.readouterr().err


def test_load_job_reads_through_the_page_cache() -> None:
    job = job_text(Load(200 * M), "/dev/vda", 30)
    assert "direct=0" in job and "invalidate=0" in job and f"size={200 * M}" in job and "rw=randread" in job


def test_a_hot_range_gets_its_share_of_the_reads_through_zoned_abs() -> None:
    job = job_text(Load(1024 * M, "randread", 32 << 10, 150 * M, 0.91), "/dev/vda", 30)
    assert f"random_distribution=zoned_abs:91/{150 * M}:9/{874 * M}" in job


def test_the_shipped_case1_live_config_loads() -> None:
    example = Path(__file__).parents[1] / "examples" / "membal" / "live" / "case1.toml"
    s = settings(["--config", str(example)])
    assert s.policy == "efficiency" and s.params == {"step": 32 * M // 4096}
    assert s.loads[1].hot == 150 * M and s.loads[0].hot == 0
    assert settings(["--config", str(example), "--policy", "equal"]).params == {}  # [policy] is efficiency's


@pytest.mark.parametrize(
    "argv",
    [
        ["--compare", "equal"],  # one policy: nothing to compare
        ["--compare", "equal,equal"],
        ["--compare", "equal,marginal"],  # not a live policy
        ["--compare", "equal,efficiency", "--policy", "refault"],
        ["--sim", "examples/membal/case1-live-sim.toml"],  # --sim without --compare
    ],
)
def test_compare_refuses_bad_input_before_any_vm_boots(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["membal", "run", *argv]) == 2
    err = capsys.readouterr().err
    assert "vmio: error:" in err and "Traceback" not in err


def test_the_shipped_case1_config_names_its_sim_scenario() -> None:
    from vmio.cli.membal_live import _scenario_path

    example = Path(__file__).parents[1] / "examples" / "membal" / "live" / "case1.toml"
    args = build_parser().parse_args(
        ["membal", "run", "--config", str(example), "--compare", "equal,efficiency"]
    )
    path = _scenario_path(args)
    assert path is not None and path.resolve() == example.parents[1] / "case1-live-sim.toml"


def test_compare_refuses_a_scenario_with_other_vms(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = Path(__file__).parents[1] / "examples" / "membal" / "case2-nfs-images.toml"
    assert main(["membal", "run", "--compare", "equal,efficiency", "--sim", str(scenario), "--vms", "3"]) == 2
    assert "has 2 VMs and the live runs 3; give it one [[vm]] per live VM" in capsys.readouterr().err


def test_the_comparison_prints_live_beside_sim(tmp_path: Path) -> None:
    """The table and its ratios from two live outcomes (as the runs summarize them) and a real simulation."""
    from dataclasses import replace

    from vmio.cli.membal_live import render_comparison
    from vmio.membal.compare import compare
    from vmio.membal.liverun import LiveOutcome
    from vmio.membal.outcome import run_scenario
    from vmio.membal.scenario import load_scenario

    scenario = load_scenario(Path(__file__).parents[1] / "examples" / "membal" / "uniform-vs-skewed.toml")
    sim = run_scenario(replace(scenario, accesses=40_000, policies=("equal", "efficiency")))

    def live(policy: str, moved: int, hits: tuple[int, int]) -> LiveOutcome:
        summary = {
            vm: {"initial": 288 * M, "final": 288 * M + sign * moved, "hits": h, "misses": 1000 - h,
                 "hit_ratio": h / 1000}
            for vm, sign, h in zip(("vmio-0", "vmio-1"), (-1, 1), hits, strict=True)
        }  # fmt: skip
        return LiveOutcome(
            7 if policy == "equal" else 8, "tcg", summary, [], ["vmio-0", "vmio-1"], sum(hits) / 2000
        )

    runs = {"equal": live("equal", 0, (100, 500)), "efficiency": live("efficiency", 32 * M, (80, 700))}
    c = compare(["equal", "efficiency"], runs, sim, 50.0)
    assert c.names == ("vmio-0/uniform", "vmio-1/skewed")
    ratios = c.ratios()
    assert ratios["live"] == {"equal": 1.0, "efficiency": round(0.39 / 0.3, 4)}
    assert ratios["sim"]["efficiency"] == round(
        sim.runs["efficiency"].hit_ratio / sim.runs["equal"].hit_ratio, 4
    )
    text = render_comparison(c).splitlines()
    assert text[1].split() == ["live", "equal", "live", "efficiency", "sim", "equal", "sim", "efficiency"]
    assert "288m->256m (-32m)" in text[3] and "288m->320m (+32m)" in text[5]
    assert text[-2].split()[-4:-2] == ["0.300", "0.390"] and text[-1].split()[:2] == ["vs", "equal"]
    data = c.to_json()
    assert data["live"]["efficiency"]["vms"]["vmio-1/skewed"]["move"] == 32 * M
    assert set(data["sim"]) == {"equal", "efficiency"} and data["run_ids"] == {"equal": 7, "efficiency": 8}
