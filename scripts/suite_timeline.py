"""Where the suite's time went: read the lines that ``VMIO_TEST_TIMELINE=FILE`` had each test write
(tests/conftest.py) and print each worker's busy, waiting and idle time, the CPU the tests used against their
wall time (what waits rather than computes), the tests on each worker's last stretch and the slowest.

    VMIO_TEST_TIMELINE=/tmp/t.jsonl make test      # or any pytest run, with or without workers
    .venv/bin/python scripts/suite_timeline.py /tmp/t.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("timeline", type=Path, help="the file VMIO_TEST_TIMELINE named")
    parser.add_argument("--top", type=int, default=20, help="how many of the slowest tests to list")
    args = parser.parse_args(argv)
    try:
        rows = [json.loads(line) for line in args.timeline.read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as e:
        print(f"suite_timeline: cannot read {str(args.timeline)!r}: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"suite_timeline: {str(args.timeline)!r} holds no test", file=sys.stderr)
        return 2
    first, last = min(r["start"] for r in rows), max(r["end"] for r in rows)
    span = last - first
    by_worker: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in rows:
        by_worker[r["worker"]].append(r)
    print(f"{len(rows)} tests, {span:.0f} s from the first start to the last end")
    print("worker  tests  running s  waiting for alone s  idle s  ends at s  test CPU s  CPU/running")
    for worker, mine in sorted(by_worker.items()):
        waited = sum(r["waited"] for r in mine)
        busy = sum(r["end"] - r["start"] for r in mine) - waited
        cpu = sum(r["cpu"] for r in mine)
        end = max(r["end"] for r in mine) - first
        idle = span - busy - waited
        print(
            f"{worker:6}  {len(mine):5}  {busy:9.0f}  {waited:19.0f}  {idle:6.0f}  {end:9.0f}  {cpu:10.0f}"
            f"  {cpu / busy if busy else 0:11.2f}"
        )
    alone = [r for r in rows if r["alone"]]
    if alone:
        a0, a1 = min(r["start"] for r in alone) - first, max(r["end"] for r in alone) - first
        print(f"alone tests: {len(alone)}, from {a0:.0f} s to {a1:.0f} s")
    print(
        f"\nthe {args.top} slowest (wall s = setup + call + teardown; CPU s of the worker and reaped children)"
    )
    print("   wall   setup    call  CPU/wall  worker  starts at s  test")
    for r in sorted(rows, key=lambda r: r["end"] - r["start"] - r["waited"], reverse=True)[: args.top]:
        wall = r["end"] - r["start"] - r["waited"]
        print(
            f"{wall:7.1f} {r['setup']:7.1f} {r['call']:7.1f}  {r['cpu'] / wall if wall else 0:8.2f}  "
            f"{r['worker']:6}  {r['start'] - first:11.0f}  {r['test']}"
        )
    print("\neach worker's last 5 tests (the tail: what ran while the other worker had ended)")
    for worker, mine in sorted(by_worker.items()):
        for r in sorted(mine, key=lambda r: r["end"])[-5:]:
            print(f"  {worker:6} {r['start'] - first:7.0f} -> {r['end'] - first:7.0f}  {r['test']}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # piped into head: the reader has what it wanted
        sys.stderr.close()
        sys.exit(0)
