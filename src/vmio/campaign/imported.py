"""fio's JSON or json+ output from runs made without vmio, stored as a campaign's points (``vmio import``).

Each job name of a file becomes one point, with every clone of it (``numjobs``) and every host of a
client/server run (``--client``) as its jobs, as vmio's own multi-host points are. The figures are fio's
own: IOPS, bandwidth, latency min/mean/max/stddev and percentiles per job and direction, the latency
histogram for json+ output (so percentiles merge across jobs and hosts as vmio's do), each job's CPU
(fio's ``usr_cpu``, ``sys_cpu``) and ``disk_util``: fio measures it over the whole run, so it belongs to the
file: stored once per imported file (``vmio.store.imported_files``); a point has it, and its ``util`` as the
point's device busy %, only when its file held that one job. What fio did not record stays absent, never zero: no samples, no
host CPU, no percentiles a plain-JSON output left out. A file imported again, or another run of the same
job, adds a repetition.

A folder imports every fio JSON file under it as points of the one campaign (bench-fio's tree
``<target>/<bs>/<rw>-<iodepth>-<numjobs>.json``, fio-plot's published data and the like): each point takes
``rw``, ``bs``, ``iodepth`` and ``numjobs`` from its file's job options, or from bench-fio's file name when
the fio that wrote it recorded no options (before fio 2.3), so a sweep becomes a swept campaign. Each point
keeps the fio version that wrote its file.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vmio.campaign import import_checks
from vmio.errors import FioError, InputError
from vmio.fio import output
from vmio.spec.fields import MAX_BLOCK
from vmio.store import RunRecord, Store
from vmio.store.imported_files import ImportedFile
from vmio.store.imported_spec import IMPORTED
from vmio.units import fio_size, format_size

CANONICAL = json.dumps({"imported": "fio json"})
MAX_FILE_BYTES = 256 << 20


def read_files(
    paths: Sequence[Path], campaign: str, target: str
) -> tuple[list[RunRecord], list[ImportedFile]]:
    """The points of each fio output file, or of every fio JSON file under each folder (repetitions set when
    stored), every number finite and within its range, and the files with what fio measured over each whole
    run (its ``disk_util``): a file that is not fio's JSON, or holds a figure out of its range or a number vmio
    could not store or read back, is an ``InputError`` naming it and the field.
    Nothing is written: call this before opening the store, so a refused import leaves no store."""
    out: list[RunRecord] = []
    read: list[tuple[Path, list[RunRecord], list[output.DiskUtil]]] = []
    for path in [f for given in paths for f in expand(given)]:
        result, doc = _read(path)
        check_numbers(doc, str(path))
        mine = records(result, doc, campaign, target, path)
        for rec in mine:
            check_record(rec, str(path))
        out += mine
        read.append((path, mine, result.disk_util))
    _name_by_rw(out)
    files = [
        ImportedFile(str(path.resolve()), mine[0].ended, tuple(r.workload for r in mine), list(disks) or None)
        for path, mine, disks in read
    ]
    return out, files


def import_files(
    store: Store,
    recs: Sequence[RunRecord],
    campaign: str,
    series: str | None = None,
    files: Sequence[ImportedFile] = (),
) -> list[str]:
    """Write ``recs`` and ``files`` (``read_files``) as points of ``campaign`` (created if new; an existing
    campaign must be an imported one), each a new repetition of its key, in one transaction with the campaign's
    own row: all of them or nothing; then put the campaign in ``series`` when given. The keys stored, in order."""
    row = store.campaign(campaign)
    if row is not None and row["spec_path"] != IMPORTED:
        raise InputError(
            f"campaign {campaign!r} was run by vmio from {row['spec_path']}; import into "
            "another campaign name (vmio ls lists the stored ones)"
        )
    done = store.done_keys(campaign) if row is not None else set()
    keys = []
    for rec in recs:
        rep = 1
        while _key(rec, rep) in done:
            rep += 1
        rec.repetition, rec.point_key = rep, _key(rec, rep)
        done.add(rec.point_key)
        keys.append(rec.point_key)
    store.record_all(campaign, IMPORTED, "", CANONICAL, recs, files)
    if series is not None:
        store.set_series(campaign, series)
    return keys


MAX_INT = (1 << 63) - 1  # SQLite's INTEGER


def check_numbers(doc: object, where: str, at: str = "") -> None:
    """Every number in fio's JSON ``doc`` is finite and fits SQLite (``InputError`` naming the field)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            check_numbers(value, where, f"{at}.{key}" if at else str(key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            check_numbers(value, where, f"{at}[{i}]")
    elif isinstance(doc, float) and not math.isfinite(doc):
        raise InputError(f"{where}: {at} = {doc!r} is not a finite number; nothing was imported")
    elif isinstance(doc, int) and not isinstance(doc, bool) and abs(doc) > MAX_INT:
        raise InputError(f"{where}: {at} = {doc} is out of range (at most {MAX_INT}); nothing was imported")


def check_record(rec: RunRecord, where: str) -> None:
    """The figures a point stores are finite and not negative (counts, rates, times, latencies)."""
    for r in rec.results:
        figures: dict[str, object] = {
            "iops": r.iops,
            "bw_bytes": r.bw_bytes,
            "total_ios": r.total_ios,
            "runtime_ms": r.runtime_ms,
            "usr_cpu": r.usr_cpu,
            "sys_cpu": r.sys_cpu,
            **{f"lat_ns.{k}": v for k, v in r.lat_ns.items()},
            **{f"bins[{k}]": v for k, v in r.bins.items()},
        }
        for name, value in figures.items():
            if value is None:
                continue
            if not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= MAX_INT:
                raise InputError(
                    f"{where}: job {r.job!r} ({r.ddir}): {name} = {value!r} is not a finite figure of 0 or "
                    "more; nothing was imported"
                )
    for (source, metric), value in rec.metrics.items():
        if not math.isfinite(value):
            raise InputError(f"{where}: {source} {metric} = {value!r} is not finite; nothing was imported")


FOLDER_SUFFIXES = (".json", ".jsonplus", ".json+")  # fio --output files (bench-fio: <rw>-<qd>-<jobs>.json)


def expand(path: Path) -> list[Path]:
    """``path`` itself, or for a folder the fio output files under it (``*.json``, ``*.jsonplus``, ``*.json+`` at any depth, in name
    order; links to folders are not followed)."""
    if not path.is_dir():
        return [path]
    found = []
    for root, dirs, names in os.walk(path):
        dirs.sort()
        found += [Path(root) / n for n in sorted(names) if n.endswith(FOLDER_SUFFIXES)]
    if not found:
        raise InputError(
            f"{path}: the folder holds no fio output (*.json, *.jsonplus or *.json+ files at any depth, such as bench-fio's "
            "<rw>-<iodepth>-<numjobs>.json)"
        )
    return found


# bench-fio's output file name: <rw>-<iodepth>-<numjobs>.json (its folder <rw><rwmixread> for a mix)
BENCH_FIO_NAME = re.compile(r"(?P<rw>[a-z]+)-(?P<iodepth>[0-9]+)-(?P<numjobs>[0-9]+)\.json")


def from_layout(path: Path) -> dict[str, object]:
    """What bench-fio's file name says of the run (``rw``, ``iodepth``, ``numjobs``); empty for others."""
    m = BENCH_FIO_NAME.fullmatch(path.name)
    return {k: v for k, v in m.groupdict().items()} if m else {}


def _read(path: Path) -> tuple[output.FioOutput, dict[str, Any]]:
    if not path.is_file():
        raise InputError(
            f"{path}: no such file (vmio import takes fio's --output-format=json or json+ output)"
        )
    if path.stat().st_size > MAX_FILE_BYTES:
        raise InputError(
            f"{path}: {path.stat().st_size} bytes is larger than fio output runs ({MAX_FILE_BYTES})"
        )
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        doc, _ = output.extract_json(text)
        import_checks.check_document(doc, path)
        result = output.parse(text)
    except InputError as exc:  # a figure out of its range: said as every refused import says it
        raise InputError(f"{exc}; nothing was imported") from None
    except FioError as exc:
        raise InputError(
            f"{path}: {str(exc).splitlines()[0]}; vmio import takes fio's "
            "--output-format=json or json+ output"
        ) from None
    if not result.results:
        raise InputError(f"{path}: fio's output holds no job that did I/O")
    return result, doc


def records(
    result: output.FioOutput, doc: dict[str, Any], campaign: str, target: str, path: Path
) -> list[RunRecord]:
    """One record per job name of one fio output (repetition and key set by the caller)."""
    jobs: list[Any] = doc.get("client_stats") or doc.get("jobs") or []
    options = {
        str(j["jobname"]): {**_dict(doc.get("global options")), **_dict(j.get("job options"))}
        for j in jobs
        if j.get("jobname") != "All clients"
    }
    stamp = doc.get("timestamp")
    ended = float(stamp) if isinstance(stamp, int | float) else time.time()
    out = []
    names = list(dict.fromkeys(r.job for r in result.results))
    layout = from_layout(path)
    for name in names:
        mine = [r for r in result.results if r.job == name]
        opts = options.get(name, {})
        said = {**layout, **opts}  # the job's own options first, bench-fio's file name for older fio
        hosts = sorted({r.host for r in mine})
        rec = RunRecord(
            campaign=campaign,
            point_key="",
            target=target,
            target_kind="import",
            workload=name,
            bs=_bs(opts, mine, path),
            offered_iops=None,
            load_processes=0,
            repetition=1,
            status="done",
            started=ended - max(r.runtime_ms for r in mine) / 1000,
            ended=ended,
            fio_version=result.version or None,
            results=mine,
            iodepth=_int(said.get("iodepth")),
            numjobs=_int(said.get("numjobs")),
        )
        rec.host = {"imported_from": str(path.resolve()), "fio_job_options": opts, "fio_hosts": hosts}
        if rw := rw_label(said):
            rec.host["fio_rw"] = rw
        disks = [d for d in result.disk_util if _of(d, hosts)]
        if disks and len(names) == 1:
            # fio's disk_util is the whole run's: it is the file's (stored once, read_files), and one point's
            # busy % only when the file holds that one job (two jobs of one run do not each keep the disk busy)
            rec.host["fio_disk_util"] = disks  # fio's own names and figures
            rec.device = str(disks[0]["name"])
            rec.metrics[(f"dev:{rec.device}", "busy_pct")] = float(disks[0]["util"])
        rate = _int(opts.get("rate_iops"))
        if rate is not None:  # fio's rate_iops is per job: the point's offered load is their total
            rec.offered_iops = rate * len({(r.host, r.job) for r in mine}) * (_int(opts.get("numjobs")) or 1)
        out.append(rec)
    return out


def rw_label(options: Mapping[str, object]) -> str:
    """The job's ``rw`` (``randread``; a mix with its read share, ``randrw70``), '' when not named."""
    rw = str(options.get("rw") or options.get("readwrite") or "").split(":")[0]
    mix = _int(options.get("rwmixread"))
    if mix is None and _int(options.get("rwmixwrite")) is not None:
        mix = 100 - (_int(options.get("rwmixwrite")) or 0)
    return f"{rw}{mix}" if rw in MIXED and mix is not None else rw


MIXED = ("rw", "readwrite", "randrw", "trimwrite", "randtrimwrite")


def _name_by_rw(recs: Sequence[RunRecord]) -> None:
    """A job name that runs several ``rw`` in one import (bench-fio names every job alike) becomes one
    workload per ``rw``: ``NAME-randread``, ``NAME-randwrite``."""
    seen: dict[str, set[str]] = {}
    for rec in recs:
        seen.setdefault(rec.workload, set()).add(str(rec.host.get("fio_rw", "")))
    for rec in recs:
        rw = str(rec.host.get("fio_rw", ""))
        if len(seen[rec.workload]) > 1 and rw:
            rec.workload = f"{rec.workload}-{rw}"


def _key(rec: RunRecord, rep: int) -> str:
    qd = f"/qd={rec.iodepth}" if rec.iodepth is not None else ""
    jobs = f"/jobs={rec.numjobs}" if rec.numjobs is not None else ""
    offered = "max" if rec.offered_iops is None else str(rec.offered_iops)
    return (
        f"{rec.target}/{rec.workload}/bs={format_size(rec.bs)}{qd}{jobs}/offered={offered}/load=0/rep={rep}"
    )


def _bs(options: Mapping[str, object], results: Sequence[output.JobResult], path: Path) -> int:
    """The job's block size: its ``bs`` option, else fio's bytes over operations (its mean request)."""
    text = str(options.get("bs", "")).split(",")[0]
    bs = fio_size(text) if text else _mean_request(results)
    if bs is None:
        return _mean_request(results)  # a form vmio does not read (a range, a split): fio's mean request
    if not 0 < bs <= MAX_BLOCK:
        raise InputError(
            f"{path}: job option bs = {text!r} is not a block fio moves; fio's blocks are 512 to 1G"
        )
    return bs


def _mean_request(results: Sequence[output.JobResult]) -> int:
    ios = sum(r.total_ios for r in results)
    seconds = sum(r.runtime_ms for r in results) / 1000
    moved = sum(r.bw_bytes * r.runtime_ms / 1000 for r in results)
    return round(moved / ios) if ios and seconds else 0


def _dict(value: object) -> dict[str, object]:
    return dict(value) if isinstance(value, dict) else {}


def _int(value: object) -> int | None:
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def _of(disk: output.DiskUtil, hosts: list[str]) -> bool:
    """A ``disk_util`` entry of one of these hosts (client/server output names each entry's host)."""
    if "hostname" not in disk:
        return True
    return f"{disk['hostname']}:{disk.get('port')}" in hosts
