"""How long `vmio reproduce bitisle-dstore-2014 --scale quick` takes end to end (the goal: about 3 minutes on
2 cores), with what else the host was doing meanwhile.

Run (as root, with Ceph installed): .venv/bin/python benchmarks/dstore_reproduce.py [--runs N] [--conf CONF]
Prints per run the wall time, vmio's own CPU time (user + system of it and its children: fio, ceph, rbd; the
Ceph daemons it starts are not its children), the host's load average before and after, and then the median.
The throwaway cluster's start is part of the time (about 20 s on an idle host); with ``--conf`` an existing
cluster is used instead and its start is not. On a host busy with other work the wall time grows with the
load: read it beside the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
GOAL_S = 180.0


def one(conf: str | None) -> tuple[float, float, float, float]:
    """(wall s, CPU s of vmio and its children, load before, load after) of one quick reproduction."""
    with tempfile.TemporaryDirectory(prefix="vmio-bench-", dir="/var/tmp") as work:
        argv = [sys.executable, "-m", "vmio", "reproduce", "bitisle-dstore-2014", "--scale", "quick",
                "-o", f"{work}/out", "--db", f"{work}/r.db", "--disk-dir", work]  # fmt: skip
        if conf:
            argv += ["--conf", conf]
        before = os.getloadavg()[0]
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        done = subprocess.run(argv, env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True)
        wall = time.monotonic() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            sys.exit(f"vmio reproduce failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return wall, cpu, before, os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--conf", help="an existing cluster's ceph.conf (else a throwaway cluster per run)")
    args = parser.parse_args()
    print(f"host: {os.cpu_count()} cores; goal {GOAL_S:.0f} s")
    walls = []
    for i in range(args.runs):
        wall, cpu, before, after = one(args.conf)
        walls.append(wall)
        print(f"run {i + 1}: {wall:6.1f} s wall, {cpu:5.1f} s CPU of vmio and its children, "
              f"load average {before:.1f} before, {after:.1f} after")  # fmt: skip
    print(f"median {statistics.median(walls):.1f} s over {len(walls)} run(s)")


if __name__ == "__main__":
    main()
