"""``vmio calibrate``: a device's or file's capacity, measured with fio, unthrottled.

Random read and write IOPS at 4 KiB and sequential bandwidth at 1 MiB, each at queue depths 1, 4, 16, 32,
64 and 128 (one fio run, jobs one after another). Writes go only where ``vmio run`` would write: files,
blank block devices, or a device named with ``--destroy-data``; otherwise only reads are measured. A missing
file is created at ``size`` and fully written first, so reads do not hit holes.

The result is stored per host and per device under the device's stable identity
(``system.blockdev.stable_id``); the tuning guideline judges "device busy" (Fig. 10 (e)) against it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import InputError
from vmio.fio import output
from vmio.fio import run as fiorun
from vmio.fio.jobfile import seconds, section
from vmio.store import Store
from vmio.store import capacity as stored
from vmio.store.capacity import host_name
from vmio.system.blockdev import device_chain, reported_device, stable_id
from vmio.system.files import check_place
from vmio.system.process import Runner
from vmio.system.safety import data_in_file, data_on_device, hold, is_block_device, named
from vmio.targets.host import prepare_file

QUEUE_DEPTHS = (1, 4, 16, 32, 64, 128)
DEFAULT_SIZE = 1 << 30


@dataclass(frozen=True)
class Calibration:
    path: str
    device: str | None
    device_id: str
    host: str
    writes: bool
    why_no_writes: str | None
    read_iops: dict[str, float]
    write_iops: dict[str, float] | None
    read_bw: dict[str, float]
    write_bw: dict[str, float] | None

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "device": self.device,
            "read_iops": self.read_iops,
            "write_iops": self.write_iops,
            "read_bw": max(self.read_bw.values()),  # bytes/s: the best 1M bandwidth over the queue depths
            "write_bw": max(self.write_bw.values()) if self.write_bw else None,
            "read_bw_by_qd": self.read_bw,
            "write_bw_by_qd": self.write_bw,
            "capacity_read_iops": max(self.read_iops.values()),
            "capacity_write_iops": max(self.write_iops.values()) if self.write_iops else None,
        }


def calibrate(
    path: str,
    *,
    size: int | None = None,
    runtime: float = 2.0,
    destroy: Sequence[str] = (),
    runner: Runner | None = None,
    store: Store | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> Calibration:
    """Measure ``path``; store the result in ``store`` when given. ``progress(done, total, step)`` hears of
    each measurement (one fio run per pattern and queue depth) before it starts."""
    runner = runner or Runner()
    if runtime <= 0:
        raise InputError(f"--runtime {runtime!r} must be above 0")
    target = Path(path)
    block = is_block_device(path)
    if not block and target.exists() and not target.is_file():
        raise InputError(f"calibrate PATH {path!r} is neither a block device nor a regular file")
    check_place(path, new=not target.exists())
    if not block and not target.exists():
        if not target.parent.is_dir():
            raise InputError(f"calibrate PATH {path!r}: directory {str(target.parent)!r} does not exist")
        prepare_file(target, size or DEFAULT_SIZE)
    with hold(path) as held:  # judged as opened; fio opens this same object (docs/security.md, part 4)
        why = _why_no_writes(path, held.here, block, destroy, runner)
        chain = device_chain(held.here)
        device = reported_device(held.here, chain)
        results = _run(held.fio_path, runtime, writes=why is None, runner=runner, progress=progress)
    by: dict[tuple[str, str], dict[str, float]] = {}
    for r in results:
        kind, _, qd = r.job.partition("-qd")
        key = (kind, r.ddir)
        if r.iops > 0 or r.bw_bytes > 0:
            by.setdefault(key, {})[qd] = round(r.bw_bytes if kind.endswith("1m") else r.iops, 1)
    result = Calibration(
        path=path,
        device=device,
        device_id=stable_id(device) if device else f"path:{os.path.realpath(path)}",
        host=host_name(),
        writes=why is None,
        why_no_writes=why,
        read_iops=_ordered(by.get(("rand4k", "read"), {})),
        write_iops=_maybe(by.get(("rand4k", "write"))),
        read_bw=_ordered(by.get(("seq1m", "read"), {})),
        write_bw=_maybe(by.get(("seq1m", "write"))),
    )
    if not result.read_iops:
        raise InputError(f"fio measured no reads on {path!r}")
    if store is not None:
        stored.save(store, result.host, result.device_id, path, device, result.to_dict())
    return result


def _why_no_writes(path: str, opened: str, block: bool, destroy: Sequence[str], runner: Runner) -> str | None:
    """Why calibrate must not write ``path`` (held open as ``opened``): it holds data and is not named."""
    if named(path, destroy) or named(opened, destroy):
        return None
    reasons = data_on_device(opened, runner, destroy=destroy) if block else data_in_file(opened)
    if not reasons:
        return None
    return f"{path} holds data ({'; '.join(reasons)}); pass --destroy-data {path} to measure writes"


def _ordered(values: dict[str, float]) -> dict[str, float]:
    return {str(qd): values[str(qd)] for qd in QUEUE_DEPTHS if str(qd) in values}


def _maybe(values: dict[str, float] | None) -> dict[str, float] | None:
    return _ordered(values) if values else None


def _run(
    path: str,
    runtime: float,
    *,
    writes: bool,
    runner: Runner,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[output.JobResult]:
    glob: dict[str, str | int | float] = {
        "filename": path,
        "ioengine": "libaio",
        "direct": 1,
        "time_based": 1,
        "runtime": seconds(runtime),
        "norandommap": 1,
        "randrepeat": 0,
        "group_reporting": 1,
    }
    if not is_block_device(path):
        glob["size"] = os.path.getsize(path)
    kinds = [("rand4k", "randread", "4k"), ("seq1m", "read", "1M")]
    if writes:
        kinds += [("rand4k", "randwrite", "4k"), ("seq1m", "write", "1M")]
    results: list[output.JobResult] = []
    for i, (kind, rw, bs) in enumerate(
        kinds
    ):  # one fio per pattern (its depths in turn), so progress can follow
        if progress is not None:
            progress(i, len(kinds), f"{rw} {bs} at queue depths {', '.join(map(str, QUEUE_DEPTHS))}")
        job = section("global", glob)
        for qd in QUEUE_DEPTHS:
            job += section(f"{kind}-qd{qd}", {"rw": rw, "bs": bs, "iodepth": qd, "stonewall": 1})
        results += _fio(job, runner, timeout=60 + len(QUEUE_DEPTHS) * (runtime + 5)).results
    if progress is not None:
        progress(len(kinds), len(kinds), "done")
    return results


def _fio(job: str, runner: Runner, *, timeout: float) -> output.FioOutput:
    return fiorun.run_job(job, timeout=timeout, runner=runner, what="the calibration job")
