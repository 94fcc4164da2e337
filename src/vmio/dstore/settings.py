"""What ``vmio dstore up``, ``profile`` and ``model`` are asked, with every default in one place (the CLI
reads its defaults from here): bitisle-dstore-2014's mix and depth, its block sizes, the durations."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vmio.errors import InputError

if TYPE_CHECKING:
    from vmio.dstore.cluster import Shaping

# bitisle-dstore-2014's block sizes, mix (30 % reads) and depth (50 outstanding I/Os); apart from
# vmio.dstore.profile and .rbdfio (which use them) so that `vmio dstore --help` shows them without fio or Ceph
DEFAULT_BS = (4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20)
RWMIXREAD = 30
IODEPTH = 50
FAIL_OSD_BS = 4096  # the one block size of a --fail-osd time series
PROFILE_RUNTIME_S = 10.0  # per block size
AT_S = 10.0  # a --fail-osd run stops the OSD this long after its start
BACK_AT_S = 40.0  # and starts it again at this time
WRITE_PATHS = ("primary", "fanout")  # how the model sends a write to its replicas (vmio.dstore.model)
AFTER_BACK_S = 20.0  # a --fail-osd run goes on this long after the OSD is started again


@dataclass(frozen=True)
class Criteria:
    """Service criteria of bitisle-dstore-2014 (all configurable)."""

    ideal_ms: float = 20.0
    acceptable_ms: float = 100.0
    min_iops_host: float = 500.0
    min_iops_cluster: float = 4000.0
    spike_ms: float = 100.0

    def __post_init__(self) -> None:
        if not 0 < self.ideal_ms <= self.acceptable_ms:
            raise InputError(
                f"criteria: ideal {self.ideal_ms!r} ms must be > 0 and ≤ acceptable {self.acceptable_ms!r} ms"
            )
        if self.min_iops_host < 0 or self.min_iops_cluster < 0:
            raise InputError(
                f"criteria: IOPS minimums {self.min_iops_host!r}, {self.min_iops_cluster!r} "
                "must not be negative"
            )
        if not self.spike_ms > 0:
            raise InputError(f"criteria: spike limit {self.spike_ms!r} ms must be > 0")


@dataclass(frozen=True)
class UpSettings:
    """``vmio dstore up``: the cluster's OSDs, the time allowed for every PG to be active+clean, and the
    network its daemons and client share: ``loopback`` (127.0.0.1) or ``netns`` (a namespace each, joined
    through a bridge by links shaped to ``rate`` bit/s, with ``delay_ms`` where the kernel has netem)."""

    osds: int = 3
    deadline_s: float = 180.0
    network: str = "loopback"
    rate: int = 10_000_000_000  # bit/s: bitisle-dstore-2014's 10 GbE (vmio.system.netns.DEFAULT_RATE)
    delay_ms: float | None = None

    def shaping(self) -> Shaping | None:
        from vmio.dstore.cluster import Shaping  # not for --help: settings stay free of Ceph's modules

        return Shaping(self.rate, self.delay_ms) if self.network == "netns" else None


@dataclass(frozen=True)
class ProfileSettings:
    """``vmio dstore profile``: the profile's shape, its criteria, what to run beside it, where to store it.

    ``bs`` and ``runtime_s`` left None take the profile's defaults (bitisle-dstore-2014's 4K-1M, 10 s each)
    or, with ``fail_osd``, one 4K time series running until ``back_at_s`` + 20 s."""

    bs: tuple[int, ...] | None = None
    runtime_s: float | None = None
    ramp_s: float = 1.0
    iodepth: int = IODEPTH
    rwmixread: int = RWMIXREAD
    criteria: Criteria = field(default_factory=Criteria)
    compare: str | None = None  # replicas | striping
    baseline: str | None = None  # replicas=N | file:PATH
    from_guest: bool = False
    boot_timeout_s: float = 180.0  # for --from-guest's VM
    fail_osd: int | None = None
    at_s: float | None = None  # with fail_osd: when to stop it (None: 10 s)
    back_at_s: float | None = None  # with fail_osd: when to start it again (None: 40 s)
    destroy_data: tuple[str, ...] = ()  # rbd:POOL/IMAGE the user allows to be overwritten
    plot_dir: Path | None = None
    name: str | None = None  # also store the profile as this campaign

    def bs_list(self) -> list[int]:
        if self.bs is not None:
            return list(self.bs)
        return [FAIL_OSD_BS] if self.fail_osd is not None else list(DEFAULT_BS)

    def outage_times(self) -> tuple[float, float]:
        """When a --fail-osd run stops the OSD and starts it again."""
        return (
            AT_S if self.at_s is None else self.at_s,
            BACK_AT_S if self.back_at_s is None else self.back_at_s,
        )

    def runtime(self) -> float:
        if self.runtime_s is not None:
            return self.runtime_s
        return self.outage_times()[1] + AFTER_BACK_S if self.fail_osd is not None else PROFILE_RUNTIME_S


@dataclass(frozen=True)
class ModelSettings:
    """``vmio dstore model``: the profile to fit (a JSON file or a stored campaign), the measured (base)
    configuration, and what to change in it. Base values left None come from the profile fitted (its pool
    size, its OSDs), else bitisle-dstore-2014's 3-way mirror on 3 devices; sizes and durations are text
    as the user gave them."""

    calibrate: str | None = None  # a profile JSON from `dstore profile --json`, or a stored campaign
    db: str | None = None  # the store of a campaign to calibrate on
    target: str | None = None  # the campaign's target to fit (None: every rbd target)
    fit_bs: tuple[int, ...] | None = None  # fit at these block sizes only
    bs: tuple[int, ...] | None = None  # predict at these (None: DEFAULT_BS and the profile's own)
    base_replicas: int | None = None
    devices: int | None = None
    hosts: int | None = None  # None: one per device
    base_network: str = "loopback"
    rtt: str = "50us"
    base_write_path: str = "primary"
    dev_op: str = "0.2ms"  # device service time per op (without a profile to fit)
    dev_bw: str = "500M"  # device bandwidth, bytes/s (without a profile to fit)
    replicas: int | None = None  # what if: these are the changes asked
    stripe: int | None = None
    network: str | None = None
    write_path: str | None = None
    cache_share: float | None = None
    iodepth: int | None = None  # None: the profile's, else ProfileSettings.iodepth

    REPLICAS = 3  # bitisle-dstore-2014's 3-way mirror, when no profile says
    DEVICES = 3

    def changes(self) -> dict[str, object]:
        """The what-if changes asked, by name."""
        names = ("replicas", "stripe", "network", "write_path", "cache_share", "iodepth")
        return {k: getattr(self, k) for k in names if getattr(self, k) is not None}
