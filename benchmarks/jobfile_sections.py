"""Job files of many sections: `vmio run JOB --dry-run` for 100 sections up to the limit, time per section.

Run: .venv/bin/python benchmarks/jobfile_sections.py [--sizes 100,1000,...] [--runs N]
Each size is a job file of that many sections (a [global] of four options, then sections alternating
read, randread and a mixed 70/30 pattern, no stonewall: each runs beside all the others, the worst case
for reading which sections fio runs together). Prints the file's size, the wall time of
`vmio run JOB --target FILE --dry-run` (median of N runs, each a fresh interpreter) and the time per
section, whole and net of start-up (a 3-section file's time): the net figure stays flat when reading is
linear. The limit is `vmio.spec.fiofile.MAX_SECTIONS`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vmio.spec.fiofile import MAX_SECTIONS

PATTERNS = ("rw=read\nbs=4k\n", "rw=randread\nbs=8k\niodepth=4\n", "rw=randrw\nrwmixread=70\nbs=16k\n")


def job_file(sections: int) -> str:
    head = "[global]\nioengine=psync\ndirect=0\nnumjobs=1\nruntime=1\n\n"
    return head + "".join(f"[job{i}]\n{PATTERNS[i % 3]}\n" for i in range(sections))


def dry_run(job: Path, target: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "vmio", "run", str(job), "--target", str(target), "--size", "1M", "--dry-run"],
        check=True, stdout=subprocess.DEVNULL, timeout=1800,
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=f"100,1000,3000,{MAX_SECTIONS}")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"limit: {MAX_SECTIONS} sections per job file")
    print(f"{'sections':>9} {'file KB':>8} {'dry-run s':>10} {'range s':>15} {'ms/section':>11} {'net':>7}")
    with tempfile.TemporaryDirectory(prefix="vmio-bench-") as tmp:
        one = Path(tmp) / "one.fio"
        one.write_text(job_file(3))
        dry_run(one, Path(tmp) / "target")  # warm: fio's option names asked and cached
        base = statistics.median(dry_run(one, Path(tmp) / "target") for _ in range(args.runs))
        print(f"a 3-section file: {base:.2f} s (start-up); net = (dry-run - that) per section")
        for n in (int(s) for s in args.sizes.split(",")):
            job = Path(tmp) / f"s{n}.fio"
            job.write_text(job_file(n))
            times = [dry_run(job, Path(tmp) / "target") for _ in range(args.runs)]
            med = statistics.median(times)
            print(
                f"{n:>9} {job.stat().st_size / 1024:>8.0f} {med:>10.2f} "
                f"{min(times):>7.2f}-{max(times):<7.2f} {1000 * med / n:>11.3f} "
                f"{1000 * max(0.0, med - base) / n:>7.3f}"
            )


if __name__ == "__main__":
    main()
