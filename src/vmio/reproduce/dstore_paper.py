"""bitisle-dstore-2014 (seed 002): the paper's profile (30 % read / 70 % write random I/O, 50 outstanding,
4K-1M) on a 3-way replicated Ceph RBD image, repeated, beside the same profile on a striped image (Fig. 3),
each judged against the paper's service criteria.

The measuring is a campaign (``campaign.runner``), stored as ``bitisle-dstore-2014-SCALE-STAMP`` like the
other reproductions: the plain and the striped image are its two rbd targets, each sample one repetition, so
the images take turns, sample by sample, and a drift of the shared host hits both alike. Around each point
(the runner's ``around_point``) the disk under a cluster vmio started (its file OSDs all lie on it) is read
from /proc/diskstats, with the host's and the OSDs' CPU: the disk's busy %, queue and writes per client write
are what explains how striping compares here. Each point's figures and verdict are read back from the store.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from vmio.campaign.runner import Options
from vmio.campaign.runner import run as run_campaign
from vmio.dstore import cluster, daemons, variants
from vmio.dstore.cluster import ClusterRef
from vmio.dstore.figures import figures, of_results
from vmio.dstore.profile import Criteria, Point, network_text
from vmio.dstore.stored import rbd_target, stored_point, workload
from vmio.errors import ClusterError, FioError
from vmio.metrics.procfs import CpuCounters, DiskCounters, cpu_shares, read_cpu, read_diskstats
from vmio.reproduce.result import Details, Measured, Spread, TableRow
from vmio.spec.dump import dumps
from vmio.spec.model import Campaign
from vmio.spec.model import Point as SpecPoint
from vmio.store import RunRecord, Store
from vmio.system import netns, rbdimage
from vmio.system.blockdev import device_chain
from vmio.system.process import Runner

KIB = 1 << 10


@dataclass(frozen=True)
class Scale:
    runtime: float  # seconds of each fio run
    ramp: float
    samples: int  # rounds of both images' profiles
    image_mib: int
    bs: tuple[int, ...]  # the plain image's block sizes
    striped_bs: tuple[int, ...]
    slow_link_bs: tuple[int, ...] = ()  # on a shaped cluster, these again with every link at SLOW_RATE


SCALES = {
    "quick": Scale(
        runtime=1.5,
        ramp=0.5,
        samples=3,
        image_mib=256,
        bs=(4 * KIB, 32 * KIB, 64 * KIB, 256 * KIB, 512 * KIB, 1024 * KIB),
        striped_bs=(32 * KIB, 256 * KIB),
    ),
    "paper": Scale(
        runtime=30.0,
        ramp=5.0,
        samples=5,
        image_mib=4096,
        bs=(4 * KIB, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB, 512 * KIB, 1024 * KIB),
        striped_bs=(4 * KIB, 32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB, 512 * KIB, 1024 * KIB),
        slow_link_bs=(256 * KIB, 512 * KIB, 1024 * KIB),
    ),
}
SLOW_RATE = 1_000_000_000  # the second run's links: 1 Gbit/s, where a mirrored large write is link-bound
IODEPTH, WRITE_SHARE = 50, 0.7  # bitisle-dstore-2014's profile
SMALL = (4 * KIB, 64 * KIB)  # "4K-64K": the block sizes the paper calls practical
STRIPED_RANGE = (32 * KIB, 256 * KIB)  # Fig. 3: "slightly better between 32K and 256K"


@dataclass(frozen=True)
class Setting:
    scale: str
    work: Path  # a folder on a disk filesystem for a throwaway cluster
    conf: Path | None = None  # an existing cluster's ceph.conf (else vmio starts one in ``work``)
    pool: str = "vmio"
    stamp: str = "run"
    name: str = "bitisle-dstore-2014"  # the campaign its points are stored as
    # a throwaway cluster's network: the paper's 10 GbE between the hosts holding the replicas (None: loopback)
    shaping: cluster.Shaping | None = field(default_factory=cluster.Shaping)


@dataclass
class Sample:
    """One fio run and what the disk under the OSDs did meanwhile."""

    point: Point
    disk: dict[str, float] | None = None  # busy %, queue, write IOPS of the disk under the file OSDs


@dataclass
class Runs:
    plain: dict[int, list[Sample]] = field(default_factory=dict)
    striped: dict[int, list[Sample]] = field(default_factory=dict)
    disk: str | None = None
    network: dict[str, object] | None = None  # the links the replicas crossed (ClusterRef.network_json)


def run(
    s: Setting, store: Store, runner: Runner | None = None
) -> tuple[dict[str, Measured], Details, TableRow]:
    """Bring up (or use) a cluster, profile the plain and the striped image, judge; the claims'
    measurements, the page's tables and how it was set up."""
    runner = runner or Runner()
    conf = SCALES[s.scale]
    with ExitStack() as stack:
        if s.conf is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dstore-", dir=s.work))) / "c"
            shaping = s.shaping if s.shaping is not None and netns.available() else None
            base = cluster.up(root, osds=3, runner=runner, shaping=shaping, owned=True)
            stack.callback(cluster.down, root)
        else:
            base = cluster.existing(s.conf, s.pool, "unused")
        runner = cluster.client_runner(base, runner)  # a shaped cluster: reached from its client's namespace
        plain = _image(runner, base, f"vmio-reproduce-{s.stamp}", conf.image_mib, stack)
        striped = variants.make_variant(runner, plain, "striping", conf.image_mib)
        stack.callback(variants.remove_variant, runner, plain, striped)
        disk = disk_of(runner, base)
        runs = profile(runner, plain, striped, conf, disk, store, s.name)
        runs.network = base.network_json()
        slow: list[TableRow] = []
        if conf.slow_link_bs and base.network is not None and base.network.rate != SLOW_RATE:
            slow = slow_link(runner, base, plain, conf, disk, store, f"{s.name}-1gbit", runs)
    setup: TableRow = {
        "pool": plain.pool,
        "replicas": plain.replicas,
        "osds": plain.osds,
        "iodepth": 50,
        "rwmixread": 30,
        "runtime_s": conf.runtime,
        "samples": conf.samples,
        "striping": f"stripe unit {variants.STRIPE_UNIT // KIB}K x count {variants.STRIPE_COUNT}",
        "cluster": "throwaway (vmio dstore up, 3 file OSDs)" if s.conf is None else str(s.conf),
        "disk under the OSDs": runs.disk,
        "network": network_text(base.network_json()),
    }
    network: TableRow = {k: v for k, v in base.network_json().items() if isinstance(v, str | int | float)}
    network |= {k: None for k in ("rate", "delay_ms") if k not in network}  # kind, rate (bit/s), delay_ms
    details: Details = {"profile": table(runs), "network": [network]}
    if slow:
        details["network-1gbit"] = slow
    return measure(runs), details, setup


def link_bound(bs: int, rate: int, replicas: int = 3, osds: int = 3) -> tuple[float, float]:
    """(IOPS, mean latency ms) of the profile when the links alone bound it, stated before a run: per client
    I/O the client sends w*bs (the writes to their primaries) and receives r*bs; each OSD receives w*bs*
    replicas/osds (every write lands on ``replicas`` of the OSDs) and sends (w*(replicas-1) + r)*bs/osds (a
    primary's copies to the other replicas, and the reads), primaries spread evenly. The busiest link sets
    the IOPS; with 50 outstanding I/Os the mean latency is 50 / IOPS (Little's law)."""
    w, r = WRITE_SHARE, 1 - WRITE_SHARE
    per_io = max(w, r, w * replicas / osds, (w * (replicas - 1) + r) / osds) * bs  # bytes on the busiest link
    iops = rate / 8 / per_io
    return iops, IODEPTH / iops * 1000


def slow_link(
    runner: Runner,
    base: ClusterRef,
    plain: ClusterRef,
    conf: Scale,
    disk: str | None,
    store: Store,
    name: str,
    fast: Runs,
) -> list[TableRow]:
    """The plain image again at ``slow_link_bs`` with every link at 1 Gbit/s (put back after), each size
    beside the latency a link-bound mirrored write would show there (stated before the run) and beside the
    same size at the cluster's own rate: does the latency follow the link, as the paper's explanation says?"""
    assert base.network is not None
    predicted = {bs: link_bound(bs, SLOW_RATE, plain.replicas, plain.osds) for bs in conf.slow_link_bs}
    netns.set_rate(base.network, SLOW_RATE)
    try:
        scale = replace(conf, bs=conf.slow_link_bs, striped_bs=())
        runs = profile(runner, plain, None, scale, disk, store, name)
    finally:
        netns.set_rate(base.network, base.network.rate)
    rows: list[TableRow] = []
    for bs, (iops, ms) in predicted.items():
        got = runs.plain.get(bs, [])
        at_rate = fast.plain.get(bs, [])
        rows.append(
            {
                "bs": f"{bs // KIB}K",
                "link-bound IOPS at 1 Gbit/s (stated before)": round(iops, 1),
                "link-bound mean ms at 1 Gbit/s (stated before)": round(ms, 1),
                "measured mean ms at 1 Gbit/s": round(statistics.median(x.point.mean_lat_ms for x in got), 1)
                if got
                else None,
                "measured IOPS at 1 Gbit/s": round(statistics.median(x.point.iops for x in got), 1)
                if got
                else None,
                "measured mean ms at the cluster's rate": round(
                    statistics.median(x.point.mean_lat_ms for x in at_rate), 1
                )
                if at_rate
                else None,
                "link-bound mean ms at the cluster's rate": round(
                    link_bound(bs, base.network.rate, plain.replicas, plain.osds)[1], 1
                ),
            }
        )
    return rows


def _image(runner: Runner, base: ClusterRef, name: str, mib: int, stack: ExitStack) -> ClusterRef:
    """A new image of vmio's own (never one that may hold data), removed when ``stack`` closes."""
    ref = replace(base, image=name)
    runner.run(
        ["rbd", "-c", str(ref.conf), "create", "--size", str(mib), f"{ref.pool}/{name}"],
        timeout=120.0,
        error=ClusterError,
    )
    stack.callback(
        runner.run,
        ["rbd", "-c", str(ref.conf), "rm", "--no-progress", f"{ref.pool}/{name}"],
        timeout=120.0,
        error=ClusterError,
    )
    rbdimage.mark(runner, str(ref.conf), ref.pool, name)  # vmio's own: a second run may write it again
    return ref


def profile(
    runner: Runner,
    plain: ClusterRef,
    striped: ClusterRef | None,
    conf: Scale,
    disk: str | None,
    store: Store,
    name: str,
) -> Runs:
    """``samples`` rounds (the campaign's repetitions), each the plain image's profile then the striped
    image's, at every block size of either (the runner crosses targets and block sizes); without ``striped``
    the plain image's alone."""
    load = workload(sorted(set(conf.bs) | set(conf.striped_bs)), 30, IODEPTH, conf.runtime, conf.ramp)
    targets = (rbd_target("plain", plain),) + (() if striped is None else (rbd_target("striped", striped),))
    campaign = Campaign(name, conf.samples, targets, (load,), "<vmio reproduce bitisle-dstore-2014>")
    seen: dict[str, dict[str, float]] = {}  # point key -> what the host did meanwhile
    refs = {"plain": plain, "striped": striped or plain}
    options = Options(runner=runner, around_point=lambda p: _watched(refs[p.target], disk, seen, p))
    outcome = run_campaign(campaign, dumps(campaign), store, options)
    if outcome.failed:
        raise FioError(f"{outcome.failed} points of the profile failed ({outcome.failures[0]})")
    runs = Runs(disk=disk)
    for row in store.runs(name):
        into = runs.plain if row["target"] == "plain" else runs.striped
        if row["status"] == "done":
            point = stored_point(store, row, Criteria())
            into.setdefault(row["bs"], []).append(Sample(point, seen.get(row["point_key"])))
    return runs


def disk_of(runner: Runner, ref: ClusterRef) -> str | None:
    """The one disk of this host that stores every OSD's data (``ceph osd metadata``'s ``osd_data``
    folders, found here), or None: OSDs elsewhere or on several disks."""
    try:
        meta = json.loads(cluster.ceph(runner, ref.conf, "osd", "metadata", "--format", "json"))
    except (ClusterError, ValueError):
        return None
    disks = set()
    for osd in meta if isinstance(meta, list) else []:
        folder = Path(str(osd.get("osd_data", "")))
        chain = device_chain(folder) if folder.is_absolute() and folder.is_dir() else []
        disks.add(chain[-1] if chain else None)
    return disks.pop() if len(disks) == 1 else None


def osd_pids(conf: Path, proc_root: Path = Path("/proc")) -> list[int]:
    """The ceph-osd processes on this host started with ``conf`` (read from /proc, nothing signalled)."""
    found = daemons.cluster_pids(conf, proc_root)
    return sorted(pid for pid, argv in found.items() if os.path.basename(argv.split(" ")[0]) == "ceph-osd")


def _cpu_seconds(pids: Sequence[int]) -> float:
    """utime + stime of ``pids`` (seconds; a process gone counts 0)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _watched(
    ref: ClusterRef, disk: str | None, seen: dict[str, dict[str, float]], point: SpecPoint
) -> Iterator[Callable[[RunRecord], None]]:
    """Around one point: the disk under the OSDs, the host's CPU and the OSDs' own CPU, kept in ``seen``
    under the point's key once its record says how many I/Os it did."""
    pids = osd_pids(ref.conf)
    disk_a = read_diskstats().get(disk) if disk else None
    cpu_a, osd_a, t0 = read_cpu(), _cpu_seconds(pids), time.monotonic()
    after: list[tuple[DiskCounters | None, CpuCounters, float, float]] = []

    def keep(rec: RunRecord) -> None:
        if rec.status != "done" or not after:
            return
        disk_b, cpu_b, osd_b, seconds = after[0]
        window = rec.measured_window
        measured_s = (window[1] - window[0]) if window else seconds
        ios = figures(of_results(rec.results), rec.point_key).iops * measured_s
        shares = cpu_shares(cpu_a, cpu_b)
        row = {
            "host_cpu_pct": 100.0 - shares["idle_pct"] - shares["iowait_pct"],
            "osd_cpu_ms_per_io": 1e3 * (osd_b - osd_a) / max(1.0, ios),
        }
        if pids:
            row["osd_cpu_pct"] = 100.0 * (osd_b - osd_a) / seconds / (os.cpu_count() or 1)
        if disk_a is not None and disk_b is not None:
            row |= {
                "busy_pct": min(100.0, (disk_b.io_ms - disk_a.io_ms) / (seconds * 10.0)),
                "queue": (disk_b.weighted_ms - disk_a.weighted_ms) / (seconds * 1000.0),
                "write_iops": (disk_b.writes - disk_a.writes) / seconds,
            }
        seen[rec.point_key] = row

    try:
        yield keep
    finally:
        disk_b = read_diskstats().get(disk) if disk else None
        after.append((disk_b, read_cpu(), _cpu_seconds(pids), time.monotonic() - t0))


def _median(samples: Sequence[Sample], get: Callable[[Point], float]) -> Measured:
    return Measured.median_of([get(x.point) for x in samples])


def measure(runs: Runs) -> dict[str, Measured]:
    out: dict[str, Measured] = {}
    plain = runs.plain
    every = [x.point for samples in plain.values() for x in samples]
    if every:
        reads = [p.read_iops / p.iops for p in every if p.iops]
        out["fig1-read-share"] = Measured.median_of(reads)
        outstanding = [p.iops * p.mean_lat_ms / 1000.0 for p in every]
        out["fig1-outstanding"] = Measured.median_of(
            outstanding, why="IOPS x mean latency (Little's law) from fio's own figures"
        )
    small = [bs for bs in plain if SMALL[0] <= bs <= SMALL[1]]
    if small:
        medians = {bs: _median(plain[bs], lambda p: p.iops) for bs in small}
        low = min(small, key=lambda bs: medians[bs].value or 0.0)
        m = medians[low]
        out["fig2-iops-4k-64k"] = Measured(m.value, m.spread, why=_small_why(runs, low), values=m.values)
        lat = {bs: _median(plain[bs], lambda p: p.mean_lat_ms) for bs in small}
        worst = max(small, key=lambda bs: lat[bs].value or 0.0)
        w = lat[worst]
        out["criteria-acceptable-4k-64k"] = Measured(
            w.value, w.spread, why=_small_why(runs, worst), values=w.values
        )
        out["criteria-host-iops-4k-64k"] = Measured(
            m.value, m.spread, why=_small_why(runs, low), values=m.values
        )
        if 4 * KIB in plain:
            out["criteria-ideal-4k"] = _ideal(plain[4 * KIB])
    for bs, claim in (
        (256 * KIB, "fig2-latency-256k"),
        (512 * KIB, "fig2-latency-512k"),
        (1024 * KIB, "fig2-latency-1m"),
    ):
        if bs in plain:
            m = _median(plain[bs], lambda p: p.mean_lat_ms)
            out[claim] = Measured(
                m.value, m.spread, why=_large_why(plain[bs], bs, runs.network), values=m.values
            )
    striping = _striping(runs)
    if striping is not None:
        out["fig3-striping-32k-256k"] = striping
    return out


def _large_why(samples: Sequence[Sample], bs: int, network: dict[str, object] | None = None) -> str:
    mb_s = statistics.median(x.point.mb_s for x in samples)
    seen = _disk_text(samples)
    return (
        f"{bs // KIB}K moved {mb_s:.0f} MB/s{' (' + seen + ')' if seen else ''}; the paper puts its large-block "
        "latency down to waiting for every copy over 10 Gb Ethernet between hosts (and, its own caveat, perhaps "
        f"a buffer overflowing); {_copies_text(network)}"
    )


def _copies_text(network: dict[str, object] | None) -> str:
    """How the copies of a write travelled here."""
    if network is None or network.get("kind") == "loopback":
        return "here the three copies travel over loopback inside one host"
    if network.get("kind") != "netns":
        return "here the copies travel over the existing cluster's own network"
    return (
        "here each copy crosses a link between network namespaces of one host, shaped by tc (the client's "
        f"link, then the primary OSD's to each replica; {network_text(network)})"
    )


def _ideal(samples: Sequence[Sample]) -> Measured:
    """The 4K mean against the ideal 20 ms: the median of the samples, each sample's mean named."""
    lats = [x.point.mean_lat_ms for x in samples]
    ideal = sum(x <= Criteria().ideal_ms for x in lats)
    straddle = f"the samples straddle 20 ms ({ideal} of {len(lats)} within): one sample's verdict would flip"
    return Measured.median_of(
        lats,
        why=f"{ideal} of {len(lats)} samples within 20 ms (each sample's mean: "
        f"{', '.join(f'{x:.1f}' for x in lats)} ms); the verdict is the median's",
        note=straddle if 0 < ideal < len(lats) else None,
    )


def _small_why(runs: Runs, bs: int) -> str:
    disk = _disk_text(runs.plain.get(bs, []))
    return (
        f"the worst of 4K-64K is {bs // KIB}K; the three OSDs are files on one disk of this host (the paper: "
        f"an ioScale card in each of 8 hosts){'; ' + disk if disk else ''}"
    )


def _disk_text(samples: Sequence[Sample]) -> str:
    """What the host did over ``samples`` (medians): its CPU, the OSDs' CPU per I/O, the disk under them."""
    if not any(x.disk for x in samples):
        return ""
    parts = [f"host CPU {_seen(samples, 'host_cpu_pct') or 0.0:.0f} % busy"]
    if _seen(samples, "osd_cpu_pct") is not None:
        parts.append(f"OSDs {_seen(samples, 'osd_cpu_ms_per_io') or 0.0:.2f} CPU ms per client I/O")
    busy, writes = _seen(samples, "busy_pct"), _seen(samples, "write_iops")
    if busy is not None and writes is not None:
        client = statistics.median(x.point.write_iops for x in samples if x.disk)
        per = f", {writes / client:.1f} disk writes per client write" if client else ""
        parts.append(
            f"the disk under the OSDs {busy:.0f} % busy, queue {_seen(samples, 'queue') or 0.0:.1f}{per}"
        )
    return ", ".join(parts)


def _striping(runs: Runs) -> Measured | None:
    """Fig. 3: striped over plain IOPS at 32K-256K (median per block size, then their median), and what
    the disk under the OSDs did in both."""
    both = [bs for bs in runs.striped if bs in runs.plain and STRIPED_RANGE[0] <= bs <= STRIPED_RANGE[1]]
    if not both:
        return None
    per_bs = {
        bs: statistics.median(x.point.iops for x in runs.striped[bs])
        / statistics.median(x.point.iops for x in runs.plain[bs])
        for bs in both
    }
    pairs = [
        s.point.iops / p.point.iops
        for bs in both
        for s, p in zip(runs.striped[bs], runs.plain[bs], strict=False)
        if p.point.iops
    ]
    parts = []
    for bs in sorted(runs.striped):
        if bs not in runs.plain:
            continue
        plain, striped = _disk_text(runs.plain[bs]), _disk_text(runs.striped[bs])
        ratio = statistics.median(x.point.iops for x in runs.striped[bs]) / statistics.median(
            x.point.iops for x in runs.plain[bs]
        )
        parts.append(
            f"{bs // KIB}K striped/plain {ratio:.2f}"
            + (f" (plain: {plain}; striped: {striped})" if plain else "")
        )
    why = (
        "measured in alternating samples of both images: "
        + "; ".join(parts)
        + ". "
        + _striping_finding(runs, both)
    )
    return Measured(statistics.median(per_bs.values()), Spread.of(pairs) if pairs else None, why=why)


def _seen(samples: Sequence[Sample], key: str) -> float | None:
    values = [x.disk[key] for x in samples if x.disk and key in x.disk]
    return statistics.median(values) if values else None


def _striping_finding(runs: Runs, sizes: Sequence[int]) -> str:
    """What the measurements say of the direction: the disk busy or not, the OSDs' CPU per I/O."""
    said = []
    busy = [
        b
        for bs in sizes
        for side in (runs.plain, runs.striped)
        if (b := _seen(side[bs], "busy_pct")) is not None
    ]
    if busy:
        verdict = "below" if max(busy) < 90 else "at"
        said.append(
            f"the disk under the OSDs was {min(busy):.0f}-{max(busy):.0f} % busy ({verdict} saturation)"
        )
    cost = [
        (bs, s / p)
        for bs in sizes
        if (s := _seen(runs.striped[bs], "osd_cpu_ms_per_io"))
        and (p := _seen(runs.plain[bs], "osd_cpu_ms_per_io"))
    ]
    host = [
        h for bs in sizes for side in (runs.plain, runs.striped) if (h := _seen(side[bs], "host_cpu_pct"))
    ]
    if cost:
        said.append(
            "striping cost the OSDs "
            + ", ".join(f"{c:.2f}x the CPU per client I/O at {bs // KIB}K" for bs, c in cost)
            + f" (a request over {variants.STRIPE_UNIT // KIB}K stripe units becomes up to {variants.STRIPE_COUNT} "
            "object operations, each on all 3 replicas)"
        )
    if host:
        said.append(
            f"the host's CPU was {min(host):.0f}-{max(host):.0f} % busy (the OSDs, fio and the other "
            "work of this host share its cores; the paper's 8 hosts had an ioScale and cores each)"
        )
    if not said:
        return "the host's disk and CPU could not be read for this cluster (OSDs not on this host)"
    return "Measured alongside: " + "; ".join(said) + "."


def table(runs: Runs) -> list[TableRow]:
    """The page's table: per image and block size, the median over samples, their spread, the disk."""
    rows: list[TableRow] = []
    for name, by_bs in (("plain (3-way mirror)", runs.plain), ("striped", runs.striped)):
        for bs in sorted(by_bs):
            samples = by_bs[bs]
            iops = [x.point.iops for x in samples]
            lat = [x.point.mean_lat_ms for x in samples]
            verdicts = [x.point.verdict for x in samples]
            rows.append(
                {
                    "image": name,
                    "bs": f"{bs // KIB}K",
                    "IOPS (median)": round(statistics.median(iops)),
                    "IOPS min..max": f"{min(iops):.0f}..{max(iops):.0f}",
                    "mean ms (median)": round(statistics.median(lat), 2),
                    "mean ms min..max": f"{min(lat):.1f}..{max(lat):.1f}",
                    "verdicts": ", ".join(f"{v} x{verdicts.count(v)}" for v in sorted(set(verdicts))),
                    "disk under the OSDs": _disk_text(samples) or None,
                }
            )
    return rows
