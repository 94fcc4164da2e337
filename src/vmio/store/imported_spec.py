"""The spec model of an imported campaign (``vmio import``): it has no spec of vmio's own, so its targets and
workloads are rebuilt from what fio recorded with each point (its job options, kept in the point's host facts).

Every store-reading command asks a campaign's model for the target and workload of each point; an imported
campaign answers like a run one: one host target per target label (kind ``host``: fio ran on this host's own
I/O path as far as vmio can tell), one workload per job name with fio's ``rw``, ``rwmixread``, ``iodepth``,
``numjobs``, ``direct``, ``ioengine`` and ``runtime`` as recorded (fio's defaults where it recorded none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from vmio.spec.model import RW_MODES, Campaign, HostTarget, Workload

IMPORTED = "<vmio import>"  # the spec path of an imported campaign (it has no spec)

# fio's own spellings of rw= that vmio's modes name otherwise (fio's options.c)
_RW_ALIASES = {"randwrite": "randwrite", "randread": "randread", "readwrite": "rw", "trim": "write",
               "randtrim": "randwrite", "trimwrite": "rw", "randtrimwrite": "randrw"}  # fmt: skip


def imported_campaign(name: str, runs: Iterable[Mapping[str, object]]) -> Campaign:
    """The model of imported campaign ``name`` from its stored points (``target``, ``workload``, ``bs``,
    ``host_json`` of each)."""
    targets: dict[str, HostTarget] = {}
    workloads: dict[str, Workload] = {}
    for run in runs:
        facts = _facts(run["host_json"])
        options = facts.get("fio_job_options")
        opts = options if isinstance(options, dict) else {}
        label = str(run["target"])
        targets.setdefault(label, HostTarget(name=label, path=str(opts.get("filename", "")) or "-"))
        job = str(run["workload"])
        bs = int(str(run["bs"] or 0))
        known = workloads.get(job)
        if known is not None:
            if bs not in known.bs:
                workloads[job] = Workload(**{**known.__dict__, "bs": (*known.bs, bs)})
            continue
        workloads[job] = _workload(job, bs, opts)
    return Campaign(name, 1, tuple(targets.values()), tuple(workloads.values()), IMPORTED)


def _workload(job: str, bs: int, opts: Mapping[str, object]) -> Workload:
    rw = str(opts.get("rw", opts.get("readwrite", "read"))).split(":")[0].strip()
    rw = _RW_ALIASES.get(rw, rw)
    return Workload(
        name=job,
        rw=rw if rw in RW_MODES else "read",
        bs=(bs,),
        rwmixread=_int(opts.get("rwmixread"), 50, 0, 100),
        iodepth=_int(opts.get("iodepth"), 1, 1, 1 << 16),
        numjobs=_int(opts.get("numjobs"), 1, 1, 1 << 16),
        direct=_int(opts.get("direct"), 0, 0, 1) == 1,
        ioengine=str(opts.get("ioengine", "psync")),
        runtime=float(_int(opts.get("runtime"), 0, 0, 366 * 86400)),
    )


def _facts(text: object) -> dict[str, object]:
    try:
        value = json.loads(str(text)) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _int(value: object, default: int, low: int, high: int) -> int:
    """fio's recorded option as a number within [low, high], else ``default`` (fio writes its options as
    text, e.g. ``"4"``; a value with a unit suffix is not read here)."""
    try:
        number = int(str(value))
    except ValueError:
        return default
    return number if low <= number <= high else default
