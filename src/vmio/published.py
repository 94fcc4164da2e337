"""Figures the papers published, as data: hitachi-nvme-2016's configurations and their IOPS against Bare.

One table, read by ``advise`` (the expected ratio of the configuration Fig. 9 picks) and by the report
(``report.seed000``, the paper's figures beside a campaign's). It sits in the lowest layer so both can.
"""

from __future__ import annotations

from dataclasses import dataclass

SEED_SOURCE = "hitachi-nvme-2016 (NVMe, KVM)"


@dataclass(frozen=True)
class Ratio:
    """An expected VM/bare IOPS ratio for reads and writes, with what it was measured on."""

    read: float
    write: float
    source: str
    basis: str


@dataclass(frozen=True)
class SeedConfig:
    """One of hitachi-nvme-2016's configurations and its IOPS against Bare, as the paper states them (N = 16 fio
    processes, 4 KiB random I/O, one NVMe SSD, KVM). The one table of the paper's ratios: ``advise`` and the
    report (``report.seed000``) both read it."""

    key: str
    term: str  # the paper's name of the configuration
    figure: str  # where the paper shows it
    read_ratio: float | None  # IOPS / Bare IOPS as the paper states or its own figures give
    write_ratio: float | None
    read_iops: float | None = None  # absolute IOPS, where the paper states them
    write_iops: float | None = None
    approx: bool = False  # the paper says "equal to" (同等) rather than a number
    basis: str = ""  # the shape the paper measured, in vmio's words

    def ratio(self) -> Ratio:
        """The ratio as ``advise`` quotes it (two decimals)."""
        return Ratio(
            round(self.read_ratio or 0.0, 2), round(self.write_ratio or 0.0, 2), SEED_SOURCE, self.basis
        )


# hitachi-nvme-2016's (hitachi-nvme-2016's) figures (docs/DESIGN.md): bare 438k read / 90k write IOPS on one NVMe SSD.
SEED_N = 16  # fio processes in every configuration the paper measured
SEED_BARE_READ_IOPS = 438_000
SEED_BARE_WRITE_IOPS = 90_000
SEED_BARE = SeedConfig("bare", "Bare", "Fig. 4", 1.0, 1.0, 438e3, 90e3, basis="16 fio on the host (Fig. 4)")
# The seed's text says "about 1.57x and 2.75x" (689k/438k, 247k/90k): against bare metal on one SSD,
# not against the 16 VMs on one SSD of Fig. 4 (0.79 x 438k), which the text names.
SEED_CONFIGS: tuple[SeedConfig, ...] = (
    SEED_BARE,
    SeedConfig("1fio-per-vm", "1fio/vm x N", "Fig. 4", 0.79, 1.0, basis="16 VMs x 1 fio, virtio-blk (Fig. 4)"),
    SeedConfig("nfio-per-vm", "N fio/vm", "Fig. 4", 0.21, 0.93,
               basis="1 VM x 16 fio, virtio-blk, no iothread (Fig. 4)"),
    SeedConfig("passthrough", "N fio/vm + Path Through", "Fig. 5", 1.0, 1.0, approx=True,
               basis="1 VM x 16 fio, device passed through (Fig. 5)"),
    SeedConfig("iothread", "N fio/vm + iothread", "Fig. 8", 342 / 438, 89 / 90, 342e3, 89e3,
               basis="1 VM x 16 fio, virtio-blk + 1 iothread: 342k read / 89k write (Fig. 8)"),
    SeedConfig("two-devices", "1fio/vm x N, two SSDs", "Fig. 7", 1.57, 2.75, 689e3, 247e3,
               basis="16 VMs x 1 fio with VM disks spread over 2 SSDs (689k read / 247k write) vs bare metal "
               "on 1 SSD (438k / 90k) (Fig. 7)"),
)  # fmt: skip
SEED_BY_KEY = {c.key: c for c in SEED_CONFIGS}
SEED_RATIO_SCALE_OUT = SEED_BY_KEY["1fio-per-vm"].ratio()
SEED_RATIO_ONE_VM = SEED_BY_KEY["nfio-per-vm"].ratio()
SEED_RATIO_PASSTHROUGH = SEED_BY_KEY["passthrough"].ratio()
SEED_RATIO_IOTHREAD = SEED_BY_KEY["iothread"].ratio()
SEED_TWO_SSD_GAIN = SEED_BY_KEY["two-devices"].ratio()
