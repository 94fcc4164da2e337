"""A campaign's stored points, grouped over repetitions, with what each figure's label needs."""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from vmio.spec.model import Target, Workload
from vmio.spec.sla import Sla
from vmio.stats import histogram
from vmio.stats.histogram import Histogram
from vmio.stats.spread import Spread
from vmio.store import Store
from vmio.store.packed import SampleRow
from vmio.store.rows import PointRow, build_label, point_rows, summary_rows
from vmio.targets.traits import vm_config

DDIRS = ("read", "write")
Offered = int | None  # None = "max" (unthrottled)
GroupKey = tuple[str, str, int, Offered, int]  # target, workload, bs, offered, load processes
Row = PointRow


def offered_of(row: Row) -> Offered:
    return row.offered_iops


def offered_order(offered: Offered) -> tuple[int, int]:
    """Numbers ascending, then "max"."""
    return (1, 0) if offered is None else (0, offered)


def offered_label(offered: Offered) -> str:
    return "max" if offered is None else str(offered)


def key_of(row: Row) -> GroupKey:
    return (row.target, row.workload, row.bs, row.offered_iops, row.load_processes)


def iops(row: Row, ddir: str) -> float:
    return float(row.iops(ddir) or 0.0)


def latency(row: Row, ddir: str, key: str) -> float | None:
    lat = row.lat_ns(ddir)
    value = lat.get(key) if lat is not None else None
    return float(value) if value is not None else None


def along(value: Callable[[Row, str], float | None], ddir: str) -> Callable[[Row], float | None]:
    """``value`` for one direction."""
    return lambda row: value(row, ddir)


@dataclass
class Group:
    """The done repetitions of one point; ``failed`` counts the others."""

    key: GroupKey
    rows: list[Row] = field(default_factory=list)
    failed: int = 0

    @property
    def target(self) -> str:
        return self.key[0]

    @property
    def offered(self) -> Offered:
        return self.key[3]

    def spread(self, value: Callable[[Row], float | None]) -> Spread | None:
        return Spread.of([value(r) for r in self.rows])

    def values(self, value: Callable[[Row], float | None]) -> list[float]:
        return [v for v in (value(r) for r in self.rows) if v is not None]


@dataclass
class CampaignData:
    name: str
    rows: list[Row]
    runs: dict[str, sqlite3.Row]  # by point key
    targets: dict[str, Target]  # each target's spec, by name
    workload_order: list[str] = field(default_factory=list)
    samples: dict[str, list[SampleRow]] = field(default_factory=dict)  # by point key, ordered by t
    oplat: dict[str, list[sqlite3.Row]] = field(default_factory=dict)  # by point key, in issue order
    # by point key and direction: the measured jobs' latency histograms merged (every VM, host and job)
    hists: dict[str, dict[str, Histogram]] = field(default_factory=dict)
    # by point key: (t ms, ddir, bins merged over the jobs) per logged interval, by time
    hist_log: dict[str, list[tuple[int, str, Histogram]]] = field(default_factory=dict)
    sla: Sla | None = None  # the spec's [campaign] sla
    workload_specs: dict[str, Workload] = field(default_factory=dict)  # each workload's spec, by name
    stops: list[dict[str, object]] = field(default_factory=list)  # where sweeps stopped at stop_at, and why
    # repeat-until-stable, by point key without the repetition: (repetitions taken, settled, IOPS spread)
    settles: dict[str, tuple[int, bool, float | None]] = field(default_factory=dict)
    _builds: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)
    # read once from the rows (each group's table line asks them: 100k points, 200 groups)
    _done: list[Row] | None = field(default=None, init=False, repr=False, compare=False)
    _ddirs: dict[str, list[str]] | None = field(default=None, init=False, repr=False, compare=False)
    _tcg: set[str] | None = field(default=None, init=False, repr=False, compare=False)

    def done(self) -> list[Row]:
        if self._done is None:
            self._done = [r for r in self.rows if r.done]
        return list(self._done)

    def groups(self) -> list[Group]:
        return group(self.rows, self.target_names(), self.workloads())

    def target_names(self) -> list[str]:
        seen = list(self.targets)
        return seen + sorted({r.target for r in self.rows} - set(seen))

    def workloads(self) -> list[str]:
        return list(dict.fromkeys([*self.workload_order, *(r.workload for r in self.rows)]))

    def ddirs(self, workload: str) -> list[str]:
        """The directions a workload moved data in."""
        if self._ddirs is None:
            moved: dict[str, set[str]] = {}
            for r in self.done():
                moved.setdefault(r.workload, set()).update(d for d in DDIRS if r.ops(d))
            self._ddirs = {w: [d for d in DDIRS if d in found] for w, found in moved.items()}
        return list(self._ddirs.get(workload, []))

    def builds(self) -> dict[str, str]:
        """Each VM target's QEMU build (``qemu 10.0.2 / q35``) from its done points; a target whose points
        ran on more than one build lists them joined with " + ". Read once: every target's label asks."""
        if self._builds is not None:
            return self._builds
        found: dict[str, list[str]] = {}
        for r in self.done():
            label = build_label(r.qemu_version, r.qemu_machine)
            if label and label not in found.setdefault(r.target, []):
                found[r.target].append(label)
        self._builds = {t: " + ".join(labels) for t, labels in found.items() if labels}
        return self._builds

    def several_builds(self) -> bool:
        """Did the campaign's VMs run on more than one QEMU build (version or machine type)?"""
        return len(set(self.builds().values())) > 1

    def target_label(self, target: str) -> str:
        """The target's name, with its build when the campaign ran several builds (so two targets that
        differ only in build are told apart wherever a target is named)."""
        build = self.builds().get(target) if self.several_builds() else None
        label = f"{target} ({build})" if build else target
        if self._tcg is None:
            self._tcg = {r.target for r in self.done() if r.accel == "tcg"}
        if target in self._tcg:
            label += f" {TCG_MARK}"  # its ratio to bare metal measures an emulated CPU, not KVM
        return label

    def facet(self, target: str) -> tuple[int, int] | None:
        """(vCPUs, VMs) for a VM target; None for the others."""
        spec = vm_config(self.targets.get(target))
        if spec is None:
            return None
        return spec.vcpus, spec.vms

    def kind(self, target: str) -> str:
        """The target's kind (``host``, ``qemu``, ...); ``host`` for a target the spec no longer names."""
        spec = self.targets.get(target)
        return spec.kind if spec is not None else "host"


TCG_MARK = "[TCG]"
TCG_NOTE = (
    f"{TCG_MARK}: the VMs ran under TCG (QEMU emulating the CPU, no KVM): their ratios to bare metal "
    "measure the emulator, not a KVM host\n"
)


def tcg_note(labels: Iterable[str]) -> str:
    """The note under a table whose targets carry the TCG mark (empty when none does)."""
    return TCG_NOTE if any(label.endswith(TCG_MARK) for label in labels) else ""


def load(store: Store, campaign: str) -> CampaignData:
    """A campaign's points with their detail: samples, operations, merged histograms and their per-second
    logs, and each point's ``run`` row (what a report draws)."""
    spec = store.spec(campaign)
    runs = {r["point_key"]: r for r in store.runs(campaign)}
    every_samples, every_oplat = store.campaign_samples(campaign), store.campaign_oplat(campaign)
    results, bins, every_log = (
        store.campaign_results(campaign),
        store.campaign_histograms(campaign),
        store.campaign_hist_log(campaign),
    )
    samples = {k: every_samples.get(r["id"], []) for k, r in runs.items()}
    oplat = {k: ops for k, r in runs.items() if (ops := every_oplat.get(r["id"]))}
    hists = {k: _merged(results.get(r["id"], []), bins) for k, r in runs.items()}
    logs = {k: _per_second(log) for k, r in runs.items() if (log := every_log.get(r["id"]))}
    specs = {w.name: w for w in spec.workloads}
    rows, workloads = swept_labels(point_rows(store, campaign), [w.name for w in spec.workloads], specs)
    targets, stops = {t.name: t for t in spec.targets}, store.stops(campaign)
    data = CampaignData(
        campaign, rows, runs, targets, workloads, samples, oplat, hists, logs, spec.sla, specs, stops
    )
    data.settles = store.settles(campaign)
    return data


def load_points(store: Store, campaign: str) -> CampaignData:
    """A campaign's points without their detail (no samples, operations, histograms or run rows) nor their
    device, CPU and QEMU-process figures (``rows.summary_rows``): all that ``compare`` reads, so 100k points are
    read from their stored summaries alone and the big per-point detail tables are neither read nor checked."""
    spec = store.spec(campaign)
    specs = {w.name: w for w in spec.workloads}
    rows, workloads = swept_labels(summary_rows(store, campaign), [w.name for w in spec.workloads], specs)
    targets, stops = {t.name: t for t in spec.targets}, store.stops(campaign)
    return CampaignData(
        campaign, rows, {}, targets, workloads, sla=spec.sla, workload_specs=specs, stops=stops
    )


def swept_labels(
    rows: list[PointRow], order: list[str], specs: dict[str, Workload]
) -> tuple[list[PointRow], list[str]]:
    """Points of a queue-depth or job sweep are told apart as workloads of their own (``rr qd=8``): each
    such row comes back with that label as its ``workload``, which takes the workload's spec (at the swept
    queue depth and job count) and its place in ``order`` (returned too). Rows of campaigns without sweeps
    stay as they are."""
    labels: dict[str, list[str]] = {}
    out = []
    for row in rows:
        if "qd=" not in row.point and "jobs=" not in row.point:  # no sweep (most points): no search
            out.append(row)
            continue
        middle = row.point.partition("/bs=")[2].partition("/offered=")[0]
        swept = re.findall(r"/((?:qd|jobs)=\d+)", middle)
        if not swept:
            out.append(row)
            continue
        base = row.workload
        label = f"{base} {' '.join(swept)}"
        if base in specs and label not in specs:
            specs[label] = dataclasses.replace(
                specs[base],
                iodepth=row.iodepth or specs[base].iodepth,
                numjobs=row.numjobs or specs[base].numjobs,
            )
        if label not in labels.setdefault(base, []):
            labels[base].append(label)
        out.append(dataclasses.replace(row, workload=label))
    return out, [name for w in order for name in labels.get(w, [w])]


def _merged(every: list[sqlite3.Row], bins: dict[int, Histogram]) -> dict[str, Histogram]:
    results = [r for r in every if r["role"] == "measure"]
    out = {}
    for ddir in DDIRS:
        merged = histogram.merge(bins.get(r["id"], {}) for r in results if r["ddir"] == ddir)
        if merged:
            out[ddir] = merged
    return out


def _per_second(log: list[tuple[str, str, int, str, Histogram]]) -> list[tuple[int, str, Histogram]]:
    """Each job's intervals merged with the other jobs' of the same second (jobs log a few ms apart)."""
    by_second: dict[tuple[int, str], Histogram] = {}
    for _, _, t_ms, ddir, bins in log:
        into = by_second.setdefault((round(t_ms / 1000) * 1000, ddir), {})  # summed in place, not copied
        for bucket, count in bins.items():
            into[bucket] = into.get(bucket, 0) + count
    return [(t, d, b) for (t, d), b in sorted(by_second.items())]


def group(
    rows: Iterable[Row], target_order: list[str] | None = None, workload_order: list[str] | None = None
) -> list[Group]:
    """Groups in a stable order: target (spec order), workload, bs, load processes, offered load."""
    groups: dict[GroupKey, Group] = {}
    for row in rows:
        g = groups.setdefault(key_of(row), Group(key_of(row)))
        if row.done:
            g.rows.append(row)
        else:
            g.failed += 1
    targets, workloads = target_order or [], workload_order or []

    def sort_key(g: Group) -> tuple[Any, ...]:
        t, w, bs, offered, load = g.key
        return (_rank(targets, t), t, _rank(workloads, w), w, bs, load, offered_order(offered))

    return sorted(groups.values(), key=sort_key)


def _rank(order: list[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def labels(data: CampaignData, targets: Iterable[str] | None = None) -> str:
    """What every figure states: accelerator per target, tool versions, kernel, repetitions."""
    wanted = set(targets) if targets is not None else None
    names = [t for t in data.target_names() if wanted is None or t in wanted]
    rows = [r for r in data.done() if r.target in names]
    accel = ", ".join(f"{t}={_accel(rows, t)}" for t in names)
    parts = [f"accel: {accel}"]
    if data.several_builds():
        builds = data.builds()
        parts.append("builds: " + ", ".join(f"{t}={builds[t]}" for t in names if t in builds))
    parts += sorted({r.fio_version for r in rows if r.fio_version})
    parts += [f"QEMU {v}" for v in sorted({r.qemu_version for r in rows if r.qemu_version})]
    kernels = sorted({str(r.host_facts.get("kernel")) for r in rows if r.host_facts.get("kernel")})
    parts += [f"kernel {k}" for k in kernels]
    parts.append(repetitions_label(group(rows)))
    return " · ".join(parts)


def _accel(rows: list[Row], target: str) -> str:
    found = sorted({r.accel or "host" for r in rows if r.target == target})
    return "/".join(found) or "-"


def repetitions_label(groups: list[Group]) -> str:
    counts = sorted({len(g.rows) for g in groups if g.rows})
    if not counts:
        return "no repetitions done"
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    if counts[-1] == 1:
        return "1 repetition (no spread)"
    return f"median of {n} repetitions, bars/bands min-max"


Family = tuple[str, int, int]  # workload, bs, load processes


def families(data: CampaignData) -> dict[Family, dict[str, list[Group]]]:
    """Groups with a done repetition by (workload, bs, load processes), then by target, offered loads in order."""
    out: dict[Family, dict[str, list[Group]]] = {}
    for g in (g for g in data.groups() if g.rows):
        t, w, bs, _, load = g.key
        out.setdefault((w, bs, load), {}).setdefault(t, []).append(g)
    workloads = data.workloads()
    return {f: out[f] for f in sorted(out, key=lambda f: (_rank(workloads, f[0]), f[1], f[2]))}


def offered_axis(groups: Iterable[Group]) -> list[Offered]:
    """The offered loads of a family, in plotting order."""
    return sorted({g.offered for g in groups}, key=offered_order)
