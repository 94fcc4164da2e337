"""hitachi-nvme-2016's figures beside a campaign's: each of its configurations against Bare, as the paper states them.

hitachi-nvme-2016 (Mizuno & Imada) ran 4 KiB random reads and writes with O_DIRECT from N = 16 fio processes on one
NVMe SSD under KVM (Fedora 23, Linux 4.2.3), the offered load (the sum over the fio processes) swept:

=====================  =====================================  ===================================
configuration          the paper's words                      figures
=====================  =====================================  ===================================
Bare                   fio on the host (Fig. 4)               ~438k IOPS read, ~90k write
1fio/vm x N            one fio in each of N VMs (Fig. 4)      0.79x Bare read, ~1.0x write
N fio/vm               N fio in one VM, virtio-blk (Fig. 4)   0.21x Bare read, 0.93x write
N fio/vm + Path        the SSD's block device given to the    ~Bare (1.0x) read and write
Through                VM (Fig. 5)
N fio/vm + iothread    virtio-blk's iothread option (Fig. 8)  ~342k read, ~89k write (~1fio/vm x N)
two devices            1fio/vm x N, the VMs' block devices    ~689k read, ~247k write: 1.57x and
                       on two SSDs (Fig. 7)                   2.75x the one-SSD figures (Bare)
=====================  =====================================  ===================================

A campaign's targets are matched to these configurations by their shape (a host target is Bare; a VM target
by its VMs, fio processes per VM, bus, I/O threads and backing paths); several targets may match one (two
QEMU builds of "N fio/vm"). The measured figure of a target is the highest IOPS of its 4 KiB random-read
(random-write) sweep, each offered load's median over repetitions; the ratio is that over Bare's.
"""

from __future__ import annotations

from dataclasses import dataclass

from vmio.published import SEED_BARE, SEED_BY_KEY, SEED_CONFIGS, SeedConfig
from vmio.report.compare_text import columns
from vmio.report.data import CampaignData, Group, iops
from vmio.spec.model import Target
from vmio.targets.traits import traits_of, vm_config

SEED_SETUP = "KVM, Fedora 23 (Linux 4.2.3), NVMe SSD, N = 16 fio"
TCG_NOTE = (
    "Under TCG the guest's CPU is emulated and that emulation, not the disk path, limits every VM: TCG "
    "ratios are not KVM's, and neither confirm nor refute the seed's."
)


# the one table of the paper's ratios, which advise quotes too
BARE = SEED_BARE
CONFIGS = SEED_CONFIGS
BY_KEY = SEED_BY_KEY
DEDICATED_BUSES = ("block", "vfio")


def config_of(spec: Target | None) -> SeedConfig | None:
    """The seed-000 configuration a target's spec (as the campaign stored it) has, if any; a target the
    spec does not name reads as a bare host."""
    if spec is None or traits_of(spec).bare:
        return BARE
    vm = vm_config(spec)
    if vm is None:
        return None
    spec = vm
    vms, jobs = spec.vms, spec.jobs_per_vm
    bus, iothreads = spec.bus, spec.iothreads
    paths = len(set(spec.backing))
    if vms > 1 and jobs == 1 and bus == "virtio-blk" and iothreads == 0:
        return BY_KEY["two-devices" if paths >= 2 else "1fio-per-vm"]
    if vms == 1 and jobs > 1 and paths == 1:
        if bus in DEDICATED_BUSES:
            return BY_KEY["passthrough"]
        if bus == "virtio-blk":
            return BY_KEY["iothread" if iothreads > 0 else "nfio-per-vm"]
    return None


@dataclass(frozen=True)
class Measured:
    iops: float | None
    ratio: float | None  # over Bare's


@dataclass(frozen=True)
class SeedRow:
    config: SeedConfig
    target: str
    setup: str  # accelerator and build: "tcg · qemu 10.0.2 / q35", "bare host"
    fio: int  # fio processes of the target's points
    read: Measured
    write: Measured

    def as_dict(self) -> dict[str, object]:
        c = self.config
        return {
            "configuration": c.term,
            "figure": c.figure,
            "target": self.target,
            "setup": self.setup,
            "fio_processes": self.fio,
            "seed": {
                "read_ratio": c.read_ratio,
                "write_ratio": c.write_ratio,
                "read_iops": c.read_iops,
                "write_iops": c.write_iops,
                "setup": SEED_SETUP,
            },
            "measured": {
                "read_iops": self.read.iops,
                "read_ratio": self.read.ratio,
                "write_iops": self.write.iops,
                "write_ratio": self.write.ratio,
            },
        }


def bare_target(data: CampaignData, baseline: str | None) -> str | None:
    """The host target hitachi-nvme-2016's "Bare" is: the baseline when it is a host target, else the first one."""
    hosts = [t for t in data.target_names() if data.kind(t) == "host"]
    return baseline if baseline in hosts else (hosts[0] if hosts else None)


def rows(data: CampaignData, bare: str | None) -> list[SeedRow]:
    """One row per target matching a seed configuration, Bare first, the paper's order; none without a
    Bare target (``bare``: the host target the ratios are over) or without any VM configuration."""
    if bare is None or config_of(data.targets.get(bare)) is not BARE:
        return []
    matched = [(t, c) for t in data.target_names() if (c := config_of(data.targets.get(t))) and c is not BARE]
    if not matched:
        return []
    base = {d: best_iops(data, bare, d) for d in ("read", "write")}
    order = {c.key: i for i, c in enumerate(CONFIGS)}
    out = [_row(data, bare, BARE, base)]
    for target, config in sorted(matched, key=lambda tc: order[tc[1].key]):
        out.append(_row(data, target, config, base))
    return out


def _row(data: CampaignData, target: str, config: SeedConfig, base: dict[str, float | None]) -> SeedRow:
    measured = {}
    for ddir in ("read", "write"):
        value, over = best_iops(data, target, ddir), base[ddir]
        ratio = value / over if value is not None and over else None
        measured[ddir] = Measured(value, ratio)
    setup, fio = setup_of(data, target), fio_processes(data, target)
    return SeedRow(config, target, setup, fio, measured["read"], measured["write"])


def sweep(data: CampaignData, target: str, ddir: str) -> list[Group]:
    """The target's 4 KiB random-``ddir`` groups without load processes: the seed's sweep."""
    rw = "randread" if ddir == "read" else "randwrite"
    names = {w for w in data.workloads() if _rw(data, w) == rw}
    return [
        g
        for g in data.groups()
        if g.target == target and g.key[1] in names and g.key[2] == 4096 and g.key[4] == 0 and g.rows
    ]


def best_iops(data: CampaignData, target: str, ddir: str) -> float | None:
    """The highest IOPS of the sweep: the median over repetitions at each offered load, the largest."""
    medians = [s.median for g in sweep(data, target, ddir) if (s := g.spread(lambda r: iops(r, ddir)))]
    return max(medians) if medians else None


def _rw(data: CampaignData, workload: str) -> str | None:
    spec = data.workload_specs.get(workload)
    rw = spec.rw if spec is not None else None
    return str(rw) if rw is not None else None


def setup_of(data: CampaignData, target: str) -> str:
    """Accelerator and QEMU build of a target's points (``tcg · qemu 10.0.2 / q35``), "bare host" without
    VMs."""
    build = data.builds().get(target)
    accel = "/".join(sorted({str(r.accel) for r in data.done() if r.target == target and r.accel}))
    if build is None:
        return "bare host"
    return f"{accel or '?'} · {build}"


def fio_processes(data: CampaignData, target: str) -> int:
    spec = vm_config(data.targets.get(target))
    if spec is not None:
        return spec.vms * spec.jobs_per_vm
    jobs = {w.numjobs for w in data.workload_specs.values() if w.rw in ("randread", "randwrite")}
    return max(jobs) if jobs else 1


def accelerators(found: list[SeedRow]) -> set[str]:
    return {r.setup.split(" · ")[0] for r in found if " · " in r.setup}


def format_text(found: list[SeedRow]) -> str:
    """The terminal version: each configuration's ratio to Bare, the seed's (KVM) and the measured one."""
    if not found:
        return ""
    head = (
        "hitachi-nvme-2016 configuration",
        "target",
        "accelerator · build",
        "fio",
        "read: paper",
        "here",
        "write: paper",
        "here",
    )
    lines = [head]
    for r in found:
        c = r.config
        lines.append((c.term, r.target, r.setup, str(r.fio), ratio_text(c.read_ratio, c.approx),
                      measured_text(r.read), ratio_text(c.write_ratio, c.approx), measured_text(r.write)))  # fmt: skip
    body = columns(lines)
    note = f" {TCG_NOTE}" if "tcg" in accelerators(found) else ""
    return (
        f"hitachi-nvme-2016 ({SEED_SETUP}) beside this campaign: IOPS / Bare IOPS at the top of each sweep.{note}\n"
        + body
    )


def ratio_text(ratio: float | None, approx: bool = False) -> str:
    if ratio is None:
        return "-"
    return f"~{ratio:.1f}" if approx else f"{ratio:.2f}"


def measured_text(m: Measured) -> str:
    if m.iops is None:
        return "-"
    return f"{ratio_text(m.ratio)} ({m.iops:.0f})"
