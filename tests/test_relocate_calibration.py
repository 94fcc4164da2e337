"""kogakuin-relocate-2011's FFSB figures: the 2-VM gain is fitted, the 3-VM gain is predicted; where the zone goes."""

from __future__ import annotations

import json

import pytest

from vmio.cli import main
from vmio.relocate.calibration import SEED_GAINS, SHORTFALL_3VM, gains, seed_args
from vmio.relocate.commands import evaluate_request, evaluation_lines

from conftest import CLOUDPHYSICS_SAMPLE

SEEDS = range(10)
REQUESTS = 12_000  # per VM; the medians over 10 seeds move by about a point between 12k and 24k


@pytest.fixture(scope="module")
def two_and_three() -> tuple[float, float]:
    return gains(2, SEEDS, REQUESTS).median, gains(3, SEEDS, REQUESTS).median


def test_two_vms_fit_the_seeds_ten_percent(two_and_three: tuple[float, float]) -> None:
    assert abs(two_and_three[0] - SEED_GAINS[2]) <= 0.05


def test_three_vms_predicted_within_the_documented_distance_of_twenty_percent(
    two_and_three: tuple[float, float],
) -> None:
    two, three = two_and_three
    # The seed: +20 %. vmio's prediction is documented as SHORTFALL_3VM below it; hold it there (+-2 points)
    # and never above the seed's +20 % + 5 points.
    assert SEED_GAINS[3] - SHORTFALL_3VM - 0.02 <= three <= SEED_GAINS[3] + 0.05
    assert three > two  # more VMs, more to gain (the seed's reading of Figs. 2 and 3)


def test_zone_follows_the_seeds_figures_unless_cold_accesses_pull_it_away() -> None:
    r = evaluate_request(seed_args(2, 0, 4000))
    plan = r.evaluation.plan
    assert plan.placement == "seed-figure"
    assert 240e9 <= plan.zone_start * plan.layout.extent_bytes <= 255e9  # Figs. 5 and 7: near 250 GB
    assert any(line.startswith("zone placement: seed-figure") for line in evaluation_lines(r))
    far = evaluate_request(seed_args(2, 0, 8000, cold_share=0.8)).evaluation.plan
    assert far.placement == "access-median"
    assert far.zone_start * far.layout.extent_bytes < 200e9  # among the images, not beyond them


CLOUDPHYSICS = CLOUDPHYSICS_SAMPLE


@pytest.mark.skipif(not CLOUDPHYSICS.exists(), reason="the shared CloudPhysics sample is not on this machine")
def test_the_real_cloudphysics_trace_still_replays_with_a_placement_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["relocate", "evaluate", "--trace", str(CLOUDPHYSICS), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["before"]["requests"] == 113_872 and r["after"]["requests"] == 113_872
    assert r["plan"]["zone"]["placement"] in ("seed-figure", "access-median")
    assert r["plan"]["zone"]["placement_reason"]
