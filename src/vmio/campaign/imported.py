"""fio's JSON or json+ output from runs made without vmio, stored as a campaign's points (``vmio import``).

Each job name of a file becomes one point, with every clone of it (``numjobs``) and every host of a
client/server run (``--client``) as its jobs, as vmio's own multi-host points are. The figures are fio's
own: IOPS, bandwidth, latency min/mean/max/stddev and percentiles per job and direction, the latency
histogram for json+ output (so percentiles merge across jobs and hosts as vmio's do), each job's CPU
(fio's ``usr_cpu``, ``sys_cpu``) and ``disk_util`` (kept under that name in the point's host facts; its
``util`` is the point's device busy %). What fio did not record stays absent, never zero: no samples, no
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
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vmio.errors import FioError, InputError
from vmio.fio import output
from vmio.store import RunRecord, Store
from vmio.units import format_size, parse_size

IMPORTED = "<vmio import>"  # the spec path of an imported campaign (it has no spec)
CANONICAL = json.dumps({"imported": "fio json"})
MAX_FILE_BYTES = 256 << 20


def import_files(store: Store, paths: Sequence[Path], campaign: str, target: str) -> list[str]:
    """Store the jobs of each fio output file, or of every fio JSON file under each folder, as points of
    ``campaign`` (created if new; an existing campaign must be an imported one); the keys stored, in
    order. A file that is not fio's JSON is an ``InputError`` naming it, before anything is stored."""
    row = store.campaign(campaign)
    if row is not None and row["spec_path"] != IMPORTED:
        raise InputError(
            f"campaign {campaign!r} was run by vmio from {row['spec_path']}; import into "
            "another campaign name (vmio ls lists the stored ones)"
        )
    files = [f for path in paths for f in expand(path)]
    pending = [rec for path in files for rec in records(*_read(path), campaign, target, path)]
    _name_by_rw(pending)
    store.ensure_campaign(campaign, IMPORTED, "", CANONICAL)
    done = store.done_keys(campaign)
    keys = []
    for rec in pending:
        rep = 1
        while _key(rec, rep) in done:
            rep += 1
        rec.repetition, rec.point_key = rep, _key(rec, rep)
        store.record(rec)
        done.add(rec.point_key)
        keys.append(rec.point_key)
    return keys


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
        result = output.parse(text)
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
    layout = from_layout(path)
    for name in dict.fromkeys(r.job for r in result.results):
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
            bs=_bs(opts, mine),
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
        if disks:
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


def _bs(options: Mapping[str, object], results: Sequence[output.JobResult]) -> int:
    """The job's block size: its ``bs`` option, else fio's bytes over operations (its mean request)."""
    text = str(options.get("bs", "")).split(",")[0]
    try:
        return parse_size(text) if text else _mean_request(results)
    except ValueError:
        return _mean_request(results)


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
