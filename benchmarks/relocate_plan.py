"""`vmio relocate plan` on traces of large images: wall, CPU and max RSS of the whole command, by turns.

Run: .venv/bin/python benchmarks/relocate_plan.py [--runs N] [--before OTHER_CHECKOUT]
Each case is `python -m vmio relocate plan TRACE -o OUT`, a fresh interpreter each run (its imports count, as
a user waits for them), timed from this checkout's `src` and, with `--before`, from another checkout's
`src` (e.g. `git worktree add --detach /tmp/before main`), the two sides one after the other in each round.
Per side: the median wall (range), the median CPU (user + system: what a host busy with other work inflates
far less) and the largest max RSS; then whether both sides wrote the same plan, byte for byte.

The cases: one request of no bytes ~28 TiB into its image (the trace that made `test_traces` hang: the
image's size comes from its highest request, 29.6 M extents of 1 MiB), 20,000 random requests over that
image, and the CloudPhysics sample (113,872 requests over ~33.6 GB) where it is on this host.
Goal for the first: <= 2 s wall and <= 300 MB max RSS (it was 25 s and 2.7 GB).

Measured (2 cores shared with other engineers' tests, load 8-9, `--runs 3 --before` the tree before
issue 42rl):
  one request, 28 TiB    before: 21.81 s (19.19-23.91) wall, 7.71 s CPU, 2643 MB | now: 0.54 s (0.47-0.70)
                         wall, 0.21 s CPU,   37 MB; plans identical
  20k requests, 28 TiB   before: 19.02 s (15.95-33.64) wall, 8.00 s CPU, 2652 MB | now: 1.90 s (1.17-1.92)
                         wall, 0.59 s CPU,   61 MB; plans identical
  CloudPhysics sample    before:  3.01 s (2.91-4.93) wall,  1.44 s CPU,  149 MB | now: 1.75 s (1.36-2.31)
                         wall, 0.71 s CPU,   56 MB; plans identical
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

SRC = str(Path(__file__).resolve().parents[1] / "src")
CLOUDPHYSICS = Path("/work/shared/traces/cloudphysics_vscsi_sample.csv")
HUGE_LBN = 60626179329  # sectors: the request ~28 TiB into its image


def traces(folder: Path) -> dict[str, Path]:
    """name -> trace file (CloudPhysics' columns: version,time,op,size,lbn)."""
    one = folder / "one-request-28TiB.csv"
    one.write_text(f"version,time,op,size,lbn\n1,0,2a,0,{HUGE_LBN}\n")
    rng = np.random.default_rng(1)
    n = 20_000
    lbn = rng.integers(0, HUGE_LBN, n)
    lbn[-1] = HUGE_LBN  # the same image size as the first case
    ops = rng.choice(["28", "2a"], n)
    rows = "".join(f"1,{t},{op},4096,{b}\n" for t, (op, b) in enumerate(zip(ops, lbn, strict=True)))
    spread = folder / "20k-requests-28TiB.csv"
    spread.write_text("version,time,op,size,lbn\n" + rows)
    found = {"one request, 28 TiB": one, "20k requests, 28 TiB": spread}
    if CLOUDPHYSICS.is_file():
        found["CloudPhysics sample"] = CLOUDPHYSICS
    return found


def run(src: str, trace: Path, out: Path, timeout: float = 300.0) -> tuple[float, float, float]:
    """Wall s, CPU s (user + system) and max RSS (MB) of `vmio relocate plan TRACE -o OUT` from ``src``."""
    env = {**os.environ, "PYTHONPATH": src}
    argv = [sys.executable, "-m", "vmio", "relocate", "plan", str(trace), "-o", str(out)]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage (not every child's maximum)
    finally:
        timer.cancel()
    took = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({status}): {err[-2000:]}")
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", type=Path, help="another checkout (its src/ is run) to time beside this one")
    args = ap.parse_args()
    sides = {"now": SRC}
    if args.before is not None:
        sides = {"before": str(args.before.resolve() / "src"), **sides}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = traces(folder)
        figures: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        for _ in range(args.runs):
            for name, trace in cases.items():
                for side, src in sides.items():
                    out = folder / f"{side}-{trace.stem}.json"
                    figures.setdefault((name, side), []).append(run(src, trace, out))
        print(
            f"`vmio relocate plan TRACE -o OUT`, {args.runs} runs a side by turns; wall median (min-max), "
            f"CPU median, max RSS largest; load average now {os.getloadavg()[0]:.1f}"
        )
        for name, trace in cases.items():
            cells = []
            for side in sides:
                rows = figures[(name, side)]
                walls = [r[0] for r in rows]
                cells.append(
                    f"{side}: {statistics.median(walls):6.2f} s ({min(walls):.2f}-{max(walls):.2f}) wall, "
                    f"{statistics.median(r[1] for r in rows):6.2f} s CPU, {max(r[2] for r in rows):7.0f} MB"
                )
            same = ""
            if len(sides) == 2:
                plans = [folder / f"{side}-{trace.stem}.json" for side in sides]
                same = "; plans identical" if filecmp.cmp(*plans, shallow=False) else "; PLANS DIFFER"
            print(f"  {name:<22} " + " | ".join(cells) + same)


if __name__ == "__main__":
    main()
