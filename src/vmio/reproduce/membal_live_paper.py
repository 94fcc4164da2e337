"""hitachi-membal-2014 (hitachi-membal-2014) case 1, live: two real guests whose page caches the paper's rule
(``efficiency``) balances, against the equal split, on this host's QEMU.

The case needs VM2's (bursty) hot set to be larger than its page cache at the equal split and smaller than
its page cache once the rule has moved memory to it; a guest's page cache at a given balloon size depends
on its kernel and initramfs, so it is MEASURED first: with the balloons at the equal split, each guest's
page cache (Active(file) + Inactive(file) + MemFree, from the in-guest agent) is read, and the hot set is
``HOT_OVER_CACHE`` times VM2's. One fio load per guest then runs for the whole case (a job that ended
would close the guest's disk, whose page cache Linux drops at its last close, so every run would start
cold): a first run at the equal split warms both caches (stored, not counted), then rounds, each of both
policies on the same booted, loaded guests (the balloons set back to the equal split at each policy's
start), give the spread of the total hit ratio. Each policy's run is stored as a ``membal run``.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from vmio.errors import ToolError
from vmio.guest import GuestImage, build
from vmio.membal.balloon import BalloonedVM
from vmio.membal.live import LiveController
from vmio.membal.liverun import LiveSettings, vm_configs
from vmio.membal.livework import Load, LoadRun
from vmio.membal.signals import file_pages
from vmio.qemu import VM, AccelProber, Fleet, QemuCaps, probe_caps
from vmio.reproduce.figure import Figure, Mark, Series
from vmio.reproduce.result import Details, Measured, Spread, TableRow
from vmio.store import Store
from vmio.store.membal import finish_run, start_run

M = 1 << 20
HOT_OVER_CACHE = 1.3  # VM2's hot set over its measured page cache at the equal split
LOAD_RUNTIME = 3600.0  # seconds: the case's one load outlives every round (stopped when the case ends)
WARM = 2.0  # seconds between reaching the equal split and a run's first record, for both policies
HOT_SHARE = 0.91  # the share of VM2's reads on its hot set (examples/membal/live/case1.toml)


@dataclass(frozen=True)
class Scale:
    rounds: int
    calibrate: float  # seconds of the warm-up run at the equal split (stored, not counted)
    duration: float  # seconds of each policy's round
    interval: float  # seconds between the controller's steps


SCALES = {
    "quick": Scale(rounds=3, calibrate=8.0, duration=16.0, interval=1.0),
    "paper": Scale(rounds=5, calibrate=40.0, duration=50.0, interval=2.0),
}


def settings(scale: str, hot: int) -> LiveSettings:
    """Two 512M guests sharing 576M (equal share 288M), floors 160M so that the rule can move up to 128M;
    web reads 1G uniformly, burst 1G with ``HOT_SHARE`` of its reads on the first ``hot`` bytes."""
    conf = SCALES[scale]
    return LiveSettings(
        policy="equal",
        memory=512 * M,
        floors=(160 * M, 160 * M),
        budget=576 * M,
        interval=conf.interval,
        duration=conf.duration,
        max_step=32 * M,
        psi_threshold=0.9,
        loads=(Load(1024 * M, "randread", 32 << 10), Load(1024 * M, "randread", 32 << 10, hot, HOT_SHARE)),
    )


@dataclass
class Round:
    policy: str
    run_id: int
    hit_ratio: float | None
    vm_ratios: list[float | None]
    final: list[int]  # balloon targets at the end
    reads: list[int]  # pages each guest's workload read (hits + misses)


@dataclass
class LiveCase:
    accel: str
    cache_equal: list[int]  # each guest's page cache (bytes) at the equal split, measured
    hot: int
    rounds: list[Round]


def run_case1(
    scale: str,
    store: Store,
    *,
    image: GuestImage | None = None,
    caps: QemuCaps | None = None,
    workdir: Path,
    boot_timeout: float = 300.0,
) -> LiveCase:
    """Measure the page cache at the equal split, size the hot set from it, warm, run the rounds."""
    conf = SCALES[scale]
    caps = caps or probe_caps()
    image = image or build()
    accel = AccelProber(image, caps).resolve("auto").accel
    first = settings(scale, 150 * M)
    with tempfile.TemporaryDirectory(prefix="membal-live-", dir=workdir) as work_dir:
        work = Path(work_dir)
        configs = vm_configs(first, accel, work)
        with Fleet(configs, image, caps=caps, workdir=work / "vms", boot_timeout=boot_timeout) as fleet:
            guests = [BalloonedVM(vm) for vm in fleet.vms]
            load: LoadRun | None = None
            try:
                settle(guests, first.rules().initial())
                cache = [page_cache(g) for g in guests]
                hot = int(HOT_OVER_CACHE * cache[1]) // M * M
                s = settings(scale, hot)
                # one load for the whole case: a job that ends closes the guest's disk, which drops its page
                # cache (the next run would start cold) and hands the job's read counts to its parent
                clients = [
                    (vm.fio_client, s.loads[i], vm.guest_devices()[0]) for i, vm in enumerate(fleet.vms)
                ]
                load = LoadRun(clients, LOAD_RUNTIME, work)
                _round(replace(s, duration=conf.calibrate), "equal", fleet.vms, guests, store, accel, caps)
                order = [p for _ in range(conf.rounds) for p in ("equal", "efficiency")]
                rounds = [
                    _round(replace(s, policy=p), p, fleet.vms, guests, store, accel, caps) for p in order
                ]
            finally:
                if load is not None:
                    load.stop()
                for g in guests:
                    g.close()
    return LiveCase(accel, cache, hot, rounds)


def _round(
    s: LiveSettings,
    policy: str,
    vms: list[VM],
    guests: list[BalloonedVM],
    store: Store,
    accel: str,
    caps: QemuCaps,
) -> Round:
    """One policy's run on the loaded guests, from the equal split (reached, then ``WARM`` seconds for the
    caches to follow the balloons) to the end of its window; stored as a ``membal run``."""
    vm_argv = [vm.argv for vm in vms]
    run_id = start_run(
        store, policy, s.to_json(), accel=accel, qemu_version=caps.version_string, qemu_argv=vm_argv
    )
    control = LiveController(
        guests, s.rules(), policy, s.params, psi_threshold=s.psi_threshold, store=store, run_id=run_id
    )
    try:
        settle(guests, s.rules().initial())  # every policy starts from the equal split, reached
        time.sleep(WARM)
        control.start()
        control.run(s.duration, s.interval)
    except BaseException as exc:
        finish_run(store, run_id, "failed", control.summary(), error=f"{type(exc).__name__}: {exc}")
        raise
    summary = control.summary()
    finish_run(store, run_id, "done", summary)
    ratios = [summary[g.name]["hit_ratio"] for g in guests]
    reads = [summary[g.name]["hits"] + summary[g.name]["misses"] for g in guests]
    return Round(policy, run_id, control.hit_ratio(), ratios, list(control.targets), reads)


def settle(guests: list[BalloonedVM], targets: list[int], timeout: float = 60.0) -> None:
    """Set the balloons to ``targets`` and wait until QEMU reports them reached (or ``timeout``)."""
    for g, t in zip(guests, targets, strict=True):
        g.set_target(t)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(g.actual() != t for g, t in zip(guests, targets, strict=True)):
        time.sleep(0.2)


def page_cache(guest: BalloonedVM, count: int = 3, timeout: float = 60.0) -> int:
    """The page cache a guest can hold at its balloon size: its file pages (Active(file) + Inactive(file))
    plus the memory still free (MemFree), which a reading load fills next; the median over ``count`` fresh
    records of its agent (the first may predate the balloon's move)."""
    guest.records()
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while len(seen) < count:
        if time.monotonic() > deadline:
            raise ToolError(f"{guest.name}: no agent record within {timeout:g} s")
        m = [r.meminfo for r in guest.records()]
        seen += [file_pages(r) + r.get("MemFree", 0) for r in m]
        time.sleep(0.2)
    return int(statistics.median(seen))


def measure(case: LiveCase) -> tuple[dict[str, Measured], Details]:
    """The live claims: total gain with its spread over rounds (each round's efficiency over the equal run
    just before it), VM2's rise, memory moved; the page's table."""
    eq = [r for r in case.rounds if r.policy == "equal"]
    ef = [r for r in case.rounds if r.policy == "efficiency"]
    gains = [b.hit_ratio / a.hit_ratio for a, b in zip(eq, ef, strict=True) if a.hit_ratio and b.hit_ratio]
    out: dict[str, Measured] = {}
    sizing = (
        f"sized from the guests' page cache measured at the equal split ({case.cache_equal[1] / M:.0f} MiB in "
        f"VM2): hot set {case.hot / M:.0f} MiB = {HOT_OVER_CACHE}x it"
    )
    if gains:
        eq_t = [r.hit_ratio for r in eq if r.hit_ratio is not None]
        ef_t = [r.hit_ratio for r in ef if r.hit_ratio is not None]
        out["live-case1-total-gain"] = Measured(
            statistics.median(gains),
            Spread.of(gains),
            values=tuple(gains),
            why=f"total hit ratio equal {_span(eq_t)}, efficiency {_span(ef_t)} over {len(gains)} rounds; "
            + _weighting(eq, ef),
            note=sizing,
        )
        vm2 = [
            b.vm_ratios[1] / a.vm_ratios[1]
            for a, b in zip(eq, ef, strict=True)
            if a.vm_ratios[1] and b.vm_ratios[1]
        ]
        if vm2:
            out["live-case1-vm2-rises"] = Measured.median_of(vm2)
        vm1 = [
            b.vm_ratios[0] / a.vm_ratios[0]
            for a, b in zip(eq, ef, strict=True)
            if a.vm_ratios[0] and b.vm_ratios[0]
        ]
        if vm1:
            out["live-case1-vm1-holds"] = Measured.median_of(
                vm1,
                why="VM1 reads uniformly over 1G: its hit ratio is its page cache over 1G, and the rule takes "
                "VM1's memory (the same finding as the simulated case with VM1 uniform)",
            )
        alike = _alike(eq, ef)
        if alike and vm1 and vm2:
            out["live-case1-gain-vms-alike"] = Measured.median_of(
                alike,
                why=f"VM1 fell to {statistics.median(vm1):.2f}x and VM2 rose {statistics.median(vm2):.2f}x (medians "
                "over the rounds): VM1 reads uniformly over 1G, so the memory the rule takes lowers its ratio in "
                "proportion, and weighed alike that loss offsets much of VM2's gain; " + _weighting(eq, ef),
                note="the mean of the two VMs' hit ratios under efficiency over that under equal, each round",
            )
        moved = [r.final[1] / (288 * M) for r in ef]
        out["live-case1-memory-moves"] = Measured.median_of(moved)
    rows: list[TableRow] = [
        {
            "policy": r.policy,
            "membal run": r.run_id,
            "total hit ratio": r.hit_ratio,
            "VM1 (web)": r.vm_ratios[0],
            "VM2 (burst)": r.vm_ratios[1],
            "VM2 memory (MiB)": r.final[1] // M,
        }
        for r in case.rounds
    ]
    return out, {"live case 1": rows}


def _weighting(eq: list[Round], ef: list[Round]) -> str:
    """The total pools every read: measured, how much of it was VM2's under each policy, and the gain with
    both VMs weighed alike (the paper's simulation gives its VMs fixed access rates)."""
    share_eq = statistics.median(r.reads[1] / sum(r.reads) for r in eq if sum(r.reads))
    share_ef = statistics.median(r.reads[1] / sum(r.reads) for r in ef if sum(r.reads))
    alike = _alike(eq, ef)
    alike_text = f"{statistics.median(alike):.2f}x ({min(alike):.2f}..{max(alike):.2f})" if alike else "-"
    return (
        f"live a guest reads faster the more it hits, so the pooled total weighs VM2 (mostly hits) more once it "
        f"has the memory: VM2 read {share_eq:.0%} of all pages under equal and {share_ef:.0%} under efficiency "
        f"(the guests' own counts); weighing both VMs alike, as the paper's simulation does with fixed access "
        f"rates, the gain is {alike_text}"
    )


def _alike(eq: list[Round], ef: list[Round]) -> list[float]:
    """Per round: the mean of the VMs' hit ratios under efficiency over that under equal."""
    out = []
    for a, b in zip(eq, ef, strict=True):
        before = math.fsum(x for x in a.vm_ratios if x is not None)
        after = math.fsum(x for x in b.vm_ratios if x is not None)
        if None not in a.vm_ratios and None not in b.vm_ratios and before > 0:
            out.append(after / before)
    return out


def _span(values: list[float]) -> str:
    return f"{min(values):.3f}..{max(values):.3f}" if values else "-"


def figure(case: LiveCase) -> Figure:
    """Case 1 live, per round: the efficiency run's pooled hit ratio over the equal run's before it (the
    claim's values), and both VMs weighed alike."""
    eq = [r for r in case.rounds if r.policy == "equal"]
    ef = [r for r in case.rounds if r.policy == "efficiency"]
    pooled = [
        (i + 1.0, b.hit_ratio / a.hit_ratio)
        for i, (a, b) in enumerate(zip(eq, ef, strict=True))
        if a.hit_ratio and b.hit_ratio
    ]
    alike = [(i + 1.0, g) for i, g in enumerate(_alike(eq, ef))]
    return Figure(
        id="fig2-live-rounds",
        title="Fig. 2, live (case 1): the scheduler's hit ratio over the equal split's, per round",
        source="図 2 アルゴリズム適用結果 (ケース 1); §4: 全体のヒット率が最大で約 1.5 倍向上",
        x="round",
        y="hit ratio, efficiency / equal (x)",
        series=(
            Series("pooled (all reads)", tuple(pooled), claim="live-case1-total-gain"),
            Series("VMs weighed alike", tuple(alike), claim="live-case1-gain-vms-alike"),
        ),
        marks=(Mark("y", 1.5, "paper: up to about 1.5x (simulated)"),),
        ticks=tuple((float(i + 1), str(i + 1)) for i in range(len(eq))),
    )
