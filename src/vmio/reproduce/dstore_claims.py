"""bitisle-dstore-2014's claims judged from the samples its reproduction stored, and the page's Fig. 2 and
Fig. 3 drawn from the same samples.

Every result claim's reason names what bounded the cluster at the block size that decided it, as measured
over that size's samples (``cause``): the IOPS and, by Little's law, the wait of each of the 50 I/Os in
flight; the host's CPU and the OSDs' share of it; the disk under the file OSDs; on a shaped network the
busiest link against its rate (the kernel's own byte counters on the bridge's ports).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vmio.dstore import variants
from vmio.dstore.profile import Criteria, Point, network_text
from vmio.reproduce.figure import Figure, Mark, Series
from vmio.reproduce.result import Measured, TableRow

KIB = 1 << 10
IODEPTH, WRITE_SHARE = 50, 0.7  # bitisle-dstore-2014's profile
SMALL = (4 * KIB, 64 * KIB)  # "4K-64K": the block sizes the paper calls practical
LARGE = 256 * KIB  # "256K 以上" (IOPS) and "256K を超えると" (latency: beyond it)
STRIPED_RANGE = (32 * KIB, 256 * KIB)  # Fig. 3: "slightly better between 32K and 256K"
SATURATED = 0.8  # a resource this busy (share of its capacity) is named as the limit
SLOW_RATE = 1_000_000_000  # the second run's links: 1 Gbit/s, where a mirrored large write is link-bound
THRESHOLDS = ((512 * KIB, 200.0), (1 << 20, 500.0))  # Fig. 2's text: above 200 ms at 512K, 500 ms at 1M


ABSENT = {  # what the paper measured these on, and vmio has not
    "fig2-vs-general-cloud": Measured(
        None,
        why="the paper measured a general cloud service's shared storage (iSCSI or NAS, middle to high end) "
        "beside its own; vmio has no such service to measure, only the distributed store",
    ),
    "summary-hdd-tier": Measured(
        None,
        why="the paper's store puts an SSD (ioScale) cache in front of each host's HDDs; vmio's OSDs are "
        "bluestore on files of one disk, with no cache tier and no HDD behind it to reach",
    ),
}


@dataclass
class Sample:
    """One fio run and what the host did meanwhile."""

    point: Point
    disk: dict[str, float] | None = None  # CPU, the disk under the file OSDs, the links (see _watched)


@dataclass
class Runs:
    plain: dict[int, list[Sample]] = field(default_factory=dict)
    striped: dict[int, list[Sample]] = field(default_factory=dict)
    disk: str | None = None
    network: dict[str, object] | None = None  # the links the replicas crossed (ClusterRef.network_json)
    slow: dict[int, list[Sample]] = field(default_factory=dict)  # the plain image again, links at SLOW_RATE


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


def size(bs: int) -> str:
    return f"{bs >> 20}M" if bs >= 1 << 20 else f"{bs >> 10}K"


def measure(runs: Runs, replicas: int = 3, osds: int = 3) -> dict[str, Measured]:
    """Each claim of bitisle-dstore-2014 from the samples (a claim whose sizes were not run is left out)."""
    out: dict[str, Measured] = {}
    plain = runs.plain
    every = [x.point for samples in plain.values() for x in samples]
    if every:
        out["fig1-read-share"] = Measured.median_of(
            [p.read_iops / p.iops for p in every if p.iops],
            why="vmio asks fio for this mix (rwmixread = 30): fio's completed share echoes the input; Fig. 1's "
            "own cloud reads 500 of 3,300 IOPS (0.15)",
        )
        out["fig1-outstanding"] = Measured.median_of(
            [p.iops * p.mean_lat_ms / 1000.0 for p in every],
            why="IOPS x mean latency (Little's law) from fio's own figures",
        )
    out |= _per_size(runs, "fig2-iops-4k-64k", _within(plain, *SMALL), "iops", min)
    out |= _per_size(runs, "criteria-host-iops-4k-64k", _within(plain, *SMALL), "iops", min)
    out |= _per_size(runs, "criteria-acceptable-4k-64k", _within(plain, *SMALL), "ms", max)
    out |= _per_size(runs, "fig2-iops-256k-1m", _within(plain, LARGE, 1 << 20), "iops", max)
    out |= _per_size(runs, "fig2-latency-beyond-256k", _within(plain, LARGE + 1, 1 << 20), "ms", min)
    out |= _per_size(runs, "fig2-latency-512k", _within(plain, 512 * KIB, 512 * KIB), "ms", min)
    out |= _per_size(runs, "fig2-latency-1m", _within(plain, 1 << 20, 1 << 20), "ms", min)
    if 4 * KIB in plain:
        out["criteria-ideal-4k"] = _ideal(runs)
    out["fig2-mirror-link-1gbit-1m"] = _slow_link(runs, replicas, osds)
    out |= ABSENT
    inside = [bs for bs in runs.striped if bs in plain and STRIPED_RANGE[0] <= bs <= STRIPED_RANGE[1]]
    outside = [bs for bs in runs.striped if bs in plain and bs not in inside]
    for claim, sizes in (("fig3-striping-32k-256k", inside), ("fig3-striping-elsewhere", outside)):
        if sizes:
            out[claim] = _striping(runs, sizes)
    return out


def _within(by_bs: dict[int, list[Sample]], low: int, high: int) -> list[int]:
    return sorted(bs for bs in by_bs if low <= bs <= high)


def _per_size(
    runs: Runs, claim: str, sizes: Sequence[int], what: str, pick: Callable[..., int]
) -> dict[str, Measured]:
    """A claim over several block sizes: per size the median over samples, the size ``pick`` (min or max)
    chooses decides; its samples are the repetitions, its measured cause the reason."""
    if not sizes:
        return {}
    get: Callable[[Point], float] = (lambda p: p.iops) if what == "iops" else (lambda p: p.mean_lat_ms)
    medians = {bs: statistics.median(get(x.point) for x in runs.plain[bs]) for bs in sizes}
    bs = pick(sizes, key=lambda b: medians[b])
    shown = ", ".join(
        f"{size(b)} {medians[b]:.0f}" if what == "iops" else f"{size(b)} {medians[b]:.1f}" for b in sizes
    )
    unit = "IOPS" if what == "iops" else "ms"
    which = "lowest" if pick is min else "highest"
    why = f"per block size ({unit}, medians): {shown}; the {which} is {size(bs)}. " + cause(
        runs.plain[bs], bs, runs.network
    )
    if what == "ms" and bs > LARGE:
        why += ". " + _copies_text(runs.network)
    return {claim: Measured.median_of([get(x.point) for x in runs.plain[bs]], why=why)}


def cause(samples: Sequence[Sample], bs: int, network: dict[str, object] | None) -> str:
    """What bounded the cluster at ``bs``, as measured over its samples: the host's CPU or the busiest link
    named as the limit when near saturation, the disk under the OSDs beside them (its busy time alone does
    not show a disk that serves requests in parallel saturated, so it is never named the limit by it)."""
    iops = statistics.median(x.point.iops for x in samples)
    mb_s = statistics.median(x.point.mb_s for x in samples)
    head = (
        f"At {size(bs)} the cluster completed {iops:.0f} IOPS ({mb_s:.0f} MB/s) with {IODEPTH} in flight, so "
        f"each I/O took {IODEPTH / max(iops, 1e-9) * 1000:.0f} ms on average (Little's law)"
    )
    loads: list[tuple[float, str]] = []  # (share of capacity, what) of what can be named the limit
    host = _seen(samples, "host_cpu_pct")
    if host is not None:
        text = f"the host's CPU ({host:.0f} % busy"
        osd, per_io = _seen(samples, "osd_cpu_pct"), _seen(samples, "osd_cpu_ms_per_io")
        if osd is not None and per_io is not None:
            text += (
                f"; the OSDs {osd:.0f} % of its {os.cpu_count() or 1} cores, {per_io:.2f} CPU ms per client "
                "I/O; the rest fio, the monitor and the other work of this shared host"
            )
        loads.append((host / 100, text + ")"))
    link = _seen(samples, "link_pct")
    if link is not None and network is not None:
        loads.append((link / 100, f"the busiest link ({link:.0f} % of its {network_text(network)})"))
    beside = []
    busy = _seen(samples, "busy_pct")
    if busy is not None:
        busy_text = f"the disk under the OSDs ({busy:.0f} % busy, queue {_seen(samples, 'queue') or 0:.1f}"
        caveat = "; busy time alone does not show a disk serving requests in parallel saturated"
        beside.append(busy_text + (caveat if busy >= 100 * SATURATED else "") + ")")
    if not loads and not beside:
        return head + "; the host's CPU, disk and links could not be read (the OSDs are not on this host)"
    limits = [t for share, t in loads if share >= SATURATED]
    rest = [t for share, t in loads if share < SATURATED] + beside
    if limits:
        return f"{head}. The measured limit: {' and '.join(limits)}" + (
            f"; beside it {'; '.join(rest)}" if rest else ""
        )
    return f"{head}. No measured resource was saturated: " + "; ".join(rest)


def _copies_text(network: dict[str, object] | None) -> str:
    """The paper's explanation of its large-block latency, and how the copies of a write travelled here."""
    said = (
        "The paper puts its large-block latency down to waiting for every copy over Ethernet between hosts "
        "(probably; and, its own caveat, perhaps a buffer overflowing): "
    )
    if network is None or network.get("kind") == "loopback":
        return said + "here the three copies travel over loopback inside one host"
    if network.get("kind") != "netns":
        return said + "here the copies travel over the existing cluster's own network"
    return said + (
        "here each copy crosses a link between network namespaces of one host, shaped by tc (the client's "
        f"link, then the primary OSD's to each replica; {network_text(network)})"
    )


def _ideal(runs: Runs) -> Measured:
    """The 4K mean against the ideal 20 ms: the median of the samples, and what bounded the cluster."""
    samples = runs.plain[4 * KIB]
    lats = [x.point.mean_lat_ms for x in samples]
    ideal = sum(x <= Criteria().ideal_ms for x in lats)
    straddle = f"the samples straddle 20 ms ({ideal} of {len(lats)} within): one sample's verdict would flip"
    return Measured.median_of(
        lats,
        why=f"{ideal} of {len(lats)} samples within 20 ms. " + cause(samples, 4 * KIB, runs.network),
        note=straddle if 0 < ideal < len(lats) else None,
    )


def _slow_link(runs: Runs, replicas: int, osds: int) -> Measured:
    """The 1M mean latency with every link at 1 Gbit/s, against the link-bound latency stated before."""
    stated = link_bound(1 << 20, SLOW_RATE, replicas, osds)[1]
    samples = runs.slow.get(1 << 20)
    if not samples:
        if runs.network is None or runs.network.get("kind") != "netns":
            return Measured(None, why="the replicas crossed no network vmio shapes (not a shaped cluster)")
        return Measured(None, why="the second run at 1 Gbit/s is made at --scale paper only")
    fast = runs.plain.get(1 << 20, [])
    slow_ms = statistics.median(x.point.mean_lat_ms for x in samples)
    why = (
        f"stated before the run: {stated:.1f} ms ({IODEPTH} in flight x {WRITE_SHARE} MiB per I/O on the "
        f"busiest link / 125 MB/s, {replicas} replicas on {osds} OSDs). "
    )
    rate = float(str((runs.network or {}).get("rate") or 0))
    if fast and rate:
        fast_ms = statistics.median(x.point.mean_lat_ms for x in fast)
        why += (
            f"From the cluster's own rate ({rate / 1e9:g} Gbit/s: {fast_ms:.0f} ms) to 1 Gbit/s the mean rose "
            f"{slow_ms / fast_ms:.2f}x; a latency the links alone set rises {rate / SLOW_RATE:g}x. "
        )
    why += cause(samples, 1 << 20, {**(runs.network or {}), "rate": SLOW_RATE})
    return Measured.median_of([x.point.mean_lat_ms for x in samples], why=why)


def _ratio(runs: Runs, bs: int) -> float:
    return statistics.median(x.point.iops for x in runs.striped[bs]) / statistics.median(
        x.point.iops for x in runs.plain[bs]
    )


def _striping(runs: Runs, sizes: Sequence[int]) -> Measured:
    """Fig. 3: striped over plain IOPS at ``sizes``. The two images take turns sample by sample, so each
    sample's pair gives a ratio per size; a sample's value is the median of its ratios over ``sizes``, the
    claim's the median over samples. The reason sets the ratio of the medians at each size beside what the
    OSDs and the disk did in both."""
    count = min(len(side[bs]) for bs in sizes for side in (runs.plain, runs.striped))
    per_sample = [
        statistics.median(
            runs.striped[bs][k].point.iops / max(runs.plain[bs][k].point.iops, 1e-9) for bs in sizes
        )
        for k in range(count)
    ]
    shown = ", ".join(f"{size(bs)} {_ratio(runs, bs):.2f}" for bs in sizes)
    why = f"striped/plain IOPS per block size (ratio of the medians), the images taking turns sample by sample: {shown}. "
    return Measured.median_of(per_sample, why=why + _striping_finding(runs, sizes))


def _seen(samples: Sequence[Sample], key: str) -> float | None:
    values = [x.disk[key] for x in samples if x.disk and key in x.disk]
    return statistics.median(values) if values else None


def _striping_finding(runs: Runs, sizes: Sequence[int]) -> str:
    """What the measurements say of the direction: the OSDs' CPU per I/O, the disk, the host's CPU."""
    said = []
    cost = [
        (bs, s / p)
        for bs in sizes
        if (s := _seen(runs.striped[bs], "osd_cpu_ms_per_io"))
        and (p := _seen(runs.plain[bs], "osd_cpu_ms_per_io"))
    ]
    if cost:
        said.append(
            "striping cost the OSDs "
            + ", ".join(f"{c:.2f}x the CPU per client I/O at {size(bs)}" for bs, c in cost)
            + f" (a request over {variants.STRIPE_UNIT // KIB}K stripe units becomes up to {variants.STRIPE_COUNT} "
            "object operations, each on all 3 replicas)"
        )
    busy = [
        b
        for bs in sizes
        for side in (runs.plain, runs.striped)
        if (b := _seen(side[bs], "busy_pct")) is not None
    ]
    if busy:
        said.append(f"the disk under the OSDs was {min(busy):.0f}-{max(busy):.0f} % busy")
    host = [
        h for bs in sizes for side in (runs.plain, runs.striped) if (h := _seen(side[bs], "host_cpu_pct"))
    ]
    if host:
        said.append(
            f"the host's CPU was {min(host):.0f}-{max(host):.0f} % busy (the OSDs, fio and the other work of "
            "this host share its cores; the paper's 8 hosts had an ioScale and cores each)"
        )
    if not said:
        return "The host's disk and CPU could not be read for this cluster (OSDs not on this host)."
    return "Measured alongside: " + "; ".join(said) + "."


def _disk_text(samples: Sequence[Sample]) -> str:
    """What the host did over ``samples`` (medians): its CPU, the OSDs' CPU per I/O, the disk, the links."""
    if not any(x.disk for x in samples):
        return ""
    parts = [f"host CPU {_seen(samples, 'host_cpu_pct') or 0.0:.0f} % busy"]
    if _seen(samples, "osd_cpu_ms_per_io") is not None:
        parts.append(f"OSDs {_seen(samples, 'osd_cpu_ms_per_io') or 0.0:.2f} CPU ms per client I/O")
    busy, writes = _seen(samples, "busy_pct"), _seen(samples, "write_iops")
    if busy is not None and writes is not None:
        client = statistics.median(x.point.write_iops for x in samples if x.disk)
        per = f", {writes / client:.1f} disk writes per client write" if client else ""
        parts.append(
            f"the disk under the OSDs {busy:.0f} % busy, queue {_seen(samples, 'queue') or 0.0:.1f}{per}"
        )
    link = _seen(samples, "link_pct")
    if link is not None:
        parts.append(f"the busiest link {link:.0f} % of its rate")
    return ", ".join(parts)


def table(runs: Runs) -> list[TableRow]:
    """The page's table: per image and block size, the median over samples, their spread, the host."""
    rows: list[TableRow] = []
    images = (
        ("plain (3-way mirror)", runs.plain),
        ("striped", runs.striped),
        ("plain, links at 1 Gbit/s", runs.slow),
    )
    for name, by_bs in images:
        for bs in sorted(by_bs):
            samples = by_bs[bs]
            iops = [x.point.iops for x in samples]
            lat = [x.point.mean_lat_ms for x in samples]
            verdicts = [x.point.verdict for x in samples]
            rows.append(
                {
                    "image": name,
                    "bs": size(bs),
                    "IOPS (median)": round(statistics.median(iops)),
                    "IOPS min..max": f"{min(iops):.0f}..{max(iops):.0f}",
                    "mean ms (median)": round(statistics.median(lat), 2),
                    "mean ms min..max": f"{min(lat):.1f}..{max(lat):.1f}",
                    "verdicts": ", ".join(f"{v} x{verdicts.count(v)}" for v in sorted(set(verdicts))),
                    "what the host did": _disk_text(samples) or None,
                }
            )
    return rows


def striping_table(runs: Runs) -> list[TableRow]:
    """Fig. 3 at every block size both images ran: the medians side by side and the paper's reading."""
    rows: list[TableRow] = []
    for bs in sorted(b for b in runs.striped if b in runs.plain):
        inside = STRIPED_RANGE[0] <= bs <= STRIPED_RANGE[1]
        lat = [
            statistics.median(x.point.mean_lat_ms for x in side[bs]) for side in (runs.plain, runs.striped)
        ]
        rows.append(
            {
                "bs": size(bs),
                "plain IOPS": round(statistics.median(x.point.iops for x in runs.plain[bs])),
                "striped IOPS": round(statistics.median(x.point.iops for x in runs.striped[bs])),
                "striped/plain IOPS": round(_ratio(runs, bs), 3),
                "plain mean ms": round(lat[0], 2),
                "striped mean ms": round(lat[1], 2),
                "the paper (Fig. 3)": "slightly better" if inside else "about the same",
                "claim": "fig3-striping-32k-256k" if inside else "fig3-striping-elsewhere",
            }
        )
    return rows


def _x(bs: int) -> float:
    """A block size on the figures' x axis: log2 of KiB (each doubling one step, as the paper's axis)."""
    return float((bs // KIB).bit_length() - 1)


def paper_figures(runs: Runs) -> list[Figure]:
    """Fig. 2 (IOPS and mean latency against block size, every size run) and Fig. 3 (striped over plain
    IOPS per size), from the stored samples' medians, with the paper's stated thresholds."""
    sizes = sorted(set(runs.plain) | set(runs.striped) | set(runs.slow))
    ticks = tuple((_x(bs), size(bs)) for bs in sizes)
    images = [("plain (3-way mirror)", runs.plain), ("striped", runs.striped)]
    if runs.slow:
        images.append(("plain, links at 1 Gbit/s", runs.slow))

    def curve(get: Callable[[Point], float]) -> tuple[Series, ...]:
        return tuple(
            Series(
                name, tuple((_x(bs), statistics.median(get(x.point) for x in by[bs])) for bs in sorted(by))
            )
            for name, by in images
            if by
        )

    source = "Fig. 2 (一般的なクラウドサービスと仮想分散ストレージの比較: IOPS、レスポンス時間), §5's reading of it"
    fig2_iops = Figure(
        "fig2-iops",
        "Fig. 2: IOPS against block size (30 % read, 50 in flight)",
        source + " (4K〜64K: 数千 IOPS; 256K 以上: 全体で 4,000IOPS に届かない)",
        "block size (each step doubles it)",
        "IOPS (median over samples)",
        curve(lambda p: p.iops),
        (
            Mark("y", 4000.0, "paper: > 4,000 IOPS at 4K-64K"),
            Mark("y", 500.0, "the criterion: 500 IOPS per host"),
        ),
        ticks,
    )
    stated = Series(
        "paper's lower bounds",
        tuple((_x(bs), ms) for bs, ms in THRESHOLDS),
        kind="paper",
    )
    fig2_lat = Figure(
        "fig2-latency",
        "Fig. 2: mean response time against block size",
        source + " (256K を超えると 100ms、512K で 200ms、1M で 500ms を超える)",
        "block size (each step doubles it)",
        "mean latency, ms (median over samples)",
        (*curve(lambda p: p.mean_lat_ms), stated),
        (Mark("y", 100.0, "paper: above 100 ms beyond 256K"), Mark("x", _x(LARGE), "256K")),
        ticks,
    )
    out = [fig2_iops, fig2_lat]
    both = [bs for bs in sorted(runs.striped) if bs in runs.plain]
    if both:
        out.append(
            Figure(
                "fig3-striping",
                "Fig. 3: striped over mirror-only IOPS against block size",
                "Fig. 3 (仮想分散ストレージストライピングでの比較), §5: slightly better at 32K-256K, otherwise about the same",
                "block size (each step doubles it)",
                "striped / plain IOPS (ratio of the medians)",
                (Series("striped / plain", tuple((_x(bs), _ratio(runs, bs)) for bs in both)),),
                (
                    Mark("y", 1.0, "the mirror alone"),
                    Mark("x", _x(STRIPED_RANGE[0]), "32K"),
                    Mark("x", _x(STRIPED_RANGE[1]), "256K"),
                ),  # fmt: skip
                tuple((_x(bs), size(bs)) for bs in both),
            )
        )
    return out
