"""What each ``vmio relocate`` sub-command is asked, as typed requests: every default in one place (the
CLI reads its defaults from here; this module imports nothing heavy, so building the CLI stays quick)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EXTENT = 1 << 20  # the extent size heat, plans and replays work in
COVERAGE = 0.9  # the hot set covers this share of the accesses
TRACE_FORMAT = "auto"
POLICY = "fcfs"  # the replay's scheduler when none is asked
DEPTH = 1  # outstanding requests per VM (per FFSB thread in the calibrated model) when none is asked


@dataclass(frozen=True)
class PlanRequest:
    """What ``vmio relocate analyze`` and ``plan`` share: the extent, the hot set, and where the zone goes."""

    format: str = TRACE_FORMAT
    extent: int = EXTENT
    coverage: float = COVERAGE
    hot_bytes: int | None = None  # a hot budget per image instead of ``coverage``
    zone: str = "auto"
    order: str = "coaccess"


@dataclass(frozen=True)
class EvaluateRequest:
    """What ``vmio relocate evaluate`` was asked: a synthetic workload or trace files, and the replay setup."""

    synthetic: str | None = None
    trace: tuple[Path, ...] = ()
    ffsb_model: str = "calibrated"
    format: str = TRACE_FORMAT
    extent: int = EXTENT
    vms: int = 2
    image_size: int = 100 << 30
    hot: int = 2 << 30
    hot_fraction: float = 0.9
    threads: int = 4
    cold_share: float | None = None
    requests: int = 50_000
    seed: int = 0
    disk: str = "7200"
    policy: str | None = None  # None: POLICY
    depth: int | None = None  # None: DEPTH
    open_loop: bool = False
    zone: str = "auto"
    order: str | None = None
    plot: Path | None = None
    save_plan: Path | None = None


@dataclass(frozen=True)
class ApplyRequest:
    """What ``vmio relocate apply`` was asked: a plan and where to apply it (or a rollback)."""

    plan: Path | None = None
    dm_tables: str | None = None
    pvmove: str | None = None
    to_image: Path | None = None
    source: Path | None = None
    rate: int | None = None
    rollback: bool = False
