"""What tracing the layers costs (docs/layers.md): the same bare point with and without ``--layers``.

Runs ``vmio run SPEC --force`` on a file target, with and without ``--layers``, in alternating pairs (the
order flips each pair, so a drift of the machine's load falls on both sides), and prints each pair's IOPS,
the ratio with/without, and the median ratio over the pairs (goal >= 0.95), then CPU per I/O with and
without: host-wide %usr + %sys over the measured window (the point's own figures) times the cores, divided
by the IOPS (other work on the host counts too: compare the medians, not one run).

With ``--vm`` the target is one VM (virtio-blk, cache none) on the same file: under TCG its IOPS vary too
much for the ratio to mean much, so read the CPU per I/O (host-wide, which includes QEMU's emulation).

Usage: python benchmarks/layers_overhead.py [--pairs 5] [--runtime 5] [--iodepth 16] [--vm] [--dir /var/tmp/vmio-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from vmio.store import Store
from vmio.store.rows import point_rows

SPEC = """
[campaign]
name = "layers-overhead"
{target}

[[workload]]
name = "4k-randread"
rw = "randread"
bs = "4k"
iodepth = {iodepth}
runtime = "{runtime}s"
ramp = "1s"
"""


def one(spec: Path, db: Path, layers: bool) -> tuple[float, float, object]:
    """IOPS, host CPU µs per I/O, and the layers of one run."""
    argv = [sys.executable, "-m", "vmio", "run", str(spec), "--db", str(db), "--force"]
    done = subprocess.run(
        [*argv, "--layers"] if layers else argv, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        sys.exit(f"vmio run failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    with Store(db) as store:
        [row] = point_rows(store, "layers-overhead")
        iops = float(row.read_iops)
        busy = (row.metric("cpu_usr_pct") or 0.0) + (row.metric("cpu_sys_pct") or 0.0)
        cores = row.host_facts.get("cores")
        n = cores if isinstance(cores, int) else os.cpu_count() or 1
        return iops, busy / 100 * n / iops * 1e6, row.layers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=5)
    ap.add_argument("--iodepth", type=int, default=16)
    ap.add_argument("--dir", default="/var/tmp/vmio-bench")
    ap.add_argument("--vm", action="store_true", help="one VM (TCG here) instead of the bare file")
    args = ap.parse_args()
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        spec = Path(tmp) / "spec.toml"
        disk = Path(tmp) / "disk.img"
        target = (
            f'[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["{disk}"]\nsize = "256M"\ncache = "none"\n'
            if args.vm
            else f'[[target]]\nname = "bare"\npath = "{disk}"\nsize = "256M"\n'
        )
        spec.write_text(SPEC.format(target=target, runtime=args.runtime, iodepth=args.iodepth))
        db = Path(tmp) / "b.db"
        ratios, cpu_on, cpu_off = [], [], []
        print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        print(f"{'pair':>4} {'without':>10} {'with':>10} {'ratio':>7} {'CPU us/IO without':>18} {'with':>8}")
        layers: object = None
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            got = {on: one(spec, db, on) for on in order}
            (off_iops, off_cpu, _), (on_iops, on_cpu, layers) = got[False], got[True]
            ratios.append(on_iops / off_iops)
            cpu_off.append(off_cpu)
            cpu_on.append(on_cpu)
            print(
                f"{pair + 1:>4} {off_iops:10.0f} {on_iops:10.0f} {ratios[-1]:7.3f} {off_cpu:18.2f} {on_cpu:8.2f}"
            )
        print(f"median IOPS ratio with/without layers: {statistics.median(ratios):.3f} (goal >= 0.95)")
        print(f"median host CPU per I/O: {statistics.median(cpu_off):.2f} us without, "
              f"{statistics.median(cpu_on):.2f} us with")  # fmt: skip
        print("the last traced point's layers:", json.dumps(layers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
