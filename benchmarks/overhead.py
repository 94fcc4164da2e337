"""What vmio costs over plain fio, and what its sampler costs.

1. The same fio job run raw (``fio job.fio``) and through ``vmio run``, alternating, N pairs; prints each
   pair's IOPS and the median ratio vmio/raw (goal >= 0.99).
2. The sampler's CPU cost with the probes a host run uses, at 1 s and 100 ms intervals, as % of one core
   (goal <= 1 % at 1 s).

Usage: python benchmarks/overhead.py [--pairs 5] [--runtime 5] [--dir /var/lib/vmio/bench]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vmio.fio import jobfile, output
from vmio.metrics.sampler import CpuProbe, DiskProbe, Probe, Sampler
from vmio.spec import loads_spec
from vmio.store import Store
from vmio.store.rows import point_rows
from vmio.system.blockdev import device_chain

SPEC = """
[campaign]
name = "overhead"
[[target]]
name = "bare"
path = "{file}"
size = "256M"
[[workload]]
name = "4k-randread"
rw = "randread"
bs = "4k"
iodepth = 16
runtime = "{runtime}s"
"""


def raw_iops(job: Path) -> float:
    out = subprocess.run(
        ["fio", "--output-format=json", str(job)], capture_output=True, text=True, timeout=300, check=True
    )
    return sum(r.iops for r in output.parse(out.stdout).results)


def vmio_iops(spec: Path, db: Path) -> float:
    subprocess.run([sys.executable, "-m", "vmio", "run", str(spec), "--db", str(db), "--force"],
                   capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    with Store(db) as store:
        return float(point_rows(store, "overhead")[0].read_iops)


VM_TARGET = """
[[target]]
name = "vm"
kind = "qemu"
backing = ["{file}"]
size = "256M"
"""


def vm_iops(spec: Path, db: Path, *, guarded: bool) -> float:
    """One VM campaign in this process; ``guarded`` False switches the port guard off for the run."""
    from vmio.cli import main as vmio_main
    from vmio.system import guard

    add = guard.PortGuard.add
    if not guarded:
        guard.PortGuard.add = lambda self, port: None  # type: ignore[method-assign]
    try:
        if vmio_main(["run", str(spec), "--db", str(db), "--force"]) != 0:
            raise SystemExit("the VM campaign failed")
    finally:
        guard.PortGuard.add = add  # type: ignore[method-assign]
    with Store(db) as store:
        row = point_rows(store, "overhead")[0]
    print(f"      ({'guarded' if guarded else 'unguarded'}: accel {row.accel}, QEMU {row.qemu_version})")
    return float(row.read_iops)


def vm_pairs(work: Path, pairs: int, runtime: int) -> None:
    spec = work / "vm.toml"
    text = SPEC.format(file=work / "disk.img", runtime=runtime)
    head, _, workload = text.partition("[[workload]]")
    spec.write_text(head.split("[[target]]")[0] + VM_TARGET.format(file=work / "disk.img") + "[[workload]]"
                    + workload)  # fmt: skip
    ratios = []
    print("pair  guarded IOPS  unguarded IOPS  guarded/unguarded")
    for i in range(pairs):
        first = i % 2 == 0
        a = vm_iops(spec, work / "vm.db", guarded=first)
        b = vm_iops(spec, work / "vm.db", guarded=not first)
        on, off = (a, b) if first else (b, a)
        ratios.append(on / off)
        print(f"{i + 1:>4}  {on:>12.0f}  {off:>14.0f}  {on / off:>17.3f}")
    print(f"median guarded/unguarded IOPS ratio: {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")  # fmt: skip
    print(json.dumps({"vm_median_ratio": statistics.median(ratios), "vm_ratios": ratios}))


def sampler_cost(probes: list[Probe], interval: float, seconds: float) -> float:
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    with Sampler(probes, interval):
        time.sleep(seconds)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return 100.0 * cpu / wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=5)
    ap.add_argument("--dir", default="/var/lib/vmio/bench")
    ap.add_argument("--vm", action="store_true", help="only the VM case: guarded vs unguarded fio port")
    args = ap.parse_args()
    base = Path(args.dir)
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="overhead-", dir=base))
    try:
        spec = work / "spec.toml"
        spec.write_text(SPEC.format(file=work / "disk.img", runtime=args.runtime))
        camp = loads_spec(spec.read_text())
        w = camp.workloads[0]
        job = work / "raw.fio"
        job.write_text(jobfile.render(w, bs=4096, offered_iops=None, load_processes=0,
                                      place=jobfile.Placement(str(work / "disk.img"), 256 << 20)))  # fmt: skip
        vmio_iops(spec, work / "warm.db")  # creates and writes the file, warms caches
        if args.vm:
            vm_pairs(work, args.pairs, args.runtime)
            return 0
        ratios = []
        print(f"fio job: 4k randread, iodepth 16, {args.runtime} s, file on {device_chain(work)}")
        print("pair  raw IOPS    vmio IOPS   vmio/raw")
        for i in range(args.pairs):
            first_raw = i % 2 == 0  # alternate the order to cancel drift
            a = raw_iops(job) if first_raw else vmio_iops(spec, work / "b.db")
            b = vmio_iops(spec, work / "b.db") if first_raw else raw_iops(job)
            raw, through = (a, b) if first_raw else (b, a)
            ratios.append(through / raw)
            print(f"{i + 1:>4}  {raw:>10.0f}  {through:>10.0f}  {through / raw:>8.3f}")
        median = statistics.median(ratios)
        print(
            f"median vmio/raw IOPS ratio: {median:.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}; goal >= 0.99)"
        )
        probes: list[Probe] = [DiskProbe(d) for d in device_chain(work)]
        probes.append(CpuProbe())
        for interval, seconds in ((1.0, 20.0), (0.1, 10.0)):
            cost = sampler_cost(probes, interval, seconds)
            print(f"sampler CPU at {interval:g} s interval: {cost:.3f} % of one core over {seconds:g} s"
                  + (" (goal <= 1 %)" if interval == 1.0 else ""))  # fmt: skip
        print(json.dumps({"median_ratio": median, "ratios": ratios}))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
