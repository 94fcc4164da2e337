"""kogakuin-relocate-2011 (kogakuin-relocate-2011): relocation's gain on the modelled HDD with 2 and 3 VMs, its trend, and
the access distribution over the disk before and after (the paper's Figs. 4-7).

The FFSB model's ``cold_share`` is fitted once on the paper's 2-VM result under FCFS with the hot zone at
the paper's place (``vmio.relocate.ffsb.SEED_FIT``); the claims use that same setting (``zone = "seed"``),
so the fitted claim is judged where it was fitted and every other figure is a prediction with it.

Where the hot zone goes is a setting, not a result. The paper's method (§3) gathers each image's hot spots
next to each other; it does not say where on the disk. Its blocks went near 250/255 GB because its ext2
found room there when the inode block lists were rewritten (§4): an outcome of that host's free space, which
vmio's model does not have. vmio therefore places the zone where the paper's went (``setup`` claims
``hot-zone-*``), and shows the other choice, the median of the accesses outside the hot set, under
``beyond`` with its gain. The disk queue policies other than FCFS (mq-deadline, bfq) are what-ifs the paper
did not run: ``beyond`` too, with no paper value.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vmio.relocate.calibration import seed_args
from vmio.relocate.commands import EvaluationReport, evaluate_request
from vmio.relocate.ffsb import SEED_FIT
from vmio.relocate.planner import Plan
from vmio.reproduce.figure import Figure, Mark, Series
from vmio.reproduce.result import BeyondRow, Details, Fitted, Measured, beyond


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
BIN_GB = 10.0  # the access distributions' bins
PAPER_BEFORE = {2: (70.0, 170.0), 3: (40.0, 60.0, 190.0)}  # §5: where the accesses gathered before relocation
PAPER_AFTER = {2: 250.0, 3: 255.0}
NOTES = [
    "The claims are judged in the setting the model was fitted in (FCFS, the hot zone at the paper's place): "
    "the fitted claim gain-2vm-fcfs meets its own fit there, and the 3-VM gain and the trend between 2 and 3 "
    "VMs (gain-grows-with-vms, the paper's central finding) are predictions with it.",
    "Where the hot zone goes is vmio's setting, not a result: the paper's method (§3) gathers each image's hot "
    "spots next to each other but does not say where on the disk; its blocks went near 250/255 GB because its "
    "ext2 placed them there when the inode block lists were rewritten (§4), an outcome of that host's free "
    "space that the model does not have. vmio puts the zone where the paper's went (hot-zone-* are setup "
    "claims) and shows its own other choice, the median of the accesses, under 'Beyond the paper'.",
]


@dataclass
class Runs:
    """Per VM count: each seed's evaluation under each policy at the paper's place, and FCFS at the median."""

    fit: dict[tuple[int, str, int], EvaluationReport]  # (vms, policy, seed), zone = "seed"
    median: dict[tuple[int, int], EvaluationReport]  # (vms, seed), FCFS, zone = "median"
    seeds: tuple[int, ...]
    requests: int


def simulate(scale: str) -> Runs:
    conf = SCALES[scale]
    fit = {
        (vms, p, s): evaluate_request(seed_args(vms, s, conf.requests, policy=p, zone="seed"))
        for vms in (2, 3)
        for p in POLICIES
        for s in conf.seeds
    }
    median = {
        (vms, s): evaluate_request(seed_args(vms, s, conf.requests, zone="median"))
        for vms in (2, 3)
        for s in conf.seeds
    }
    return Runs(fit, median, conf.seeds, conf.requests)


def run(scale: str) -> tuple[dict[str, Measured], Details, list[Fitted], list[BeyondRow], list[Figure]]:
    """The claims' measurements, the page's tables, the fitted parameter, the what-ifs and the figures."""
    runs = simulate(scale)
    gains = {vms: _gains(runs, vms, "fcfs") for vms in (2, 3)}
    measured: dict[str, Measured] = {}
    for vms in (2, 3):
        measured[f"gain-{vms}vm-fcfs"] = Measured.median_of(
            gains[vms], why=_gain_why(vms), note=_fit_note(vms)
        )
        places = [_zone_middle(runs.fit[(vms, "fcfs", s)].evaluation.plan) / GB for s in runs.seeds]
        measured[f"hot-zone-{vms}vm"] = Measured.median_of(places, why=_zone_why(runs, vms))
    measured["gain-grows-with-vms"] = trend(gains)
    fitted: list[Fitted] = [
        {
            "name": "cold_share",
            "value": SEED_FIT.cold_share,
            "fitted_to": "gain-2vm-fcfs",
            "how": "the FFSB model's share of requests outside the hot spots, chosen so that the 2-VM median "
            "gain under FCFS, hot zone at the paper's place, is nearest the paper's +10 % "
            "(vmio.relocate.calibration.fit_cold_share); every other claim is a prediction with it",
        }
    ]
    details: Details = {"seeds": list(runs.seeds), "requests": runs.requests}
    return measured, details, fitted, _beyond(runs), figures(runs, gains)


def _gains(runs: Runs, vms: int, policy: str) -> list[float]:
    return [float(runs.fit[(vms, policy, s)].evaluation.gain) for s in runs.seeds]


def _beyond(runs: Runs) -> list[BeyondRow]:
    rows = []
    for vms in (2, 3):
        for policy in POLICIES[1:]:
            m = Measured.median_of(_gains(runs, vms, policy))
            seek = _seek(runs, vms, policy), _seek(runs, vms, "fcfs")
            rows.append(
                beyond(
                    f"gain-{vms}vm-{policy}",
                    f"{vms} VMs: relocation's gain with the disk queue ordered as Linux's {policy} orders it (as "
                    "modelled); the paper does not name its host's scheduler",
                    "median over seeds of the modelled FFSB throughput after / before - 1, zone at the paper's place",
                    m,
                    "gain",
                    f"a queue that orders requests by position already removes the long seeks between images that "
                    f"relocation removes: before relocation the mean seek is {seek[0]:.0f} cylinders under {policy} "
                    f"against {seek[1]:.0f} under FCFS (median over seeds)",
                )
            )
        m = Measured.median_of([float(runs.median[(vms, s)].evaluation.gain) for s in runs.seeds])
        at = statistics.median(_zone_middle(runs.median[(vms, s)].evaluation.plan) / GB for s in runs.seeds)
        rows.append(
            beyond(
                f"gain-{vms}vm-zone-at-median",
                f"{vms} VMs, FCFS: the hot zone at the median of the accesses outside the hot set ({at:.0f} GB), "
                "vmio's other choice of place, instead of the paper's",
                "median over seeds of the modelled FFSB throughput after / before - 1",
                m,
                "gain",
                "the place is a setting (the paper's method does not fix it); this shows how much it matters",
            )
        )
    return rows


def _seek(runs: Runs, vms: int, policy: str) -> float:
    return statistics.median(
        float(runs.fit[(vms, policy, s)].evaluation.before["mean_seek_cylinders"]) for s in runs.seeds
    )


def _zone_middle(plan: Plan) -> float:
    """The middle of the plan's hot zone, in bytes from the start of the disk."""
    e = plan.layout.extent_bytes
    return plan.zone_start * e + plan.zone_extents * e / 2


def _fit_note(vms: int) -> str | None:
    if vms == 2:
        return (
            f"fitted: the model's cold_share ({SEED_FIT.cold_share}) was chosen to give this claim's +10 % in this "
            "same setting (FCFS, hot zone at the paper's place)"
        )
    return None


def _gain_why(vms: int) -> str:
    if vms == 2:
        return "quick scale's few requests per seed widen the spread around the fitted figure"
    return (
        "the model fitted on 2 VMs predicts the 3-VM gain; the paper's host (Xen, ext2 over one HDD) is not "
        "modelled further (docs/relocate-calibration.md)"
    )


def trend(gains: dict[int, list[float]]) -> Measured:
    """``gain-grows-with-vms``: per seed, the 3-VM gain minus the 2-VM gain; a reversed trend (the median
    difference below 0) is said so first."""
    grows = [b - a for a, b in zip(gains[2], gains[3], strict=True)]
    diff = statistics.median(grows)
    two, three = statistics.median(gains[2]), statistics.median(gains[3])
    direction = (
        f"REVERSED: vmio's model gains less with 3 VMs than with 2 (median difference {diff:+.1%})"
        if diff < 0
        else f"the paper's direction (median difference {diff:+.1%})"
    )
    return Measured.median_of(
        grows,
        why=f"{direction}; 3 VMs {three:+.1%} against 2 VMs {two:+.1%} (medians over seeds). The paper's "
        "reason (§5): with more VMs the head moves between more images, so relocation saves more",
    )


def _zone_why(runs: Runs, vms: int) -> str:
    at_median = statistics.median(float(runs.median[(vms, s)].evaluation.gain) for s in runs.seeds)
    here = statistics.median(_gains(runs, vms, "fcfs"))
    return (
        "vmio chose it: the paper's method gathers the hot spots next to each other (§3) without "
        "saying where; its blocks went where its ext2 found room when it rewrote the inode block lists (§4). vmio "
        f"puts the zone where the paper's went (zone = seed, 25 % of the disk); the gain is {here:+.1%} there and "
        f"{at_median:+.1%} with the zone at the median of the accesses (beyond, gain-{vms}vm-zone-at-median)"
    )


def histogram(offsets: Sequence[int] | np.ndarray, disk_gb: float) -> list[tuple[float, float]]:
    """The share of requests (%) per ``BIN_GB`` bin of disk address, as (bin middle in GB, share)."""
    edges = np.arange(0.0, disk_gb + BIN_GB, BIN_GB)
    counts, _ = np.histogram(np.asarray(offsets, dtype=np.float64) / GB, bins=edges)
    total = max(int(counts.sum()), 1)
    return [
        (float(lo + BIN_GB / 2), 100.0 * float(c) / total) for lo, c in zip(edges[:-1], counts, strict=True)
    ]


def figures(runs: Runs, gains: dict[int, list[float]]) -> list[Figure]:
    """Figs. 2-3 (the gain with 2 and 3 VMs, every seed and the median beside the paper's) and Figs. 4-7 (the
    requests' addresses before and after relocation, seed 0, FCFS, zone at the paper's place)."""
    med = [(float(v), statistics.median(gains[v])) for v in (2, 3)]
    seeds = [Series(f"seed {s}", ((2.0, gains[2][i]), (3.0, gains[3][i]))) for i, s in enumerate(runs.seeds)]
    out = [
        Figure(
            id="fig2-3-gain",
            title="Figs. 2 and 3: relocation's gain with 2 and 3 VMs (FCFS, zone at the paper's place)",
            source="図 2 VM2 台の FFSB 実行結果, 図 3 VM3 台の FFSB 実行結果; §4: VM2 台の場合は約 10%, VM3 台の場合は約 20%向上",
            x="VMs running",
            y="gain (FFSB throughput after / before - 1)",
            series=(
                Series("vmio median over seeds", tuple(med), claim="gain-2vm-fcfs, gain-3vm-fcfs"),
                *seeds,
                Series("paper", ((2.0, 0.10), (3.0, 0.20)), kind="paper"),
            ),
            ticks=((2.0, "2"), (3.0, "3")),
        )
    ]
    first = runs.seeds[0]
    for vms, before_fig, after_fig in ((2, 4, 5), (3, 6, 7)):
        ev = runs.fit[(vms, "fcfs", first)]
        if ev.before is None or ev.after is None:
            continue
        disk_gb = ev.setup.disk.capacity_bytes / GB
        # the images (100 GB each from address 0) and the zone; the rest of the disk holds no request
        plan = ev.evaluation.plan
        zone_end = (plan.zone_start + plan.zone_extents) * plan.layout.extent_bytes / GB
        span = max(vms * 100.0, zone_end, PAPER_AFTER[vms]) + 30.0
        for label, offsets, fig, marks in (
            (
                "before",
                ev.before,
                before_fig,
                tuple(Mark("x", x, f"paper: {x:.0f} GB") for x in PAPER_BEFORE[vms]),
            ),
            (
                "after",
                ev.after,
                after_fig,
                (Mark("x", PAPER_AFTER[vms], f"paper: {PAPER_AFTER[vms]:.0f} GB"),),
            ),
        ):
            pts = [p for p in histogram(offsets, disk_gb) if p[0] <= span]
            out.append(
                Figure(
                    id=f"fig{fig}-{label}-{vms}vm",
                    title=f"Fig. {fig}: where the requests go on the disk {label} relocation, {vms} VMs (seed {first})",
                    source=f"図 {fig} 再配置{'前' if label == 'before' else '後(提案手法)'}のアクセス分布 (VM{vms} 台); §5: "
                    + (
                        "再配置前はアドレス 70[GB]付近、170[GB]付近へのアクセスが多数発生"
                        if (vms, label) == (2, "before")
                        else "再配置後は多くのアクセスが 250[GB]付近"
                        if (vms, label) == (2, "after")
                        else "再配置前は、40[GB]付近、60[GB]付近、190[GB]付近に I/O が集中"
                        if label == "before"
                        else "再配置後は 255[GB]付近に集中"
                    ),
                    x=f"disk address (GB, bins of {BIN_GB:.0f} GB; the disk is {disk_gb:.0f} GB, drawn to {span:.0f})",
                    y="share of requests (%)",
                    series=(Series(f"vmio {label}", tuple(pts)),),
                    marks=marks,
                )
            )
    return out
