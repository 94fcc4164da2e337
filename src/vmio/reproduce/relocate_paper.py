"""kogakuin-relocate-2011 (seed 003): relocation's gain on the modelled HDD, per queue policy, and where
the accesses put the hot zone.

The FFSB model's ``cold_share`` is fitted once on the paper's 2-VM result under FCFS
(``vmio.relocate.ffsb.SEED_FIT``); every other figure is a prediction with it. The zone's place is not an
input here: the plan puts it at the median of the accesses outside the hot set (``zone = "median"``), and
that place is the reading compared with the paper's Figs. 5 and 7.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from vmio.relocate.calibration import seed_args
from vmio.relocate.commands import evaluate_request
from vmio.relocate.ffsb import SEED_FIT
from vmio.relocate.planner import Plan
from vmio.reproduce.result import Details, Fitted, Measured, TableRow


@dataclass(frozen=True)
class Scale:
    seeds: tuple[int, ...]
    requests: int


SCALES = {
    "quick": Scale(seeds=(0, 1, 2), requests=8_000),
    "paper": Scale(seeds=tuple(range(10)), requests=40_000),
}
POLICIES = ("fcfs", "mq-deadline", "bfq")
GB = 1e9  # the paper's [GB] on a 1 [TB] disk


@dataclass(frozen=True)
class Zone:
    """Where the accesses put the hot zone (over seeds), and the FCFS gain there and at the paper's place."""

    vms: int
    at_gb: list[float]  # per seed
    zone_gb: float
    gain_at_accesses: float
    gain_at_paper_place: float

    def row(self) -> TableRow:
        return {
            "vms": self.vms,
            "zone_gb": self.zone_gb,
            "gain_at_accesses": self.gain_at_accesses,
            "gain_at_paper_place": self.gain_at_paper_place,
        }


def run(scale: str) -> tuple[dict[str, Measured], Details, list[Fitted]]:
    """The claims' measurements, the page's tables and the fitted parameters."""
    conf = SCALES[scale]
    seeds, requests = conf.seeds, conf.requests
    measured: dict[str, Measured] = {}
    rows: list[TableRow] = []
    zones: list[TableRow] = []
    for vms in (2, 3):
        runs = {
            (policy, s): evaluate_request(seed_args(vms, s, requests, policy=policy, zone="median"))
            for policy in POLICIES
            for s in seeds
        }
        at_paper = [
            float(evaluate_request(seed_args(vms, s, requests, zone="seed")).evaluation.gain) for s in seeds
        ]
        seek = {
            p: statistics.median(float(runs[(p, s)].evaluation.before["mean_seek_cylinders"]) for s in seeds)
            for p in POLICIES
        }
        for policy in POLICIES:
            values = [float(runs[(policy, s)].evaluation.gain) for s in seeds]
            rows.append(
                {
                    "vms": vms,
                    "policy": policy,
                    "gain": round(statistics.median(values), 4),
                    "min": round(min(values), 4),
                    "max": round(max(values), 4),
                    "mean_seek_before": round(seek[policy], 1),
                }
            )
            measured[f"gain-{vms}vm-{policy}"] = Measured.median_of(
                values,
                why=_gain_why(policy, vms, seek, statistics.median(at_paper)),
                note=_fit_note(policy, vms),
            )
        fcfs = [runs[("fcfs", s)].evaluation for s in seeds]
        at = [_zone_middle(ev.plan) / GB for ev in fcfs]
        zone = _zone(vms, at, [float(ev.gain) for ev in fcfs], at_paper)
        zones.append(zone.row())
        measured[f"hot-zone-{vms}vm"] = Measured.median_of(zone.at_gb, why=_zone_why(zone))
    fitted: list[Fitted] = [
        {
            "name": "cold_share",
            "value": SEED_FIT.cold_share,
            "fitted_to": "gain-2vm-fcfs",
            "how": "the FFSB model's share of requests outside the hot spots, chosen so that the 2-VM median "
            "gain under FCFS is nearest the paper's +10 % (vmio.relocate.calibration.fit_cold_share); "
            "every other claim is a prediction with it",
        }
    ]
    return measured, {"gains": rows, "zones": zones, "seeds": list(seeds), "requests": requests}, fitted


def _zone_middle(plan: Plan) -> float:
    """The middle of the plan's hot zone, in bytes from the start of the disk."""
    e = plan.layout.extent_bytes
    return plan.zone_start * e + plan.zone_extents * e / 2


def _fit_note(policy: str, vms: int) -> str | None:
    if policy == "fcfs" and vms == 2:
        return f"fitted: the model's cold_share ({SEED_FIT.cold_share}) was chosen to give this claim's +10 %"
    return None


def _gain_why(policy: str, vms: int, seek: dict[str, float], at_paper: float) -> str:
    if policy == "fcfs" and vms == 2:
        return (
            f"cold_share was fitted with the zone at the paper's place, where this run gains {at_paper:+.1%}; "
            f"here the zone is where the accesses put it, which gains more (hot-zone-2vm); quick scale's few "
            f"requests widen the spread"
        )
    if policy == "fcfs":
        return (
            f"the model fitted on 2 VMs predicts less for 3 VMs than the paper measured ({at_paper:+.1%} with the "
            f"zone at the paper's place; docs/relocate-calibration.md); the paper's host (Xen, ext2 over one HDD) "
            f"is not modelled further"
        )
    return (
        f"a queue that orders requests by position already removes the long seeks between images that "
        f"relocation removes. Tested: before relocation the mean seek is {seek[policy]:.0f} cylinders under "
        f"{policy} against {seek['fcfs']:.0f} under FCFS ({vms} VMs, median over seeds), so little is left "
        f"for relocation to save; the paper does not name its host's scheduler"
    )


def _zone(vms: int, at: list[float], gains: list[float], at_paper: list[float]) -> Zone:
    """Where the accesses put the zone (``at``: its middle per seed, GB), and the FCFS gain there (``gains``,
    per seed) against the gain at the paper's place."""
    return Zone(
        vms=vms,
        at_gb=at,
        zone_gb=round(statistics.median(at), 1),
        gain_at_accesses=round(statistics.median(gains), 4),
        gain_at_paper_place=round(statistics.median(at_paper), 4),
    )


def _zone_why(zone: Zone) -> str:
    here, there = zone.gain_at_accesses, zone.gain_at_paper_place
    effect = "matters little to" if abs(here - there) < 0.02 else ("raises" if here > there else "lowers")
    return (
        f"vmio puts the zone at the median of the accesses outside the hot set ({zone.zone_gb:.0f} GB); the "
        f"paper's zone sits where its ext2 found room for the copied blocks (a hypothesis: it relocated by "
        f"rewriting inode block lists, §4). Tested: the accesses' place {effect} the gain in the replay: "
        f"{here:+.1%} there against {there:+.1%} at the paper's place ({zone.vms} VMs, FCFS, median over seeds)"
    )
