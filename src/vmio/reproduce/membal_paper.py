"""hitachi-membal-2014 (seed 001), simulated: Table 1's two cases under the paper's rule against an equal split.

VM1 (both cases) is modelled as the paper describes it: "most of the accessed range" does not fit in either
split, so a small common part (the pages every visitor's page view reads) does, and the rest is spread
over content far larger than memory. The same case with VM1 uniform over its content (no common part,
``examples/membal/case1-web-burst.toml``) runs beside it: it is what tests why VM1 cannot both keep its
ratio and give the ~1.5x total.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from vmio.membal.outcome import run_scenario
from vmio.membal.scenario import parse_scenario
from vmio.reproduce.result import Details, Measured, TableRow


@dataclass(frozen=True)
class Scale:
    accesses: int
    seeds: tuple[int, ...]


SCALES = {
    "quick": Scale(accesses=1_000_000, seeds=(1, 2)),
    "paper": Scale(accesses=4_000_000, seeds=(1, 2, 3, 4, 5)),
}

WEB_COMMON = 'common = "8M"\ncommon_share = 0.5\n'  # the part every visitor reads: half the requests

# Both cases: the same host and VM1 (web); case 1 adds the bursty web server, case 2 the NFS server of images
SCENARIO_HEAD = """
[scenario]
name = "hitachi-membal-2014-{case}"
memory = "256M"
page = "4k"
epoch = 20000
accesses = {accesses}
seed = {seed}
policies = ["equal", "efficiency"]

[policy.efficiency]
step = "8M"

[[vm]]
name = "web"
workload = "web-normal"
floor = "32M"
content = "{web_content}"
file = "32k"
{web_extra}
"""

CASE1 = (
    SCENARIO_HEAD.replace("{case}", "case1").replace("{web_content}", "4G")
    + """[[vm]]
name = "burst"
workload = "web-burst"
floor = "32M"
content = "2G"
hot = "160M"
factor = 100
burst_every = 4000
burst_length = 3000
file = "32k"
"""
)

CASE2 = (
    SCENARIO_HEAD.replace("{case}", "case2").replace("{web_content}", "16G")
    + """[[vm]]
name = "nfs"
workload = "nfs-images"
floor = "32M"
images = 4
boot = "24M"
"""
)


@dataclass(frozen=True)
class CaseRatios:
    """Scheduler (the paper's rule, ``efficiency``) against the equal split, one seed."""

    total: float
    vm1: float
    vm2: float
    vm2_memory: float  # VM2's final memory / its equal share
    vm1_equal: float  # VM1's hit ratio at the equal split
    vm1_scheduled: float


def _case(text: str) -> CaseRatios:
    out = run_scenario(parse_scenario(text))
    eq, sch = out.runs["equal"], out.runs["efficiency"]
    vq, vs = eq.vm_hit_ratio(), sch.vm_hit_ratio()
    share = out.scenario.memory / len(out.scenario.vms)
    return CaseRatios(
        total=sch.hit_ratio / eq.hit_ratio,
        vm1=float(vs[0] / vq[0]),
        vm2=float(vs[1] / vq[1]),
        vm2_memory=float(sch.allocation[-1][1] / share),  # both in pages
        vm1_equal=float(vq[0]),
        vm1_scheduled=float(vs[0]),
    )


def run(scale: str) -> tuple[dict[str, Measured], Details]:
    """The claims' measurements and the page's table."""
    conf = SCALES[scale]
    described, uniform, case2, case2_uniform = [], [], [], []
    for seed in conf.seeds:
        fill = {"accesses": conf.accesses, "seed": seed}
        described.append(_case(CASE1.format(**fill, web_extra=WEB_COMMON)))
        uniform.append(_case(CASE1.format(**fill, web_extra="")))
        case2.append(_case(CASE2.format(**fill, web_extra=WEB_COMMON)))
        case2_uniform.append(_case(CASE2.format(**fill, web_extra="")))
    med = statistics.median
    u_total, u_vm1 = med(c.total for c in uniform), med(c.vm1 for c in uniform)
    u_eq, u_sch = med(c.vm1_equal for c in uniform), med(c.vm1_scheduled for c in uniform)
    d_vm1 = med(c.vm1 for c in described)
    gain_why = (
        f"with VM1 as the paper describes it (half its requests to an 8 MiB common part that fits in either "
        f"split, the rest over 4 GiB) VM1 keeps its ratio ({d_vm1:.3f}x) but contributes many hits at both "
        f"splits, so the total gains less. Tested: the same case with VM1 uniform over its content (no common "
        f"part) gains {u_total:.3f}x in total, yet VM1's ratio falls to {u_vm1:.3f}x ({u_eq:.4f} -> {u_sch:.4f}), "
        f"as it must: a uniform access's hit ratio is its cache over its content, so the memory the paper's "
        f"rule takes from VM1 lowers it in proportion. Under the paper's rule 'VM1 does not fall' and "
        f"'~1.5x in total' are not both reached in vmio's model"
    )
    measured = {
        "case1-total-gain": Measured.median_of([c.total for c in described], why=gain_why),
        "case1-memory-moves": Measured.median_of([c.vm2_memory for c in described]),
        "case1-vm1-holds": Measured.median_of(
            [c.vm1 for c in described],
            why=f"VM1 loses the memory its common part needs; VM1 uniform (no common part) falls to {u_vm1:.3f}x",
        ),
        "case1-vm2-rises": Measured.median_of([c.vm2 for c in described]),
        "case2-total-unchanged": Measured.median_of([c.total for c in case2]),
        "case2-memory-moves": Measured.median_of(
            [c.vm2_memory for c in case2],
            why="the image server's cached pages all hit, but VM1's common part hits as often per cached page, "
            "so the paper's rule finds no VM to favour",
        ),
        "case2-vm1-unchanged": Measured.median_of(
            [c.vm1 for c in case2],
            why="the paper's rule moves memory from VM1 to the image server, whose range already fits; "
            f"VM1 uniform (no common part) falls to {med(c.vm1 for c in case2_uniform):.3f}x",
        ),
        "case2-vm2-unchanged": Measured.median_of([c.vm2 for c in case2]),
    }
    rows = [
        _row("case 1, VM1 as described (common part)", described),
        _row("case 1, VM1 uniform (examples/membal/case1-web-burst.toml)", uniform),
        _row("case 2, VM1 as described (common part)", case2),
        _row("case 2, VM1 uniform (examples/membal/case2-nfs-images.toml)", case2_uniform),
    ]
    return measured, {"simulations": rows, "seeds": list(conf.seeds), "accesses": conf.accesses}


def _row(name: str, cases: list[CaseRatios]) -> TableRow:
    med = statistics.median
    return {
        "case": name,
        "total": round(med(c.total for c in cases), 4),
        "vm1": round(med(c.vm1 for c in cases), 4),
        "vm2": round(med(c.vm2 for c in cases), 4),
        "vm2_memory": round(med(c.vm2_memory for c in cases), 4),
    }
