"""hitachi-nvme-2016 (seed 000): N fio processes of 4 KiB random I/O on one device, N = the host's cores
(the paper: 16 on a 16-core host), in the paper's five configurations beside Bare (Figs. 4, 5, 7, 8), and
Bare's device busy % and CPU against the offered load (Fig. 6).

Two campaigns, stored like any other: ``<id>-<scale>-<stamp>`` (every configuration, unthrottled, the
highest IOPS of each) and ``...-fig6`` (Bare only, the offered read and write load swept as fractions of
the Bare maximum the first campaign measured, as the paper's x axis sweeps the offered load).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vmio.campaign import runner
from vmio.published import SEED_BY_KEY
from vmio.reproduce.result import Details, Measured, Spread, TableRow
from vmio.reproduce.retry import Tries, run_campaign
from vmio.spec.fields import host_cores
from vmio.store import Store
from vmio.store.rows import PointRow, point_rows


@dataclass(frozen=True)
class Scale:
    size: str
    runtime: str
    ramp: str
    repetitions: int
    fig6: tuple[float, ...]  # Fig. 6's offered loads, as fractions of the Bare maximum


SCALES = {
    "quick": Scale(size="256M", runtime="2s", ramp="1s", repetitions=1, fig6=(0.25, 0.5, 1.0, 2.0)),
    "paper": Scale(
        size="4G", runtime="30s", ramp="5s", repetitions=3, fig6=(0.1, 0.25, 0.5, 0.75, 1.0, 1.4, 2.0)
    ),
}
BUSY_FULL = 95.0  # device busy % the paper's "100 %" is read as (a whole-second sampling rounds below 100)

# the five configurations and Bare: (target name, configuration key of vmio.published, spec lines)
CONFIGS: tuple[tuple[str, str, str], ...] = (
    ("bare", "bare", 'kind = "host"\npath = "{d}/ssd1.img"'),
    ("1fio-per-vm-xN", "1fio-per-vm",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img"]\nvms = "cores"\njobs_per_vm = 1\nvcpus = 1'),
    ("Nfio-1vm", "nfio-per-vm",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img"]\njobs_per_vm = "cores"\nvcpus = "cores"'),
    ("Nfio-1vm-passthrough", "passthrough",
     'kind = "qemu"\nbacking = ["{d}/ssd-dedicated.img"]\nloop = true\nbus = "block"\njobs_per_vm = "cores"\n'
     'vcpus = "cores"'),
    ("Nfio-1vm-iothread", "iothread",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img"]\niothreads = "cores"\nqueues = "cores"\njobs_per_vm = "cores"\n'
     'vcpus = "cores"'),
    ("1fio-per-vm-xN-2dev", "two-devices",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img", "{d}/ssd2.img"]\nvms = "cores"\njobs_per_vm = 1\nvcpus = 1'),
)  # fmt: skip
TARGET_OF = {key: name for name, key, _ in CONFIGS}


@dataclass(frozen=True)
class Setting:
    scale: str
    disks: Path  # a folder on a disk filesystem (O_DIRECT): the configurations' device files
    campaign: str  # the campaigns' name stem
    boot_timeout: float = 300.0
    workdir: Path | None = None


def spec_main(s: Setting) -> str:
    conf = SCALES[s.scale]
    parts = [f'[campaign]\nname = "{s.campaign}"\nrepetitions = {conf.repetitions}\n']
    parts += [
        f'[[target]]\nname = "{name}"\n{body.format(d=s.disks)}\nsize = "{conf.size}"\n'
        for name, _, body in CONFIGS
    ]
    parts += [_workload(rw, conf, '"max"') for rw in ("randread", "randwrite")]
    return "\n".join(parts)


def spec_fig6(s: Setting, bare_max: dict[str, float]) -> str:
    conf = SCALES[s.scale]
    parts = [
        f'[campaign]\nname = "{s.campaign}-fig6"\nrepetitions = {conf.repetitions}\n',
        f'[[target]]\nname = "bare"\nkind = "host"\npath = "{s.disks}/ssd1.img"\nsize = "{conf.size}"\n',
    ]
    for rw in ("randread", "randwrite"):
        top = max(bare_max.get(rw, 0.0), 100.0)
        levels = sorted({max(10, int(top * f)) for f in conf.fig6})
        parts.append(_workload(rw, conf, ", ".join(str(x) for x in levels)))
    return "\n".join(parts)


def _workload(rw: str, conf: Scale, offered: str) -> str:
    return (
        f'[[workload]]\nname = "{rw}"\nrw = "{rw}"\nbs = "4k"\nnumjobs = "cores"\niodepth = 16\n'
        f'runtime = "{conf.runtime}"\nramp = "{conf.ramp}"\noffered_iops = [{offered}]\n'
    )


def run(
    s: Setting,
    store: Store,
    progress: Callable[[runner.Progress], None] | None = None,
) -> tuple[dict[str, Measured], Details, Tries, str | None]:
    """Run both campaigns; the claims' measurements, the page's tables, the points' tries and the
    accelerator."""
    tries = Tries()
    options = runner.Options(workdir=s.workdir, boot_timeout=s.boot_timeout)
    run_campaign(spec_main(s), f"<{s.campaign}>", store, options, progress, tries)
    rows = point_rows(store, s.campaign)
    best = peaks(rows)
    bare = {rw: best.get(("bare", rw), (0.0, []))[0] for rw in ("randread", "randwrite")}
    run_campaign(spec_fig6(s, bare), f"<{s.campaign}-fig6>", store, options, progress, tries)
    sweep = with_fio_cpu(store, f"{s.campaign}-fig6", point_rows(store, f"{s.campaign}-fig6"))
    accels = {r.accel for r in rows if r.accel}
    accel = "tcg" if "tcg" in accels else (accels.pop() if accels else None)
    measured = measure(best)
    measured.update(fig6(sweep, bare))
    details: Details = {"configurations": table(best), "fig6": fig6_table(sweep)}
    return measured, details, tries, accel


@dataclass(frozen=True)
class SweepPoint:
    """A stored point of Fig. 6's sweep (the figures ``vmio show`` gives) and the measured fio processes'
    own CPU (% of one core, summed; fio's ``usr_cpu`` and ``sys_cpu``)."""

    row: PointRow
    fio_usr_pct: float | None
    fio_sys_pct: float | None

    def metric(self, name: str) -> float:
        """A device or host CPU figure (``dev_busy_pct``, ``cpu_sys_pct``), 0.0 where not measured."""
        return self.row.metric(name) or 0.0


def with_fio_cpu(store: Store, campaign: str, rows: list[PointRow]) -> list[SweepPoint]:
    """``rows`` with the measured fio processes' own CPU."""
    own: dict[str, tuple[float, float]] = {}
    for run in store.runs(campaign):
        jobs = [r for r in store.results(run["id"]) if r["role"] == "measure"]
        if jobs and all(r["usr_cpu"] is not None and r["sys_cpu"] is not None for r in jobs):
            own[run["point_key"]] = (sum(r["usr_cpu"] for r in jobs), sum(r["sys_cpu"] for r in jobs))
    out = []
    for row in rows:
        usr, sys = own.get(row.point, (None, None))
        out.append(SweepPoint(row, usr, sys))
    return out


def _iops(row: PointRow, rw: str) -> float:
    return float(row.read_iops if rw == "randread" else row.write_iops)


def peaks(rows: list[PointRow]) -> dict[tuple[str, str], tuple[float, list[float]]]:
    """Per (target, workload): the median over repetitions of its IOPS, and each repetition's."""
    out: dict[tuple[str, str], tuple[float, list[float]]] = {}
    for target, _, _ in CONFIGS:
        for rw in ("randread", "randwrite"):
            got = [_iops(r, rw) for r in rows if (r.target, r.workload, r.status) == (target, rw, "done")]
            if got:
                out[(target, rw)] = (statistics.median(got), got)
    return out


CLAIM_OF = {  # configuration key -> the claim ids of its read and write ratio against Bare
    "1fio-per-vm": ("fig4-scaleout-read", "fig4-scaleout-write"),
    "nfio-per-vm": ("fig4-onevm-read", "fig4-onevm-write"),
    "passthrough": ("fig5-passthrough-read", "fig5-passthrough-write"),
    "two-devices": ("fig7-two-devices-read", "fig7-two-devices-write"),
    "iothread": ("fig8-iothread-read", "fig8-iothread-write"),
}


def measure(best: dict[tuple[str, str], tuple[float, list[float]]]) -> dict[str, Measured]:
    """Each configuration's highest IOPS over Bare's, reads and writes (Figs. 4, 5, 7, 8), and Fig. 8's
    iothread against 1fio/vm x N."""
    out: dict[str, Measured] = {}
    for key, ids in CLAIM_OF.items():
        for rw, claim in zip(("randread", "randwrite"), ids, strict=True):
            ratio = _ratio(best, TARGET_OF[key], "bare", rw)
            if ratio is not None:
                out[claim] = ratio
    for rw, claim in (
        ("randread", "fig8-iothread-like-scaleout-read"),
        ("randwrite", "fig8-iothread-like-scaleout-write"),
    ):
        ratio = _ratio(best, TARGET_OF["iothread"], TARGET_OF["1fio-per-vm"], rw)
        if ratio is not None:
            out[claim] = ratio
    two = out.get("fig7-two-devices-write")
    if two is not None:
        out["fig7-two-devices-write"] = Measured(
            two.value,
            two.spread,
            values=two.values,
            why="both device files lie on this host's one disk (the paper spread the VMs' devices over two "
            "SSDs), so the second file adds no device",
        )
        read = out.get("fig7-two-devices-read")
        if read is not None:
            out["fig7-two-devices-read"] = Measured(read.value, read.spread, why=two.why, values=read.values)
    return out


def _ratio(
    best: dict[tuple[str, str], tuple[float, list[float]]], target: str, base: str, rw: str
) -> Measured | None:
    a, b = best.get((target, rw)), best.get((base, rw))
    if a is None or b is None or not b[0]:
        return None
    reps = [x / b[0] for x in a[1]]
    return Measured(a[0] / b[0], Spread.of(reps) if len(reps) > 1 else None, values=tuple(reps))


def fig6(sweep: list[SweepPoint], bare: dict[str, float]) -> dict[str, Measured]:
    """Fig. 6's two statements from Bare's offered-load sweep: the device busy 100 % at every offered
    write load and from 600k offered reads (1.37x the 438k Bare read maximum), and %sys above %usr where
    reads reach their limit."""
    out: dict[str, Measured] = {}
    writes = _by_offered(sweep, "randwrite")
    if writes:
        busy = [r.metric("dev_busy_pct") for _, r in writes]
        out["fig6-write-busy-always"] = Measured(
            min(busy),
            Spread.of(busy),
            why=f"device busy {', '.join(f'{b:.0f} %' for b in busy)} at offered "
            f"{', '.join(str(o) for o, _ in writes)} IOPS: {_limit_why(writes)}",
        )
    reads = _by_offered(sweep, "randread")
    if reads and bare.get("randread"):
        full = [o for o, r in reads if r.metric("dev_busy_pct") >= BUSY_FULL]
        top = max(reads, key=lambda x: x[0])[1]
        busy_text = ", ".join(f"{r.metric('dev_busy_pct'):.0f} %" for _, r in reads)
        where = (
            f"device busy {busy_text} at offered {', '.join(str(o) for o, _ in reads)} IOPS "
            f"(Bare's read maximum {bare['randread']:.0f} IOPS)"
        )
        out["fig6-read-busy-from"] = Measured(
            min(full) / bare["randread"] if full else None,
            why=f"{where}: busy never reached {BUSY_FULL:.0f} %; {_limit_why(reads)}" if not full else where,
        )
        out["fig6-read-busy-at-limit"] = Measured(
            top.metric("dev_busy_pct"), why=f"{where}; {_limit_why(reads)}"
        )
        usr, sys = top.fio_usr_pct, top.fio_sys_pct
        host = f"host-wide %sys {top.metric('cpu_sys_pct'):.1f}, %usr {top.metric('cpu_usr_pct'):.1f} (/proc/stat)"
        out["fig6-read-sys-over-usr"] = Measured(
            sys / usr if usr and sys is not None else None,
            why=f"at the highest offered read load the fio processes' own %sys {sys or 0.0:.1f} and %usr "
            f"{usr or 0.0:.1f} (fio's usr_cpu/sys_cpu: on a host shared with other work the host-wide figures "
            f"count that work too; {host})",
        )
    return out


def _by_offered(sweep: list[SweepPoint], rw: str) -> list[tuple[int, SweepPoint]]:
    """The throttled points of workload ``rw`` by offered IOPS, the first repetition of each."""
    first: dict[int, SweepPoint] = {}
    for p in sorted(sweep, key=lambda p: (p.row.offered_iops or 0, p.row.repetition)):
        if p.row.workload == rw and p.row.status == "done" and p.row.offered_iops is not None:
            first.setdefault(p.row.offered_iops, p)
    return sorted(first.items(), key=lambda x: x[0])


def _limit_why(points: list[tuple[int, SweepPoint]]) -> str:
    """What limits the highest offered point, measured: the host CPU or the device."""
    _, top = max(points, key=lambda x: x[0])
    cpu = top.metric("cpu_usr_pct") + top.metric("cpu_sys_pct") + top.metric("cpu_iowait_pct")
    busy = top.metric("dev_busy_pct")
    return (
        f"at the highest offered load the host CPU was {cpu:.0f} % used (usr+sys+iowait) and the device "
        f"{busy:.0f} % busy, its queue {top.metric('dev_queue'):.1f}: here the device is a file on this host's "
        "disk (shared with other jobs), not a dedicated NVMe SSD"
    )


def table(best: dict[tuple[str, str], tuple[float, list[float]]]) -> list[TableRow]:
    """The page's table: each configuration's IOPS and its ratio over Bare beside the paper's."""
    rows = []
    for name, key, _ in CONFIGS:
        c = SEED_BY_KEY[key]
        row: TableRow = {"configuration": c.term, "target": name, "N": host_cores()}
        for rw, paper in (("randread", c.read_ratio), ("randwrite", c.write_ratio)):
            mine = best.get((name, rw))
            base = best.get(("bare", rw))
            short = rw[4:]
            row[f"{short} IOPS"] = round(mine[0]) if mine else None
            row[f"{short} / Bare"] = round(mine[0] / base[0], 3) if mine and base and base[0] else None
            row[f"paper {short} / Bare"] = None if paper is None else round(paper, 3)
        rows.append(row)
    return rows


def fig6_table(sweep: list[SweepPoint]) -> list[TableRow]:
    return [
        {
            "workload": rw,
            "offered IOPS": o,
            "IOPS": round(_iops(p.row, rw)),
            "device busy %": p.row.metric("dev_busy_pct"),
            "queue": p.row.metric("dev_queue"),
            "host %usr": p.row.metric("cpu_usr_pct"),
            "host %sys": p.row.metric("cpu_sys_pct"),
            "fio %usr": p.fio_usr_pct,
            "fio %sys": p.fio_sys_pct,
        }
        for rw in ("randread", "randwrite")
        for o, p in _by_offered(sweep, rw)
    ]
