"""What one point produced, as the store writes it: the run's record, its per-job results and samples.

The store defines the shapes it keeps; fio's parsed results and the samplers' samples fit them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Protocol

from vmio.store.fields import FioJob, Precondition, Steady, StoredPoint

__all__ = ["FioJob", "JobResult", "OpLat", "Precondition", "RunRecord", "Sample", "Steady"]

OpLat = tuple[str, str, int, int, str] | tuple[str, str, int, int, str, int | None]
Sample = tuple[float, str, str, float]  # (t since the sampler started, source, metric, value)


class JobResult(Protocol):
    """One fio job's figures for one direction (``vmio.fio.output.JobResult`` is one)."""

    @property
    def host(self) -> str: ...
    @property
    def job(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def ddir(self) -> str: ...
    @property
    def iops(self) -> float: ...
    @property
    def bw_bytes(self) -> float: ...
    @property
    def total_ios(self) -> int: ...
    @property
    def runtime_ms(self) -> int: ...
    @property
    def lat_ns(self) -> Mapping[str, float | None]: ...
    @property
    def usr_cpu(self) -> float: ...
    @property
    def sys_cpu(self) -> float: ...
    @property
    def bins(self) -> Mapping[int, int]: ...


@dataclass
class RunRecord(StoredPoint):
    """Everything one point produced, written at once: the stored per-point fields (``StoredPoint``: the
    campaign, point key, target ... status positional, the rest by keyword) and what only a run has."""

    started: float
    ended: float
    _: KW_ONLY
    host: dict[str, object] = field(default_factory=dict)  # the host's facts and what the rig noticed
    job_file: str | None = None
    qemu_argv: list[list[str]] | None = None  # one argv per VM
    log: str | None = None
    results: Sequence[JobResult] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    metrics: dict[tuple[str, str], float] = field(default_factory=dict)
    # host, job, t_ms, ns, ddir and (when fio logged it) the operation's offset
    oplat: Sequence[OpLat] = field(default_factory=list)
    # per-second latency histograms of a timed run: host, job, t_ms (end of the interval), ddir, bins
    hist_log: Sequence[tuple[str, str, int, str, Mapping[int, int]]] = field(default_factory=list)
    # each traced layer's histograms (docs/layers.md): layer, direction, span, sum of latencies (ns), bins
    layer_hists: Sequence[tuple[str, str, str, int, Mapping[int, int]]] = field(default_factory=list)
    # the run's own data, stored with the host facts (host_json) as it always was
    ops_seed: int | None = None  # the campaign seed whose offsets the operations replayed
    samples_t0: float | None = None  # the samples' clock on the wall (Unix seconds at t = 0)
    measured_window: tuple[float, float] | None = None  # the window the means cover, s from samples_t0
    # where the point's time went: [step, start s, end s] from its start (``vmio.campaign.timeline``)
    timeline: list[list[object]] | None = None
    # what ``vmio run`` says about the point beside its figures (not stored: the figures' entries say it too)
    warnings: list[str] = field(default_factory=list)

    def host_json(self) -> dict[str, object]:
        """The host facts with the run's own data, as the store keeps them (``run.host_json``)."""
        window = list(self.measured_window) if self.measured_window is not None else None
        run = {
            "ops_seed": self.ops_seed,
            "samples_t0": self.samples_t0,
            "measured_window": window,
            "timeline": self.timeline,
        }
        return {**self.host, **{k: v for k, v in run.items() if v is not None}}
