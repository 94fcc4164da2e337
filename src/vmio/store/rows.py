"""One row per stored point, as ``vmio show --json`` prints it (a contract: see docs/ARCHITECTURE.md).

IOPS and bandwidth are sums over the measured jobs of every VM or host; latency percentiles come from
the merged histograms, never from averaging percentiles; the mean is weighted by operation counts.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import operator
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from vmio.store import fields, imported_files, point_metrics, storage_fields, summaries
from vmio.store.database import Store
from vmio.store.fields import StoredPoint
from vmio.store.point_metrics import QemuCpu

LAT_KEYS = ("min", "mean", "max", "p50", "p99", "p99.9")
Latency = Mapping[str, float | None]  # min, mean, max, p50, p90, p99, p99.9, p99.99 in ns


@dataclass(slots=True)
class PointRow(StoredPoint):
    """One stored point (one repetition), its figures summed or merged over its jobs and hosts.

    The stored per-point fields are ``StoredPoint``'s (``offered_iops`` a number or None: unthrottled; the
    decoded JSON columns ``steady``, ``precondition``, ``fio_job``); these are the figures read with them.
    ``host_facts`` is decoded by the store, so callers read fields.
    """

    _: KW_ONLY
    read_iops: float
    read_bw: float
    read_lat_ns: Latency | None
    read_ops: int
    write_iops: float
    write_bw: float
    write_lat_ns: Latency | None
    write_ops: int
    hosts: tuple[str, ...]
    device_metrics: Mapping[str, float | None]  # by DEVICE_FIELDS name (dev_read_iops, ...)
    cpu: Mapping[str, float | None]  # by CPU_FIELDS name (cpu_usr_pct, ...)
    host_facts: Mapping[str, object]
    qemu_machine: str | None
    qemu_cpu_pct: QemuCpu | None
    guest_io_warnings: int | None
    # an imported point's figures fio recorded (its names: usr_cpu, sys_cpu, disk_util)
    fio_figures: Mapping[str, object] = field(default_factory=dict)
    # a stored dstore profile's point: what it ran on (Ceph version, pool, replicas, ...) and its verdicts
    dstore: Mapping[str, object] | None = None
    # the disks and filesystem under the target (``storage_fields.KEYS``; runs from before have none)
    storage: Mapping[str, object] | None = None

    @property
    def point(self) -> str:
        """The point's key (``show --json``'s ``point``)."""
        return self.point_key

    @property
    def done(self) -> bool:
        return self.status == "done"

    def iops(self, ddir: str) -> float:
        return self.read_iops if ddir == "read" else self.write_iops

    def bw(self, ddir: str) -> float:
        return self.read_bw if ddir == "read" else self.write_bw

    def ops(self, ddir: str) -> int:
        return self.read_ops if ddir == "read" else self.write_ops

    def lat_ns(self, ddir: str) -> Latency | None:
        return self.read_lat_ns if ddir == "read" else self.write_lat_ns

    def metric(self, name: str) -> float | None:
        """A device or CPU figure by its ``show --json`` name (``dev_busy_pct``, ``cpu_iowait_pct``)."""
        return self.device_metrics.get(name, self.cpu.get(name))

    def to_json(self, facts: bool = True) -> dict[str, object]:
        """The row as ``vmio show --json`` prints it (the contract: same keys, same order, "max" for an
        unthrottled point); ``facts=False`` leaves out ``host_facts``."""
        out: dict[str, object] = dict(zip(_HEAD_KEYS, _HEAD(self), strict=True))  # one getter: 100k points
        for key in _HEAD_MAX:  # ``Field.shown`` of each head field
            if out[key] is None:
                out[key] = "max"
        for ddir in ("read", "write"):
            lat = self.lat_ns(ddir)
            out[f"{ddir}_iops"] = self.iops(ddir)
            out[f"{ddir}_bw"] = self.bw(ddir)
            out[f"{ddir}_lat_ns"] = dict(lat) if lat is not None else None
            out[f"{ddir}_ops"] = self.ops(ddir)
        out["hosts"] = list(self.hosts)
        out.update(self.device_metrics)
        out.update(self.cpu)
        if facts:
            out["host_facts"] = dict(self.host_facts)
        out["qemu_machine"] = self.qemu_machine
        out["qemu_cpu_pct"] = dict(self.qemu_cpu_pct) if self.qemu_cpu_pct is not None else None
        out["guest_io_warnings"] = self.guest_io_warnings
        for f in fields.OPTIONAL:  # only where stored, so older rows read as they always did
            value = getattr(self, f.name)
            if value is not None:
                out[f.json] = f.shown(value)
        out.update(self.fio_figures)
        if self.dstore is not None:  # only a stored dstore profile's points
            out["dstore"] = dict(self.dstore)
        if self.storage is not None:  # only runs that recorded their storage
            out.update(self.storage)
        return out


_HEAD_KEYS = tuple(key for key, _, _ in fields.HEAD_SHOWN)
_HEAD = operator.attrgetter(*(name for _, name, _ in fields.HEAD_SHOWN))
_HEAD_MAX = tuple(key for key, _, as_max in fields.HEAD_SHOWN if as_max)  # shown "max" for None


class Facts(Mapping[str, object]):
    """A point's host facts (a ``run.host_json`` object), decoded when first read: most readers of a big
    store (``compare``, ``export``) never read them, and a VM point's are 1.5 kB, 12 µs to decode."""

    __slots__ = ("_decoded", "_text")

    def __init__(self, text: str | None) -> None:
        self._text = text
        self._decoded: dict[str, object] | None = None

    def _facts(self) -> dict[str, object]:
        if self._decoded is None:
            self._decoded = json.loads(self._text or "{}")
        return self._decoded

    def __getitem__(self, key: str) -> object:
        return self._facts()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._facts())

    def __len__(self) -> int:
        return len(self._facts())

    def __repr__(self) -> str:
        return repr(self._facts())


def facts_read(text: str | None) -> bool:
    """Whether host facts stored as ``text`` can hold one that a point's row takes out of them
    (``qemu_machine``, ``guest_io_warnings``, ``dstore``, ``fio_disk_util``, ``storage``): a JSON object's key is its
    name in quotes unless written with an escape."""
    if not text:
        return False
    return (
        '"qemu_machine"' in text
        or '"guest_io_warnings"' in text
        or '"dstore"' in text
        or '"fio_disk_util"' in text
        or '"storage"' in text
        or "\\" in text
    )


def point_rows(store: Store, campaign: str | None = None) -> list[PointRow]:
    with gc_paused():  # 100k points are millions of small objects, none in a cycle
        return _point_rows(store, campaign)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector paused: it would walk every object read so far again and again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _point_rows(store: Store, campaign: str | None) -> list[PointRow]:
    names = [campaign] if campaign else store.campaigns()
    if campaign:
        store.require(campaign)
    out = []
    for name in names:
        detail = Detail(store, name)
        for runs in store.run_maps(name):
            out += [stored_row(name, run, detail) for run in runs]
    return out


def summary_rows(store: Store, campaign: str) -> list[PointRow]:
    """``point_rows`` of one campaign without each point's device, CPU and QEMU-process figures
    (``device_metrics`` and ``cpu`` empty, ``qemu_cpu_pct`` None): what ``compare`` reads (the stored
    per-point fields, summary and host facts) from 100k points without reading or building what it does not."""
    with gc_paused():
        store.require(campaign)
        detail = Detail(store, campaign)
        out = []
        for runs in store.run_tuples(campaign, SUMMARY_ROW_COLUMNS):
            for r in runs:
                if r[_KIND] != "import" and None not in _SUMMED(r):  # its summary stored (most points)
                    out.append(_summary_row(campaign, r))
                    continue
                run = dict(zip(SUMMARY_ROW_COLUMNS, r, strict=True))
                summary = summaries.stored(run)
                imported = run["target_kind"] == "import"
                results = detail.results.get(run["id"], []) if summary is None or imported else []
                if summary is None:
                    summary = summaries.summarize(results, detail.hists)
                out.append(
                    _row(campaign, run, summary, NO_FIGURES, results, detail.imported if imported else {})
                )
        return out


# the run columns ``summary_rows`` reads: the declared fields, the stored summary, host facts, end (an import's
# file) and id
SUMMARY_ROW_COLUMNS = tuple(
    dict.fromkeys((*fields.COLUMN_NAMES, *summaries.SUMMARY_COLUMNS, "host_json", "ended", "id"))
)
NO_FIGURES = point_metrics.Figures({}, {}, None)
_AT = {c: i for i, c in enumerate(SUMMARY_ROW_COLUMNS)}
_KIND, _HOSTS, _FACTS, _QEMU_VERSION = (
    _AT[c] for c in ("target_kind", "hosts_json", "host_json", "qemu_version")
)
_SUMMED = operator.itemgetter(_AT["read_jobs"], _AT["write_jobs"], _AT["hosts_json"])
_STORED_NAMES = tuple(f.name for f in fields.COLUMNS if f.read != "json")
_STORED = operator.itemgetter(*(_AT[f.column] for f in fields.COLUMNS if f.read != "json" and f.column))
_DECODED = tuple((f.name, _AT[f.column]) for f in fields.COLUMNS if f.read == "json" and f.column)
# per direction: its jobs, IOPS, bandwidth, operations, mean latency and latency columns (``summaries.direction``)
_DIRECTIONS = tuple(
    (
        _AT[f"{d}_jobs"], _AT[f"{d}_iops"], _AT[f"{d}_bw"], _AT[f"{d}_ops"], _AT[f"{d}_lat_mean"],
        operator.itemgetter(*(_AT[f"{d}_{c}"] for c in summaries.LAT_COLUMNS)),
    )
    for d in ("read", "write")
)  # fmt: skip


def _summary_row(campaign: str, r: tuple[Any, ...]) -> PointRow:
    """``_row`` of a point whose summary is stored (not an import), without its figures, read from its tuple
    of ``SUMMARY_ROW_COLUMNS``: the same values, without a dict, ``Summary`` and ``Direction`` per point."""
    columns = dict(zip(_STORED_NAMES, _STORED(r), strict=True))
    for name, i in _DECODED:
        columns[name] = None if r[i] is None else json.loads(r[i])
    ddirs: list[tuple[Any, Any, Any, dict[str, Any] | None]] = []
    for jobs, iops, bw, ops, mean, lat in _DIRECTIONS:
        if not int(r[jobs]):  # the sums of nothing, as ``summaries.direction`` gives them
            ddirs.append((0, 0, 0, None))
        else:
            ddirs.append(
                (
                    r[iops],
                    r[bw],
                    r[ops],
                    None if r[mean] is None else dict(zip(summaries.LAT_NAMES, lat(r), strict=True)),
                )
            )
    (read_iops, read_bw, read_ops, read_lat), (write_iops, write_bw, write_ops, write_lat) = ddirs
    _, host = _host(r[_FACTS], r[_KIND], r[_QEMU_VERSION])
    return PointRow(
        campaign=campaign, **columns,
        read_iops=read_iops, read_bw=read_bw, read_lat_ns=read_lat, read_ops=read_ops,
        write_iops=write_iops, write_bw=write_bw, write_lat_ns=write_lat, write_ops=write_ops,
        hosts=summaries.hosts(r[_HOSTS]), device_metrics=NO_FIGURES.device, cpu=NO_FIGURES.cpu, qemu_cpu_pct=None,
        **host,
    )  # fmt: skip


@dataclass
class Detail:
    """A campaign's detail rows, each table read in bulk on first need: one query, not one per point."""

    store: Store
    campaign: str

    @functools.cached_property
    def results(self) -> dict[int, list[sqlite3.Row]]:
        return self.store.campaign_results(self.campaign)

    @functools.cached_property
    def hists(self) -> dict[int, dict[int, int]]:
        return self.store.campaign_histograms(self.campaign)

    @functools.cached_property
    def metrics(self) -> dict[int, dict[tuple[str, str], float]]:
        return self.store.campaign_metrics(self.campaign)

    @functools.cached_property
    def imported(self) -> dict[tuple[str, float], imported_files.Entry]:
        return imported_files.by_point(self.store.files_imported(self.campaign))


def stored_row(campaign: str, run: summaries.RunRow, detail: Detail) -> PointRow:
    """A point from its stored summary and figures; from its results, histograms and metrics where the store
    holds none (a store whose columns were emptied), and an import's results for fio's CPU figures."""
    summary, figures = summaries.stored(run), point_metrics.stored(run)
    results = detail.results.get(run["id"], []) if summary is None or run["target_kind"] == "import" else []
    if summary is None:
        summary = summaries.summarize(results, detail.hists)
    if figures is None:
        figures = point_metrics.figures(detail.metrics.get(run["id"], {}), run["device"])
    files = detail.imported if run["target_kind"] == "import" else {}
    return _row(campaign, run, summary, figures, results, files)


def point_row(store: Store, campaign: str, run: sqlite3.Row) -> PointRow:
    results = store.results(run["id"])
    summary = summaries.stored(run)
    if summary is None:
        summary = summaries.summarize(results, {r["id"]: store.histogram(r["id"]) for r in results})
    figures = point_metrics.stored(run) or point_metrics.figures(store.run_metrics(run["id"]), run["device"])
    files = imported_files.by_point(store.files_imported(campaign)) if run["target_kind"] == "import" else {}
    return _row(campaign, run, summary, figures, results, files)


def _row(
    campaign: str,
    run: summaries.RunRow,
    summary: summaries.Summary,
    figures: point_metrics.Figures,
    every: list[sqlite3.Row],
    files: Mapping[tuple[str, float], imported_files.Entry],
) -> PointRow:
    read, write = summary.read, summary.write
    imported = run["target_kind"] == "import"
    facts, host = _host(run["host_json"], run["target_kind"], run["qemu_version"])
    vm = run["target_kind"] in ("qemu", "libvirt")
    return PointRow(
        campaign=campaign,
        **fields.load_columns(run),
        read_iops=read.iops,
        read_bw=read.bw,
        read_lat_ns=read.lat_ns,
        read_ops=read.ops,
        write_iops=write.iops,
        write_bw=write.bw,
        write_lat_ns=write.lat_ns,
        write_ops=write.ops,
        hosts=summary.hosts,
        device_metrics=figures.device,
        cpu=figures.cpu,
        qemu_cpu_pct=figures.qemu_cpu_pct if vm else None,
        fio_figures=imported_fields(facts, [r for r in every if r["role"] == "measure"], files, run["ended"])
        if imported
        else {},
        **host,
    )


def _host(text: str | None, kind: str, qemu_version: str | None) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """A point's host facts (decoded only where the row takes something out of them, or an import names its
    file there) and the row's fields read from them: ``host_facts``, ``qemu_machine``, ``guest_io_warnings``,
    ``dstore``, ``storage``."""
    read_now = facts_read(text) or (kind == "import" and bool(text))  # an import: its file is named there
    facts: dict[str, Any] = json.loads(text or "{}") if read_now else {}  # none the row takes: left for later
    before = "q35" if qemu_version else None  # runs before machine types were all q35
    return facts, {
        "host_facts": facts if read_now else Facts(text),
        "qemu_machine": facts.get("qemu_machine", before) if kind in ("qemu", "libvirt") else None,
        "guest_io_warnings": facts.get("guest_io_warnings"),  # None for host targets
        "dstore": facts["dstore"] if isinstance(facts.get("dstore"), dict) else None,
        "storage": storage_fields.fields(facts.get("storage")),
    }


def imported_fields(
    facts: Mapping[str, object],
    results: list[sqlite3.Row],
    files: Mapping[tuple[str, float], imported_files.Entry],
    ended: float | None,
) -> dict[str, object]:
    """An imported point's figures fio recorded that vmio's samplers would have: the measured jobs' CPU
    (fio's ``usr_cpu``, ``sys_cpu``, % of one CPU, summed), fio's ``disk_util`` as fio wrote it when the
    point's file held this one job, and the file it came from (``imported_file``: path, jobs, the run's
    ``disk_util``; the same object for each point of the file)."""
    jobs: dict[tuple[str, str], list[sqlite3.Row]] = {}
    for r in results:  # a job's CPU is on each of its directions' rows: count it once per clone
        jobs.setdefault((r["host"], r["job"]), []).append(r)
    out: dict[str, object] = {}
    for name in ("usr_cpu", "sys_cpu"):
        values = [(r[name], len({x["ddir"] for x in rs})) for rs in jobs.values() for r in rs]
        if values and all(v is not None for v, _ in values):
            out[name] = round(sum(v / n for v, n in values), 4)
    if "fio_disk_util" in facts:
        out["disk_util"] = facts["fio_disk_util"]
    out["imported_file"] = files.get((str(facts.get("imported_from")), float(ended or 0)))
    return out


def build_label(qemu_version: str | None, qemu_machine: str | None) -> str | None:
    """The QEMU build a point's VMs ran on, as the reports name it (``qemu 10.0.2 / q35``); None for
    targets without VMs."""
    if not qemu_version:
        return None
    return f"qemu {qemu_version} / {qemu_machine or 'q35'}"


# one row of ``vmio show CAMPAIGN --ops``, by OPS_FIELDS; each value a str, int, float or None (Any while
# cli's format_ops and reproduce's ops page each name their own value type)
OpsRow = dict[str, Any]
OPS_FIELDS = ("target", "workload", "bs", "rw", "load_processes", "vcpus", "vms", "idle_vms", "cache", "qemu_version",
              "machine", "accel", "ops", "min_ms", "avg_ms", "max_ms")  # fmt: skip


def ops_rows(store: Store, campaign: str) -> list[OpsRow]:
    """okayama-hypervisors-2020's Figs. 2-4/8 as rows: per target × workload (as defined: its name stands for every
    parameter, so two workloads that share ``rw`` stay two rows) × bs × load processes, the timed
    operations of every measured process (all repetitions) with their min/avg/max latency in ms. The
    target carries its
    vCPUs, VMs (measured and idle), host cache, QEMU build, machine type and accelerator; VM fields are
    None for host targets."""
    row = store.require(campaign)
    spec = json.loads(row["canonical"] or "{}")
    targets = {t["name"]: t for t in spec.get("targets", [])}
    workloads = {w["name"]: w for w in spec.get("workloads", [])}
    order, named = list(targets), list(workloads)
    groups: dict[tuple[str, str, int, int], tuple[OpsRow, list[int]]] = {}  # head, latencies
    for run in store.runs(campaign):
        if run["status"] != "done":
            continue
        lats = [o["lat_ns"] for o in store.oplat(run["id"])]
        if not lats:
            continue
        rw = workloads.get(run["workload"], {}).get("rw", run["workload"])
        key = (run["target"], run["workload"], run["bs"], run["load_processes"])
        group = groups.get(key)
        if group is None:
            group = groups[key] = (_ops_head(run, targets.get(run["target"], {}), rw), [])
        group[1].extend(lats)

    def rank(names: list[str], name: str) -> int:
        return names.index(name) if name in names else len(names)

    out = []
    for key in sorted(groups, key=lambda k: (rank(order, k[0]), rank(named, k[1]), k[1], *k[2:])):
        head, lats = groups[key]
        figures = {"min_ms": min(lats), "avg_ms": sum(lats) / len(lats), "max_ms": max(lats)}
        shown = {**head, "ops": len(lats), **{k: round(ns / 1e6, 4) for k, ns in figures.items()}}
        out.append({name: shown[name] for name in OPS_FIELDS})
    return out


def _ops_head(run: sqlite3.Row, target: Mapping[str, Any], rw: str) -> OpsRow:
    vm = run["target_kind"] in ("qemu", "libvirt")
    facts = json.loads(run["host_json"] or "{}")
    idle = int(target.get("idle_vms", 0)) if vm else None
    return {
        "target": run["target"],
        "workload": run["workload"],
        "bs": run["bs"],
        "rw": rw,
        "load_processes": run["load_processes"],
        "vcpus": target.get("vcpus") if vm else None,
        "vms": int(target.get("vms", 1)) + (idle or 0) if vm else None,  # running: measured and idle
        "idle_vms": idle,
        "cache": target.get("cache") if vm else None,
        "qemu_version": run["qemu_version"] if vm else None,
        "machine": facts.get("qemu_machine", target.get("machine", "q35")) if vm else None,
        "accel": run["accel"] if vm else None,
    }


# other work beyond this many busy cores makes host-wide %usr/%sys say more about it than about the I/O (the
# one declaration: advise.thresholds.OTHER_WORK_CORES takes it)
OTHER_WORK_LOAD = 0.5


def shared_host_note(points: Iterable[PointRow]) -> str:
    """A sentence when other work shared the host while points ran: the load average at a point's start
    (before vmio's own processes began) above ``OTHER_WORK_LOAD``; empty otherwise. Tables and the report
    that show host-wide %usr/%sys say it beside them."""
    loads = []
    for row in points:
        load = row.host_facts.get("loadavg")
        if row.done and isinstance(load, list) and load and isinstance(load[0], int | float):
            loads.append((float(load[0]), row.host_facts.get("cores")))
    shared = [(load, cores) for load, cores in loads if load > OTHER_WORK_LOAD]
    if not shared:
        return ""
    top, cores = max(shared, key=lambda pair: pair[0])
    on = f" on {cores} cores" if isinstance(cores, int) else ""
    return (
        f"other work shared the host: the load average was above {OTHER_WORK_LOAD:g} at the start of "
        f"{len(shared)} of {len(loads)} points (up to {top:.2f}{on}); %usr and %sys are host-wide and count "
        "that work (vmio diagnose cites the run's own CPU)"
    )
