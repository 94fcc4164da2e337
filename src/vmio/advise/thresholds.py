"""Every threshold and reference figure the guidelines use, each with where it comes from.

The configuration guideline (Fig. 9) and the tuning guideline (Fig. 10) of hitachi-nvme-2016 (Mizuno and Imada,
Hitachi: "I/O performance evaluation in the virtual environment and optimization method suggestion")
are decision procedures; the numbers they compare against live here and nowhere else (the paper's own
figures, in ``vmio.published``), so a reviewer can check each one against its source.
"""

from __future__ import annotations

from dataclasses import dataclass

from vmio.store.rows import OTHER_WORK_LOAD


@dataclass(frozen=True)
class Threshold:
    """A number a decision compares against, and why it has that value."""

    value: float
    unit: str
    source: str


DEVICE_BUSY_HIGH = Threshold(
    90.0,
    "% busy",
    "hitachi-nvme-2016 Fig. 6: the bare-host device reached 100 % busy at its neck; valid only for devices that "
    "serve one request at a time (rotational disks). docs/DESIGN.md: %util misleads on NVMe and RAID",
)
DEVICE_CAPACITY_FRACTION = Threshold(
    0.85,
    "of measured capacity",
    "vmio: hitachi-nvme-2016's bare host reached 438k of the SSD's rated 450k read IOPS (0.97) at its neck; "
    "0.85 leaves room for sampling spread. docs/DESIGN.md: judge parallel devices by IOPS against capacity",
)
THREAD_SATURATED_PCT = Threshold(
    80.0,
    "% of one core (one thread)",
    "vmio: a thread runs on one core at a time, so one near a whole core has no time left to serve more "
    "I/O; the point's window holds fio's ramp and the host's other work, so 80 leaves room for that. The paper's Fig. 10 (f) assumes the iothread is the neck "
    "without measuring it",
)
OTHER_WORK_CORES = Threshold(
    OTHER_WORK_LOAD,
    "cores busy beyond the run's own processes",
    "vmio: host-wide %usr/%sys count every process; when other work keeps more than half a core busy "
    "beside fio (or QEMU), the host-wide split says more about that work than about the I/O",
)
KERNEL_CPU_HIGH = Threshold(
    50.0,
    "% %sys: of one core for fio's own (its jobs together), of the host's CPUs for host-wide figures",
    "hitachi-nvme-2016 Fig. 10 (g): 'if %sys is high' (%sys が高ければ) I/O is at its limit, and at the device neck "
    "%sys rose above %usr; the paper states no level. vmio: the kernel path holds I/O back only when the "
    "I/O spends at least half a core (or half the host) in it; below that the processes have time to issue "
    "more (a bare randwrite at 9.6 % sys is far from it), so %sys >= %usr alone names no limit",
)
WRITE_HEAVY_READ_PCT = Threshold(
    50.0,
    "% reads (below is write-heavy)",
    "hitachi-nvme-2016 Fig. 10(d): 'update ratio high' vs 'reference ratio high'; vmio splits at half",
)
IOTHREAD_VQ_MAPPING_QEMU = (9, 0)
IOTHREAD_VQ_MAPPING_SOURCE = (
    "QEMU 9.0 changelog: virtio-blk 'iothread-vq-mapping' spreads one disk's virtqueues over several "
    "iothreads; Debian 12's QEMU 7.2 does not have it (docs/DESIGN.md)"
)
VQ_MAPPING_MAX_IOTHREADS = 4
VQ_MAPPING_MAX_IOTHREADS_SOURCE = "vmio default: at most 4 iothreads, never more than half the host's CPUs"


@dataclass(frozen=True)
class Deviation:
    """Where vmio's walk of Fig. 10 departs from the figure, because of evidence the seed did not have."""

    node: str
    change: str
    source: str


DEVIATIONS = (
    Deviation(
        "e",
        "'device busy' means IOPS at the device's measured capacity (vmio calibrate) or one the user declares, "
        "not %util near 100 %; without either the capacity is unknown and the device is never judged at "
        "its limit (a point is never judged against itself); %util and the queue are cited, not judged",
        "docs/DESIGN.md: %util counts time with at least one request in flight, so a device serving requests in "
        "parallel (NVMe, RAID) shows 100 % long before its ceiling",
    ),
    Deviation(
        "g",
        "a device already at its calibrated capacity is the limit even when %usr leads: more VMs cannot "
        "raise I/O there",
        "vmio calibrate: the device's measured capacity bounds what any number of VMs can get from it",
    ),
    Deviation(
        "f",
        "with an iothread in use, QEMU >= 9.0 on virtio-blk can still spread one disk's queues over several "
        "iothreads (iothread-vq-mapping), so that is the step instead of the limit",
        IOTHREAD_VQ_MAPPING_SOURCE,
    ),
    Deviation(
        "f",
        "with vfio passthrough QEMU is not in the I/O path, so (f) is not asked and the walk goes on to (d)",
        "QEMU docs (vfio-pci): the guest drives the device's queues itself",
    ),
    Deviation(
        "f",
        "with an iothread in use, the iothread is named the limit only when its CPU says it is saturated; "
        "otherwise the limit is what the measured figures show saturated (vCPUs, main loop, device), and "
        "at_limit keeps the figure's meaning",
        "the paper's Fig. 10 (f) reads only whether the option is set; vmio measures QEMU's threads",
    ),
    Deviation(
        "g",
        "%usr and %sys are those of the processes that did the I/O (fio's own), where stored; host-wide "
        "figures only otherwise, with a warning when other work on the host makes them unreliable",
        "vmio: host-wide %usr/%sys count every process on a shared host",
    ),
    Deviation(
        "g",
        "%sys is high only at KERNEL_CPU_HIGH (50 %); %sys >= %usr below it is no limit and the walk judges "
        "the device (e) instead",
        "hitachi-nvme-2016 Fig. 10 (g) says 'if %sys is high' without a level; see KERNEL_CPU_HIGH",
    ),
    Deviation(
        "cpu",
        "under TCG the guest's instruction emulation runs in QEMU's user-mode threads and is counted in the "
        "host's %usr, so %usr above %sys says little about the guest application",
        "QEMU docs (TCG): guest code is translated and run by QEMU's vCPU threads in user mode",
    ),
)
