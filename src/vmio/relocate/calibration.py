"""kogakuin-relocate-2011's figures against the model: gains over seeds, and the one fit (``cold_share`` on 2 VMs).

The seed measured about +10 % with 2 VMs and +20 % with 3 (Figs. 2 and 3). vmio fits the calibrated FFSB
model's ``cold_share`` so that the 2-VM median over seeds is nearest +10 %, then predicts 3 VMs with it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from vmio.relocate.commands import evaluate_request
from vmio.relocate.requests import EvaluateRequest

SEED_GAINS = {2: 0.10, 3: 0.20}
# The 3-VM prediction falls short of the seed's +20 % by about this much (median over seeds 0-9 with the
# fitted cold share: +13.7 %); docs/relocate-calibration.md says why. Tests hold the model to it.
SHORTFALL_3VM = 0.063
COLD_GRID = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05)


def seed_args(vms: int, seed: int, requests: int, **over: object) -> EvaluateRequest:
    """``vmio relocate evaluate --synthetic ffsb`` in the seed's setting."""
    values: dict[str, object] = {
        "synthetic": "ffsb",
        "ffsb_model": "calibrated",
        "format": "auto",
        "extent": 1 << 20,
        "vms": vms,
        "image_size": 100 << 30,
        "hot": 2 << 30,
        "hot_fraction": 0.9,
        "threads": 4,
        "cold_share": None,
        "requests": requests,
        "seed": seed,
        "disk": "7200",
        "policy": None,
        "depth": None,
        "open_loop": False,
        "zone": "auto",
        "order": None,
        "plot": None,
        "save_plan": None,
    }
    values.update(over)
    return EvaluateRequest(**values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Spread:
    """Gains over seeds: median, min, max."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def text(self) -> str:
        return f"{self.median:+.1%} [{min(self.values):+.1%} .. {max(self.values):+.1%}]"


def gains(vms: int, seeds: Sequence[int], requests: int, **over: object) -> Spread:
    """The throughput gain of the plan for each seed."""
    return Spread(
        tuple(float(evaluate_request(seed_args(vms, s, requests, **over)).evaluation.gain) for s in seeds)
    )


def fit_cold_share(
    seeds: Sequence[int], requests: int, grid: Sequence[float] = COLD_GRID
) -> tuple[float, Spread]:
    """The ``cold_share`` of ``grid`` whose 2-VM median gain is nearest the seed's +10 %."""
    best: tuple[float, float, Spread] | None = None
    for c in grid:
        s = gains(2, seeds, requests, cold_share=c)
        miss = abs(s.median - SEED_GAINS[2])
        if best is None or miss < best[0]:
            best = (miss, c, s)
    assert best is not None
    return best[1], best[2]
