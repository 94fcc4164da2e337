"""A campaign's stored points, grouped over repetitions, with what each figure's label needs."""

from __future__ import annotations

import json
import re
import sqlite3
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from vmio.spec.sla import Sla, parse_stored_sla
from vmio.stats import histogram
from vmio.stats.histogram import Histogram
from vmio.stats.spread import Spread
from vmio.store import Store
from vmio.store.rows import build_label, point_rows

DDIRS = ("read", "write")
Offered = int | None  # None = "max" (unthrottled)
GroupKey = tuple[str, str, int, Offered, int]  # target, workload, bs, offered, load processes
Row = dict[str, Any]


def offered_of(row: Row) -> Offered:
    value = row["offered_iops"]
    return None if value == "max" else int(value)


def offered_order(offered: Offered) -> tuple[int, int]:
    """Numbers ascending, then "max"."""
    return (1, 0) if offered is None else (0, offered)


def offered_label(offered: Offered) -> str:
    return "max" if offered is None else str(offered)


def key_of(row: Row) -> GroupKey:
    return (row["target"], row["workload"], int(row["bs"]), offered_of(row), int(row["load_processes"]))


def iops(row: Row, ddir: str) -> float:
    return float(row[f"{ddir}_iops"] or 0.0)


def latency(row: Row, ddir: str, key: str) -> float | None:
    lat = row[f"{ddir}_lat_ns"]
    value = lat.get(key) if isinstance(lat, dict) else None
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
    targets: dict[str, dict[str, Any]]  # each target's spec fields (kind, vcpus, vms, ...)
    workload_order: list[str] = field(default_factory=list)
    samples: dict[str, list[sqlite3.Row]] = field(default_factory=dict)  # by point key, ordered by t
    oplat: dict[str, list[sqlite3.Row]] = field(default_factory=dict)  # by point key, in issue order
    # by point key and direction: the measured jobs' latency histograms merged (every VM, host and job)
    hists: dict[str, dict[str, Histogram]] = field(default_factory=dict)
    # by point key: (t ms, ddir, bins merged over the jobs) per logged interval, by time
    hist_log: dict[str, list[tuple[int, str, Histogram]]] = field(default_factory=dict)
    sla: Sla | None = None  # the spec's [campaign] sla
    workload_specs: dict[str, dict[str, Any]] = field(default_factory=dict)  # each workload's spec fields
    stops: list[dict[str, Any]] = field(default_factory=list)  # where sweeps stopped at stop_at, and why
    _builds: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    def done(self) -> list[Row]:
        return [r for r in self.rows if r["status"] == "done"]

    def groups(self) -> list[Group]:
        return group(self.rows, self.target_names(), self.workloads())

    def target_names(self) -> list[str]:
        seen = list(self.targets)
        return seen + sorted({r["target"] for r in self.rows} - set(seen))

    def workloads(self) -> list[str]:
        return list(dict.fromkeys([*self.workload_order, *(r["workload"] for r in self.rows)]))

    def ddirs(self, workload: str) -> list[str]:
        """The directions a workload moved data in."""
        rows = [r for r in self.done() if r["workload"] == workload]
        return [d for d in DDIRS if any(r[f"{d}_ops"] for r in rows)]

    def builds(self) -> dict[str, str]:
        """Each VM target's QEMU build (``qemu 10.0.2 / q35``) from its done points; a target whose points
        ran on more than one build lists them joined with " + ". Read once: every target's label asks."""
        if self._builds is not None:
            return self._builds
        found: dict[str, list[str]] = {}
        for r in self.done():
            label = build_label(r)
            if label and label not in found.setdefault(r["target"], []):
                found[r["target"]].append(label)
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
        if any(r["accel"] == "tcg" for r in self.done() if r["target"] == target):
            label += f" {TCG_MARK}"  # its ratio to bare metal measures an emulated CPU, not KVM
        return label

    def facet(self, target: str) -> tuple[int, int] | None:
        """(vCPUs, VMs) for a VM target; None for the others."""
        spec = self.targets.get(target, {})
        if spec.get("kind") != "qemu":
            return None
        return int(spec.get("vcpus", 1)), int(spec.get("vms", 1))


TCG_MARK = "[TCG]"
TCG_NOTE = (f"{TCG_MARK}: the VMs ran under TCG (QEMU emulating the CPU, no KVM): their ratios to bare metal "
            "measure the emulator, not a KVM host\n")  # fmt: skip


def tcg_note(labels: Iterable[str]) -> str:
    """The note under a table whose targets carry the TCG mark (empty when none does)."""
    return TCG_NOTE if any(label.endswith(TCG_MARK) for label in labels) else ""


def load(store: Store, campaign: str) -> CampaignData:
    row = store.require(campaign)
    targets: dict[str, dict[str, Any]] = {}
    try:
        canonical = json.loads(row["canonical"] or "{}")
    except json.JSONDecodeError:
        canonical = {}
    for spec in canonical.get("targets", []):
        targets[spec["name"]] = spec
    runs = {r["point_key"]: r for r in store.runs(campaign)}
    workloads = [w["name"] for w in canonical.get("workloads", [])]
    samples = {k: store.samples(r["id"]) for k, r in runs.items()}
    oplat = {k: ops for k, r in runs.items() if (ops := store.oplat(r["id"]))}
    hists = {k: _merged(store, r["id"]) for k, r in runs.items()}
    logs = {k: _per_second(log) for k, r in runs.items() if (log := store.hist_log(r["id"]))}
    rows = point_rows(store, campaign)
    specs = {w["name"]: w for w in canonical.get("workloads", [])}
    workloads = swept_labels(rows, workloads, specs)
    return CampaignData(
        campaign, rows, runs, targets, workloads, samples, oplat, hists, logs, _sla(row["spec_text"]), specs,
        store.stops(campaign),
    )  # fmt: skip


def swept_labels(rows: list[Row], order: list[str], specs: dict[str, dict[str, Any]]) -> list[str]:
    """Points of a queue-depth or job sweep are told apart as workloads of their own (``rr qd=8``): each
    row's ``workload`` becomes that label, which takes the workload's spec fields and its place in ``order``
    (returned). Rows of campaigns without sweeps stay as they are."""
    labels: dict[str, list[str]] = {}
    for row in rows:
        middle = str(row["point"]).partition("/bs=")[2].partition("/offered=")[0]
        swept = re.findall(r"/((?:qd|jobs)=\d+)", middle)
        if not swept:
            continue
        base = row["workload"]
        row["workload"] = label = f"{base} {' '.join(swept)}"
        if base in specs:
            specs.setdefault(label, specs[base])
        if label not in labels.setdefault(base, []):
            labels[base].append(label)
    return [name for w in order for name in labels.get(w, [w])]


def _sla(spec_text: str | None) -> Sla | None:
    """The spec's ``[campaign] sla``, if its stored text has a valid one (a report never fails on it)."""
    try:
        value = tomllib.loads(spec_text or "").get("campaign", {}).get("sla")
        return parse_stored_sla(value) if value is not None else None
    except (tomllib.TOMLDecodeError, ValueError, AttributeError):
        return None


def _merged(store: Store, run_id: int) -> dict[str, Histogram]:
    results = [r for r in store.results(run_id) if r["role"] == "measure"]
    out = {}
    for ddir in DDIRS:
        merged = histogram.merge(store.histogram(r["id"]) for r in results if r["ddir"] == ddir)
        if merged:
            out[ddir] = merged
    return out


def _per_second(log: list[tuple[str, str, int, str, Histogram]]) -> list[tuple[int, str, Histogram]]:
    """Each job's intervals merged with the other jobs' of the same second (jobs log a few ms apart)."""
    by_second: dict[tuple[int, str], Histogram] = {}
    for _, _, t_ms, ddir, bins in log:
        key = (round(t_ms / 1000) * 1000, ddir)
        by_second[key] = histogram.merge([by_second.get(key, {}), bins])
    return [(t, d, b) for (t, d), b in sorted(by_second.items())]


def group(
    rows: Iterable[Row], target_order: list[str] | None = None, workload_order: list[str] | None = None
) -> list[Group]:
    """Groups in a stable order: target (spec order), workload, bs, load processes, offered load."""
    groups: dict[GroupKey, Group] = {}
    for row in rows:
        g = groups.setdefault(key_of(row), Group(key_of(row)))
        if row["status"] == "done":
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
    rows = [r for r in data.done() if r["target"] in names]
    accel = ", ".join(f"{t}={_accel(rows, t)}" for t in names)
    parts = [f"accel: {accel}"]
    if data.several_builds():
        builds = data.builds()
        parts.append("builds: " + ", ".join(f"{t}={builds[t]}" for t in names if t in builds))
    parts += sorted({str(r["fio_version"]) for r in rows if r["fio_version"]})
    parts += [f"QEMU {v}" for v in sorted({str(r["qemu_version"]) for r in rows if r["qemu_version"]})]
    kernels = sorted({str(r["host_facts"].get("kernel")) for r in rows if r["host_facts"].get("kernel")})
    parts += [f"kernel {k}" for k in kernels]
    parts.append(repetitions_label(group(rows)))
    return " · ".join(parts)


def _accel(rows: list[Row], target: str) -> str:
    found = sorted({str(r["accel"] or "host") for r in rows if r["target"] == target})
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
