"""Traces from vmio's own runs: VM targets with ``trace = true`` keep QEMU's request trace per point
beside the store (``vmio.db.traces/CAMPAIGN/POINT/vmio-N.log``). Each VM's disk becomes one image named
after the VM, so VMs from one campaign can be analysed and planned together as images on one shared disk."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from vmio.errors import TraceError
from vmio.traces.readers import read_qemu
from vmio.traces.trace import Trace, concat


def beside_store(db: str | Path) -> Path:
    """The folder of a store's VM traces: ``vmio.db`` → ``vmio.db.traces/``."""
    return Path(db).resolve().with_name(Path(db).name + ".traces")


def point_dir(root: Path, campaign: str, point_key: str) -> Path:
    """Where one point's traces are kept: ``ROOT/CAMPAIGN/POINT/`` (``/`` in the key becomes ``_``)."""
    return root / campaign / point_key.replace("/", "_")


def _campaign_dir(root: Path, campaign: str) -> Path | None:
    """``ROOT/CAMPAIGN`` when it is a folder directly inside ``root`` (never a path that leaves it)."""
    folder = root / campaign
    if folder.is_symlink() or not folder.is_dir() or folder.resolve().parent != root.resolve():
        return None
    return folder


def remove_campaign(root: Path, campaign: str) -> bool:
    """Delete the traces kept for ``campaign``; whether there were any."""
    import shutil

    folder = _campaign_dir(root, campaign)
    if folder is None:
        return False
    shutil.rmtree(folder)
    return True


def rename_campaign(root: Path, old: str, new: str) -> bool:
    """Move the traces kept for ``old`` to ``new``'s folder; whether there were any."""
    folder = _campaign_dir(root, old)
    target = root / new
    if folder is None or target.exists() or target.resolve().parent != root.resolve():
        return False
    folder.rename(target)
    return True


def vm_trace_name(index: int) -> str:
    """The file name of VM ``index``'s trace inside a point's folder."""
    return f"vmio-{index}.log"


def run_trace_files(root: Path, campaign: str, point: str | None = None) -> list[Path]:
    base = root / campaign
    folders = [point_dir(root, campaign, point)] if point else sorted(p for p in base.glob("*") if p.is_dir())
    files = [f for folder in folders for f in sorted(folder.glob("vmio-*.log"))]
    if not files:
        where = point_dir(root, campaign, point) if point else base
        raise TraceError(f"{where}: no VM traces; run a VM target with trace = true in campaign {campaign!r}")
    return files


def read_run_traces(root: Path, campaign: str, point: str | None = None) -> Trace:
    """All VM traces of a campaign (or one point); images are named ``vmio-N`` after their VM."""
    traces = []
    for path in run_trace_files(root, campaign, point):
        trace = read_qemu(path)
        vm = path.stem
        names = (vm,) if len(trace.images) <= 1 else tuple(f"{vm}:{name}" for name in trace.images)
        traces.append(dataclasses.replace(trace, images=names))
    return concat(traces)
