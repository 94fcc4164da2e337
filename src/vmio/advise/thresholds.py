"""Every threshold and reference figure the guidelines use, each with where it comes from.

The configuration guideline (Fig. 9) and the tuning guideline (Fig. 10) of seed 000 (Mizuno and Imada,
Hitachi: "I/O performance evaluation in the virtual environment and optimization method suggestion")
are decision procedures; the numbers they compare against live here and nowhere else, so a reviewer can
check each one against its source.
"""

from __future__ import annotations

from dataclasses import dataclass

SEED_SOURCE = "seed 000 (NVMe SSD, 4 KiB random, O_DIRECT)"


@dataclass(frozen=True)
class Threshold:
    """A number a decision compares against, and why it has that value."""

    value: float
    unit: str
    source: str


DEVICE_BUSY_HIGH = Threshold(
    90.0,
    "% busy",
    "seed 000 Fig. 6: the bare-host device reached 100 % busy at its neck; valid only for devices that "
    "serve one request at a time (rotational disks). DESIGN.md: %util misleads on NVMe and RAID",
)
DEVICE_CAPACITY_FRACTION = Threshold(
    0.85,
    "of measured capacity",
    "vmio: seed 000's bare host reached 438k of the SSD's rated 450k read IOPS (0.97) at its neck; "
    "0.85 leaves room for sampling spread. DESIGN.md: judge parallel devices by IOPS against capacity",
)
PARALLEL_QUEUE_SATURATED = Threshold(
    32.0,
    "requests in flight (average queue)",
    "vmio: NVMe SSDs such as the one in seed 000 (ref. [9]) are rated at deep queues; a device with "
    "fewer requests in flight than this is not yet saturated, whatever its %util says",
)
WRITE_HEAVY_READ_PCT = Threshold(
    50.0,
    "% reads (below is write-heavy)",
    "seed 000 Fig. 10(d): 'update ratio high' vs 'reference ratio high'; vmio splits at half",
)
QEMU_THREAD_BUSY = Threshold(
    90.0,
    "% of one core",
    "vmio: a single-threaded event loop (QEMU main loop, iothread, vCPU) this busy cannot take more "
    "work; seed 000 Sec. 4.1/4.3 attributes the 0.21x of 16 jobs in one VM to virtio-blk processing",
)
HOST_CPU_BUSY = Threshold(
    90.0,
    "% usr+sys of all CPUs",
    "seed 000 Fig. 6: at the neck the host's %sys overtook %usr; vmio calls the host CPU the limit "
    "when usr+sys leave under a tenth of the machine idle",
)
IOTHREAD_VQ_MAPPING_QEMU = (9, 0)
IOTHREAD_VQ_MAPPING_SOURCE = (
    "QEMU 9.0 changelog: virtio-blk 'iothread-vq-mapping' spreads one disk's virtqueues over several "
    "iothreads; Debian 12's QEMU 7.2 does not have it (DESIGN.md)"
)
VQ_MAPPING_MAX_IOTHREADS = 4
VQ_MAPPING_MAX_IOTHREADS_SOURCE = "vmio default: at most 4 iothreads, never more than half the host's CPUs"


@dataclass(frozen=True)
class Ratio:
    """An expected VM/bare IOPS ratio for reads and writes, with what it was measured on."""

    read: float
    write: float
    source: str
    basis: str


# Seed 000's figures (DESIGN.md): bare 438k read / 90k write IOPS on one NVMe SSD.
SEED_BARE_READ_IOPS = 438_000
SEED_BARE_WRITE_IOPS = 90_000
SEED_RATIO_SCALE_OUT = Ratio(0.79, 1.0, SEED_SOURCE, "16 VMs x 1 fio, virtio-blk (Fig. 4)")
SEED_RATIO_ONE_VM = Ratio(0.21, 0.93, SEED_SOURCE, "1 VM x 16 fio, virtio-blk, no iothread (Fig. 4)")
SEED_RATIO_PASSTHROUGH = Ratio(1.0, 1.0, SEED_SOURCE, "1 VM x 16 fio, device passed through (Fig. 5)")
SEED_RATIO_IOTHREAD = Ratio(
    round(342_000 / SEED_BARE_READ_IOPS, 2),
    round(89_000 / SEED_BARE_WRITE_IOPS, 2),
    SEED_SOURCE,
    "1 VM x 16 fio, virtio-blk + 1 iothread: 342k read / 89k write (Fig. 8)",
)
SEED_TWO_SSD_GAIN = Ratio(1.57, 2.75, SEED_SOURCE, "16 VMs x 1 fio over 2 SSDs vs 1 SSD (Fig. 7)")
