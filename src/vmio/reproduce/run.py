"""``vmio reproduce ID``: run a paper's experiments, judge its claims, write ``index.html`` and ``result.json``."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from vmio.campaign import facts
from vmio.campaign.runner import Progress
from vmio.errors import InputError, ToolError, VmioError
from vmio.reproduce import (
    SCALES,
    dstore_paper,
    membal_live_paper,
    membal_paper,
    nvme_paper,
    ops_paper,
    page,
    relocate_paper,
)
from vmio.reproduce.claims import paper
from vmio.reproduce.result import Reproduction
from vmio.store import Store
from vmio.system import files

RUNNABLE = (
    "hitachi-nvme-2016",
    "hitachi-membal-2014",
    "bitisle-dstore-2014",
    "kogakuin-relocate-2011",
    "okayama-hypervisors-2020",
)


@dataclass(frozen=True)
class Request:
    paper_id: str
    scale: str
    out: Path
    force: bool = False
    db: str = "vmio.db"  # the store of the campaigns a paper runs
    disk_dir: Path = field(default_factory=files.scratch_home)  # a paper's disk files (a disk, not tmpfs)
    boot_timeout: float = 300.0
    trace_root: Path | None = None
    conf: Path | None = None  # bitisle-dstore-2014: an existing cluster (else a throwaway one)
    pool: str = "vmio"
    live: bool = True  # hitachi-membal-2014: case 1 live as well, where QEMU runs


def check(req: Request) -> None:
    """Refuse bad input before anything runs: an unknown id or scale, a non-empty DIR without force."""
    p = paper(req.paper_id)
    if req.scale not in SCALES:
        raise InputError(f"reproduce: --scale {req.scale!r} is not one of {SCALES}")
    if p.id not in RUNNABLE:
        raise InputError(
            f"reproduce: {p.id!r} has no experiments in `vmio reproduce` yet; papers it runs: {', '.join(RUNNABLE)}"
        )
    if req.conf is not None and not req.conf.is_file():
        raise InputError(f"reproduce: --conf {str(req.conf)!r} is not a file; give the cluster's ceph.conf")
    if req.conf is not None and p.id != "bitisle-dstore-2014":
        raise InputError(f"reproduce: --conf is for bitisle-dstore-2014 (a Ceph cluster); {p.id} uses none")
    if req.out.exists() and not req.out.is_dir():
        raise InputError(f"reproduce: -o {str(req.out)!r} exists and is not a folder")
    if req.out.is_dir() and any(req.out.iterdir()) and not req.force:
        raise InputError(
            f"reproduce: -o {str(req.out)!r} is not empty; choose an empty folder or pass --force"
        )


def reproduce(req: Request, progress: Callable[[Progress], None] | None = None) -> Reproduction:
    """Run ``req``'s paper at its scale and write its page and result; the result (failures included)."""
    check(req)
    p = paper(req.paper_id)
    rep = Reproduction(p, req.scale, facts.collect())
    if p.id == "hitachi-membal-2014":
        rep.measured, rep.details, rep.figures = membal_paper.run(req.scale)
        rep.notes = list(membal_paper.NOTES)
        if req.live and shutil.which("qemu-system-x86_64"):
            _run_membal_live(req, rep)
    elif p.id == "kogakuin-relocate-2011":
        rep.measured, rep.details, rep.fitted, rep.beyond, rep.figures = relocate_paper.run(req.scale)
        rep.notes = list(relocate_paper.NOTES)
    elif p.id == "bitisle-dstore-2014":
        _run_dstore(req, rep)
    elif p.id == "hitachi-nvme-2016":
        _run_nvme(req, rep, progress)
    else:
        _run_ops(req, rep, progress)
    write(rep, req.out)
    return rep


def _campaign_name(req: Request) -> str:
    return f"{req.paper_id}-{req.scale}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"


def _run_nvme(req: Request, rep: Reproduction, progress: Callable[[Progress], None] | None) -> None:
    from vmio.advise.inventory import read_host_facts
    from vmio.system.process import Runner

    name = _campaign_name(req)
    files.make_folder(req.disk_dir)
    here, why_not = None, ""
    try:
        here = read_host_facts(Runner())
    except VmioError as exc:
        why_not = str(exc)
    with tempfile.TemporaryDirectory(prefix="reproduce-", dir=req.disk_dir) as disks:
        setting = nvme_paper.Setting(
            req.scale, Path(disks), name, req.boot_timeout, passthrough=nvme_paper.passthrough()
        )
        with Store(req.db) as store:
            out = nvme_paper.run(setting, store, progress, here, why_not)
    rep.measured, rep.details, rep.figures, rep.beyond = out.measured, out.details, out.figures, out.beyond
    rep.accel, rep.campaigns, rep.notes = out.accel, out.campaigns, list(nvme_paper.NOTES)
    rep.failures, rep.retried = out.tries.failures, out.tries.retried


def _run_membal_live(req: Request, rep: Reproduction) -> None:
    files.make_folder(req.disk_dir)
    with Store(req.db) as store:
        try:
            case = membal_live_paper.run_case1(
                req.scale, store, workdir=req.disk_dir, boot_timeout=req.boot_timeout
            )
        except ToolError as exc:
            rep.failures.append(f"case 1 live: {exc}")
            return
    rep.accel = case.accel
    measured, details = membal_live_paper.measure(case)
    rep.figures.append(membal_live_paper.figure(case))
    rep.measured.update(measured)
    rep.details.update(details)


def _run_dstore(req: Request, rep: Reproduction) -> None:
    files.make_folder(req.disk_dir)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    name = f"{req.paper_id}-{req.scale}-{stamp}"
    setting = dstore_paper.Setting(req.scale, req.disk_dir, req.conf, req.pool, stamp, name)
    try:
        with Store(req.db) as store:
            rep.measured, rep.details, setup, rep.figures = dstore_paper.run(setting, store)
    except ToolError as exc:
        rep.failures.append(str(exc))
        return
    finally:
        rep.notes = list(dstore_paper.NOTES)
    rep.details["setup"] = [setup]
    rep.campaigns = [name]


def _run_ops(req: Request, rep: Reproduction, progress: Callable[[Progress], None] | None) -> None:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    name = f"{req.paper_id}-{req.scale}-{stamp}"
    files.make_folder(req.disk_dir)
    with tempfile.TemporaryDirectory(prefix="reproduce-", dir=req.disk_dir) as disks:
        setting = ops_paper.Setting(req.scale, Path(disks), name, req.boot_timeout)
        with Store(req.db) as store:
            rep.measured, rep.details, tries, rep.accel, rep.figures = ops_paper.run(
                setting, store, req.trace_root, progress
            )
    rep.failures, rep.retried = tries.failures, tries.retried
    rep.campaigns = [name, f"{name}-fig6"]
    rep.notes = list(ops_paper.NOTES)


def write(rep: Reproduction, out: Path) -> None:
    """``out/result.json`` and ``out/index.html``, each written whole (a temporary file renamed)."""
    out.mkdir(parents=True, exist_ok=True)
    doc = rep.json()
    _atomic(out / "result.json", json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    _atomic(out / "index.html", page.render(rep))


def _atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
