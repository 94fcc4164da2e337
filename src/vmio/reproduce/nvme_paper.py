"""hitachi-nvme-2016 (hitachi-nvme-2016): N fio processes of 4 KiB random I/O on one device, N = the host's cores up
to the scale's bound (the paper: 16 on a 16-core host), in the paper's configurations beside Bare (Figs. 4,
5, 7, 8; the iothread one change at a time, alone and with multi-queue), Bare's device busy % and CPU against
the offered load (Fig. 6, drawn from the stored sweep), and the paper's guidelines run on them
(``nvme_guidelines``: Fig. 9 through ``advise``, Fig. 10 through ``diagnose``).

Campaigns, stored like any other: ``<id>-<scale>-<stamp>`` (every configuration, unthrottled, the highest
IOPS of each), ``...-vfio`` (only where VFIO can assign a free NVMe device: the passthrough configuration,
run while the device is bound to vfio-pci; Bare ran on the same device in the first) and ``...-fig6`` (Bare
only, the offered read and write load swept as fractions of the Bare maximum the first campaign measured, as
the paper's x axis sweeps the offered load).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from vmio.advise.inventory import HostFacts, read_block_devices
from vmio.advise.measured import measured_ratios, pick
from vmio.campaign import runner
from vmio.published import SEED_BY_KEY, SEED_N
from vmio.qemu import VfioBinding, iommu_present
from vmio.reproduce import nvme_guidelines
from vmio.reproduce.figure import Figure, Mark, Series
from vmio.reproduce.result import BeyondRow, Details, Measured, Spread, TableRow, beyond
from vmio.reproduce.retry import Tries, run_campaign
from vmio.spec.fields import host_cores
from vmio.store import Store
from vmio.store.rows import PointRow, point_rows
from vmio.system.process import Runner
from vmio.system.safety import data_on_device


@dataclass(frozen=True)
class Scale:
    size: str
    runtime: str
    ramp: str
    repetitions: int
    fig6: tuple[float, ...]  # Fig. 6's offered loads, as fractions of the Bare maximum
    max_n: int  # N = the host's cores up to this (more TCG guests than cores would measure CPU contention)


SCALES = {
    "quick": Scale(size="128M", runtime="2s", ramp="1s", repetitions=1, fig6=(0.25, 1.0, 2.0), max_n=4),
    "paper": Scale(
        size="4G", runtime="30s", ramp="5s", repetitions=3, fig6=(0.1, 0.25, 0.5, 0.75, 1.0, 1.4, 2.0),
        max_n=SEED_N,
    ),
}  # fmt: skip
BUSY_FULL = 95.0  # device busy % the paper's "100 %" is read as (a whole-second sampling rounds below 100)

# the configurations and Bare: (target name, configuration key of vmio.published, spec lines); {n} is N,
# {d} the folder of the device files, {passthrough} the passed-through disk (``Passthrough.spec``)
CONFIGS: tuple[tuple[str, str, str], ...] = (
    ("bare", "bare", 'kind = "host"\npath = "{d}/ssd1.img"'),
    ("1fio-per-vm-xN", "1fio-per-vm",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img"]\nvms = {n}\njobs_per_vm = 1\nvcpus = 1'),
    ("Nfio-1vm", "nfio-per-vm",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img"]\njobs_per_vm = {n}\nvcpus = {n}'),
    ("Nfio-1vm-passthrough", "passthrough",
     'kind = "qemu"\n{passthrough}\njobs_per_vm = {n}\nvcpus = {n}'),
    # §4.3's option, one change at a time: the iothread alone (the baseline's one queue), then with one
    # queue per vCPU (the multi-queue reading of §4.3)
    ("Nfio-1vm-iothread", "iothread",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img"]\niothreads = 1\njobs_per_vm = {n}\nvcpus = {n}'),
    ("Nfio-1vm-iothread-mq", "iothread",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img"]\niothreads = 1\nqueues = {n}\njobs_per_vm = {n}\nvcpus = {n}'),
    ("1fio-per-vm-xN-2dev", "two-devices",
     'kind = "qemu"\nbacking = ["{d}/ssd1.img", "{d}/ssd2.img"]\nvms = {n}\njobs_per_vm = 1\nvcpus = 1'),
)  # fmt: skip
TARGET_OF = {key: name for name, key, _ in reversed(CONFIGS)}  # a key's first target (iothread: the alone)
IOTHREAD_MQ = "Nfio-1vm-iothread-mq"
BARE_DEVICE = "bare-passthrough-device"  # VFIO only: Bare on the NVMe device that is then passed through


def n_of(scale: str) -> int:
    """N: the fio processes of every configuration, the host's cores up to the scale's ``max_n``."""
    return min(host_cores(), SCALES[scale].max_n)


@dataclass(frozen=True)
class Passthrough:
    """How the paper's "Path Through" is measured here: ``vfio`` (an NVMe controller assigned to the VM,
    the host no longer sees it: the paper's setting) where an IOMMU and a free NVMe device exist, else
    ``block`` (a raw block device, a loop device over a file, handed to the VM through virtio-blk), with
    ``why`` VFIO was not possible."""

    bus: str
    pci: str | None = None  # vfio: the controller's PCI address
    device: str | None = None  # vfio: its namespace, /dev/nvme0n1 (Bare runs on it first)
    why: str = ""

    def spec(self, disks: Path) -> str:
        if self.bus == "vfio":
            return f'bus = "vfio"\nbacking = ["{self.pci}"]'
        return f'backing = ["{disks}/ssd-dedicated.img"]\nloop = true\nbus = "block"'

    def untested(self) -> str | None:
        """Why fig5's sentence is not tested (None: VFIO assigned the device, as the paper did)."""
        if self.bus == "vfio":
            return None
        return (
            f"VFIO was not possible here ({self.why}), so the paper's Path Through (the SSD assigned to the "
            "VM, the host no longer seeing it) was not measured; measured instead: a raw block device (a loop "
            "device over a file) handed to the VM through virtio-blk (driver=host_device, virtio-blk-pci), "
            "so virtio-blk stays in the path and the sentence (Fig. 4's loss is virtio-blk's) is not tested"
        )


def passthrough(sys_root: Path = Path("/sys"), runner: Runner | None = None) -> Passthrough:
    """VFIO where this host has an IOMMU and an NVMe device with its PCI function that holds no data and is
    not used by the host (``safety.data_on_device``), else a raw block device over virtio-blk."""
    if not iommu_present(sys_root):
        return Passthrough("block", why=f"no IOMMU: {sys_root}/kernel/iommu_groups is empty or missing")
    nvme = [d for d in read_block_devices(sys_root) if d.name.startswith("nvme") and d.pci_address]
    if not nvme:
        return Passthrough("block", why="an IOMMU but no NVMe device with a PCI function")
    refused: list[str] = []
    for d in nvme:
        reasons = [d.host_uses] if d.host_uses else []
        reasons += data_on_device(f"/dev/{d.name}", runner or Runner(), sys_root)
        if not reasons:
            return Passthrough("vfio", pci=d.pci_address, device=f"/dev/{d.name}")
        refused.append(f"{d.name}: {reasons[0]}")
    return Passthrough("block", why="no free NVMe device (" + "; ".join(refused) + ")")


@dataclass(frozen=True)
class Setting:
    scale: str
    disks: Path  # a folder on a disk filesystem (O_DIRECT): the configurations' device files
    campaign: str  # the campaigns' name stem
    boot_timeout: float = 300.0
    workdir: Path | None = None
    passthrough: Passthrough = Passthrough("block", why="not looked for")


def _target(s: Setting, name: str, body: str) -> str:
    conf = SCALES[s.scale]
    text = body.format(d=s.disks, n=n_of(s.scale), passthrough=s.passthrough.spec(s.disks))
    size = f'size = "{conf.size}"\n' if "vfio" not in text else ""
    return f'[[target]]\nname = "{name}"\n{text}\n{size}'


def spec_main(s: Setting) -> str:
    conf = SCALES[s.scale]
    vfio = s.passthrough.bus == "vfio"
    parts = [f'[campaign]\nname = "{s.campaign}"\nrepetitions = {conf.repetitions}\n']
    parts += [_target(s, name, body) for name, key, body in CONFIGS if not (vfio and key == "passthrough")]
    if vfio:  # Bare on the device the VM is then given whole
        parts.append(f'[[target]]\nname = "{BARE_DEVICE}"\nkind = "host"\npath = "{s.passthrough.device}"\n')
    parts += [_workload(rw, s.scale, '"max"') for rw in ("randread", "randwrite")]
    return "\n".join(parts)


def spec_vfio(s: Setting) -> str:
    """The passthrough configuration by VFIO, run while the device is bound to vfio-pci."""
    conf = SCALES[s.scale]
    body = next(b for _, key, b in CONFIGS if key == "passthrough")
    parts = [
        f'[campaign]\nname = "{s.campaign}-vfio"\nrepetitions = {conf.repetitions}\n',
        _target(s, TARGET_OF["passthrough"], body),
    ]
    parts += [_workload(rw, s.scale, '"max"') for rw in ("randread", "randwrite")]
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
        parts.append(_workload(rw, s.scale, ", ".join(str(x) for x in levels)))
    return "\n".join(parts)


def _workload(rw: str, scale: str, offered: str) -> str:
    conf = SCALES[scale]
    return (
        f'[[workload]]\nname = "{rw}"\nrw = "{rw}"\nbs = "4k"\nnumjobs = {n_of(scale)}\niodepth = 16\n'
        f'runtime = "{conf.runtime}"\nramp = "{conf.ramp}"\noffered_iops = [{offered}]\n'
    )


def campaigns(s: Setting) -> list[str]:
    """The campaigns a run stores, in order."""
    vfio = [f"{s.campaign}-vfio"] if s.passthrough.bus == "vfio" else []
    return [s.campaign, *vfio, f"{s.campaign}-fig6"]


NOTES = (
    "N is the fio processes of every configuration: the paper's 16 (its host's cores); here the host's cores "
    "up to 4 at --scale quick and up to 16 at --scale paper, never more than the cores (more TCG guests than "
    "cores would measure CPU contention, not the configurations). The table 'N' says what N does to each "
    "contrast; a contrast N cannot show is 'cannot tell' with that reason, not a verdict.",
    "The iothread is measured one change at a time: Nfio-1vm-iothread adds one iothread to Nfio-1vm and keeps "
    "its one queue; Nfio-1vm-iothread-mq also gives the disk one queue per vCPU (§4.3 presents the iothread "
    "option as the multi-queue remedy, マルチキュー対応). The paper's 342k read / 89k write (Fig. 8) is read as "
    "the iothread alone: its host ran Fedora 23, whose QEMU (2.4) had one queue per virtio-blk disk "
    "(num-queues came with QEMU 2.7); fig8-* claims are judged on it, the multi-queue variant is in 'beyond'.",
)


@dataclass
class Outcome:
    """What the reproduction gives the page: the claims' measurements, tables, figures, what-ifs, the
    points' tries, the accelerator and the campaigns stored."""

    measured: dict[str, Measured]
    details: Details
    figures: list[Figure]
    beyond: list[BeyondRow]
    tries: Tries
    accel: str | None
    campaigns: list[str]


def run(
    s: Setting,
    store: Store,
    progress: Callable[[runner.Progress], None] | None = None,
    here: HostFacts | None = None,
    why_not_here: str = "",
) -> Outcome:
    """Run the campaigns; judge Figs. 4-8 on them, diagnose every configuration (Fig. 10) and advise on
    the paper's case and on this host (``here``, Fig. 9)."""
    tries = Tries()
    options = runner.Options(workdir=s.workdir, boot_timeout=s.boot_timeout)
    run_campaign(spec_main(s), f"<{s.campaign}>", store, options, progress, tries)
    rows = point_rows(store, s.campaign)
    if s.passthrough.bus == "vfio" and s.passthrough.pci:
        with VfioBinding(s.passthrough.pci):
            run_campaign(spec_vfio(s), f"<{s.campaign}-vfio>", store, options, progress, tries)
        rows += point_rows(store, f"{s.campaign}-vfio")
    best = peaks(rows)
    bare = {rw: best.get(("bare", rw), (0.0, []))[0] for rw in ("randread", "randwrite")}
    run_campaign(spec_fig6(s, bare), f"<{s.campaign}-fig6>", store, options, progress, tries)
    sweep = with_fio_cpu(store, f"{s.campaign}-fig6", point_rows(store, f"{s.campaign}-fig6"))
    accels = {r.accel for r in rows if r.accel}
    accel = "tcg" if "tcg" in accels else (accels.pop() if accels else None)
    n = n_of(s.scale)
    measured = measure(best, n, s.passthrough)
    measured.update(fig6(sweep, bare))
    ratios = measured_ratios(store)  # this host's, as `vmio advise --db` reads them
    chose, fig9_rows = nvme_guidelines.fig9(here, why_not_here, lambda config: pick(ratios, config))
    measured.update(chose)
    untested = {TARGET_OF["passthrough"]: why} if (why := s.passthrough.untested()) else {}
    walked, fig10_rows = nvme_guidelines.fig10(store, campaigns(s)[:-1], untested)
    measured.update(walked)
    details: Details = {
        "configurations": table(best, n),
        "N": n_table(n),
        "fig6": fig6_table(sweep),
        "fig9": fig9_rows,
        "fig10": fig10_rows,
    }
    return Outcome(measured, details, fig6_figures(sweep, bare), mq_beyond(best), tries, accel, campaigns(s))


def mq_beyond(best: dict[tuple[str, str], tuple[float, list[float]]]) -> list[BeyondRow]:
    """The multi-queue variant of the iothread over Bare and over the iothread alone: §4.3's other reading."""
    out = []
    for rw, word in (("randread", "read"), ("randwrite", "write")):
        for base, over in (("bare", "Bare"), (TARGET_OF["iothread"], "the iothread alone")):
            m = _ratio(best, IOTHREAD_MQ, base, rw)
            if m is not None:
                out.append(
                    beyond(
                        f"iothread-mq-{word}-over-{'bare' if base == 'bare' else 'iothread'}",
                        f"N fio/vm + iothread with one queue per vCPU: random-{word} IOPS over {over}",
                        f"highest {word} IOPS of {IOTHREAD_MQ} over {base}'s (median over repetitions)",
                        m,
                        f"x {over}",
                        "§4.3's multi-queue reading of the iothread option; the paper's QEMU had one queue per "
                        "disk, so it shows no figure for it",
                    )
                )
    return out


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
    for target in [name for name, _, _ in CONFIGS] + [BARE_DEVICE]:
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


# Claims that contrast one VM's N jobs with N VMs (or the gap the iothread closes): (the paper's contrast, its
# figures). One QEMU thread serving what N serve can make at most an N-fold contrast, so N below the paper's
# contrast cannot show it, whatever the repetitions say.
CONTRASTS = {
    "fig4-onevm-read": (0.79 / 0.21, "1fio/vm x 16 at 0.79x Bare against 16fio/vm at 0.21x"),
    "fig4-onevm-write": (1.0 / 0.93, "1fio/vm x 16 at 1.0x Bare against 16fio/vm at 0.93x"),
    "fig8-iothread-read": (0.78 / 0.21, "the iothread lifts 16fio/vm from 0.21x to 0.78x Bare"),
    "fig8-iothread-write": (0.99 / 0.93, "the iothread lifts 16fio/vm from 0.93x to 0.99x Bare"),
    "fig8-iothread-like-scaleout-read": (0.79 / 0.21, "the gap the iothread closes: 0.79x against 0.21x"),
    "fig8-iothread-like-scaleout-write": (1.0 / 0.93, "the gap the iothread closes: 1.0x against 0.93x"),
}


def contrast_why(claim: str, n: int) -> str | None:
    """Why N cannot show ``claim``'s contrast (None: it can, or the claim is no contrast)."""
    if claim not in CONTRASTS:
        return None
    factor, what = CONTRASTS[claim]
    if n >= factor:
        return None
    return (
        f"N = {n} fio processes against the paper's {SEED_N}: one VM's {n} jobs against {n} VMs differ at most "
        f"{n}x (one QEMU thread serving what {n} serve), and the paper's contrast is {factor:.2f}x ({what}), so "
        f"N = {n} cannot show it (N >= {math.ceil(factor)} could); no verdict"
    )


def n_table(n: int) -> list[TableRow]:
    """What N does to each contrast the claims draw."""
    rows: list[TableRow] = [
        {
            "claim": claim,
            "paper's contrast (N = 16)": round(factor, 2),
            "N needed": math.ceil(factor),
            "N here": n,
            "here": "cannot show it (cannot tell)" if n < factor else "can show it (judged)",
            "the paper": what,
        }
        for claim, (factor, what) in CONTRASTS.items()
    ]
    return [
        *rows,
        {
            "claim": "fig4-scaleout-*, fig5-*, fig7-* (over Bare)",
            "paper's contrast (N = 16)": None,
            "N needed": 1,
            "N here": n,
            "here": "judged: Bare runs the same N fio",
            "the paper": f"each configuration against Bare at N = {SEED_N}; at N = {n} fewer requests are in "
            "flight on both sides, so the device is further from its limit than the paper's",
        },
    ]


def measure(
    best: dict[tuple[str, str], tuple[float, list[float]]], n: int, plan: Passthrough
) -> dict[str, Measured]:
    """Each configuration's highest IOPS over Bare's, reads and writes (Figs. 4, 5, 7, 8), and Fig. 8's
    iothread against 1fio/vm x N; each contrast N cannot show says so, and fig5 what it measured."""
    out: dict[str, Measured] = {}
    for key, ids in CLAIM_OF.items():
        base = BARE_DEVICE if key == "passthrough" and plan.bus == "vfio" else "bare"
        for rw, claim in zip(("randread", "randwrite"), ids, strict=True):
            ratio = _ratio(best, TARGET_OF[key], base, rw)
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
    for claim in ("fig5-passthrough-read", "fig5-passthrough-write"):
        if claim in out:
            out[claim] = replace(out[claim], untested=plan.untested())
    for claim, m in list(out.items()):
        why = contrast_why(claim, n)
        if why is not None:
            out[claim] = replace(m, cannot_tell=why)
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


VARIANT = {  # what each target is beside the paper's configuration of the same key
    "Nfio-1vm-passthrough": "the paper's Path Through where VFIO assigns the device; else a raw block device "
    "over virtio-blk (fig5's claims say which)",
    "Nfio-1vm-iothread": "iothread alone, the baseline's one queue: the paper's 342k read / 89k write (Fig. 8)",
    IOTHREAD_MQ: "iothread + one queue per vCPU (§4.3's multi-queue reading); the paper shows no figure for it",
}


def table(best: dict[tuple[str, str], tuple[float, list[float]]], n: int) -> list[TableRow]:
    """The page's table: each configuration's IOPS and its ratio over Bare beside the paper's."""
    rows = []
    for name, key, _ in CONFIGS:
        c = SEED_BY_KEY[key]
        row: TableRow = {"configuration": c.term, "target": name, "N": n, "paper's N": SEED_N}
        for rw, paper in (("randread", c.read_ratio), ("randwrite", c.write_ratio)):
            mine = best.get((name, rw))
            base = (
                best.get((BARE_DEVICE, rw)) if key == "passthrough" and best.get((BARE_DEVICE, rw)) else None
            )
            base = base or best.get(("bare", rw))
            short = rw[4:]
            row[f"{short} IOPS"] = round(mine[0]) if mine else None
            row[f"{short} / Bare"] = round(mine[0] / base[0], 3) if mine and base and base[0] else None
            mq = name == IOTHREAD_MQ
            row[f"paper {short} / Bare"] = None if paper is None or mq else round(paper, 3)
        row["what it is"] = VARIANT.get(name, "")
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


def fig6_figures(sweep: list[SweepPoint], bare: dict[str, float]) -> list[Figure]:
    """Fig. 6 drawn from the stored sweep: device busy % (left) and the fio processes' %usr/%sys under reads
    (right) against the offered load, as a fraction of Bare's maximum for the same I/O (the paper's x axis in
    its own units: 600k offered reads are 1.37 of its 438k)."""
    busy: list[Series] = []
    cpu: list[Series] = []
    for rw, word in (("randread", "reads"), ("randwrite", "writes")):
        top = bare.get(rw) or 0.0
        points = _by_offered(sweep, rw)
        if not top or not points:
            continue
        claim = "fig6-read-busy-at-limit" if rw == "randread" else "fig6-write-busy-always"
        busy.append(
            Series(
                f"{word}: device busy",
                tuple((o / top, p.metric("dev_busy_pct")) for o, p in points),
                claim=claim,
            )
        )
        if rw == "randread":
            cpu.append(Series("reads: fio %usr", tuple((o / top, p.fio_usr_pct or 0.0) for o, p in points)))
            cpu.append(
                Series(
                    "reads: fio %sys",
                    tuple((o / top, p.fio_sys_pct or 0.0) for o, p in points),
                    claim="fig6-read-sys-over-usr",
                )
            )
    writes = [p[0] for s in busy if s.name.startswith("writes") for p in s.points]
    writes_full = (  # the paper: the device 100 % busy under writes at every offered load
        (Series("paper: writes 100 % busy", tuple((x, 100.0) for x in writes), kind="paper"),)
        if writes
        else ()
    )
    x = "offered IOPS / Bare's maximum IOPS of the same I/O (4 KiB random)"
    source = "Fig. 6 (Bare 環境での性能ネック解析) and §4.1 (入力負荷が 600kIOPS 以上でデバイスビジー率が 100%; %usr よりも %sys が高くなる)"
    figs = []
    if busy:
        figs.append(
            Figure(
                id="fig6-busy",
                title="Fig. 6, left: Bare, device busy % against the offered load",
                source=source,
                x=x,
                y="device busy (%)",
                series=(*busy, *writes_full),
                marks=(Mark("x", 600 / 438, "paper: reads 100 % from 600k"),),
            )
        )
    if cpu:
        figs.append(
            Figure(
                id="fig6-cpu",
                title="Fig. 6, right: Bare, random reads, the fio processes' CPU against the offered load",
                source=source,
                x=x,
                y="fio CPU (% of one core, summed)",
                series=tuple(cpu),
                marks=(Mark("x", 600 / 438, "paper: %sys > %usr from 600k"),),
            )
        )
    return figs
