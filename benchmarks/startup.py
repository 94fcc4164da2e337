"""Start-up benchmark: what a `vmio` command costs before it does anything.

Run: .venv/bin/python benchmarks/startup.py [--runs N] [--before CHECKOUT]
Prints the wall time of `vmio --version`, `vmio --help` and every command's and sub-command's `--help` (found
from the parser; median and range over N runs, each a fresh interpreter, interleaved with a bare `python -c
pass` measured the same way), each against `--version` (the goal: within 0.15 s of it), and beside it the
CPU time each took (user + system), which a machine busy with other work inflates far less than the wall. With `--before` the
same commands run from another checkout's `src` too (e.g. `git worktree add /tmp/before main`), interleaved,
in a column beside. Then the heaviest imports outside vmio of `vmio --help` from Python's own `-X importtime`
account. A command imports what it runs when it runs (tests/test_cli_startup.py), so a help imports no
plotting, arrays, JIT or event loop.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
GOAL_S = 0.15


def commands() -> dict[str, list[str]]:
    """name -> vmio's arguments: --version, --help, and every command's help, from this checkout's parser."""
    sys.path.insert(0, SRC)
    from vmio.cli.main import build_parser

    found: dict[str, list[str]] = {"--version": ["--version"]}

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        found[" ".join([*path, "--help"])] = [*path, "--help"]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])

    walk(build_parser(), [])
    return found


def wall(src: str, args: list[str]) -> tuple[float, float] | None:
    """Wall and CPU (user + system) seconds of `python -m vmio ARGS` run from ``src``; None where that
    checkout has no such command (a command added since)."""
    env = {**os.environ, "PYTHONPATH": src}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vmio", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        timeout=60,
    )
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        return None
    return took, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def bare() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=60)
    return time.perf_counter() - start


def heaviest(src: str, args: list[str], top: int) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the imports outside vmio of `python -X importtime -m vmio ARGS`, largest
    first."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "vmio", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True, timeout=60,
        env={**os.environ, "PYTHONPATH": src},
    ).stderr  # fmt: skip
    rows = []
    for line in err.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)", line)
        if m and m.group(2).split(".")[0] != "vmio":
            rows.append((int(m.group(1)), m.group(2)))
    shown: list[tuple[int, str]] = []
    for us, module in sorted(rows, reverse=True):
        if not any(module.startswith(name + ".") for _, name in shown):  # a part of one already shown
            shown.append((us, module))
    return shown[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", type=Path, help="another checkout (its src/ is run) to time beside this one")
    args = ap.parse_args()
    cmds = commands()
    sides = {"now": SRC}
    if args.before is not None:
        sides = {"before": str(args.before.resolve() / "src"), **sides}
    times: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    base: list[float] = []
    for src in sides.values():  # warm the page cache
        for cmd in cmds.values():
            wall(src, cmd)
    for _ in range(args.runs):
        base.append(bare())
        for name, cmd in cmds.items():
            for side, src in sides.items():
                measured = wall(src, cmd)
                if measured is not None:
                    times.setdefault((side, name), []).append(measured[0])
                    cpus.setdefault((side, name), []).append(measured[1])

    def med(side: str, name: str, of: dict[tuple[str, str], list[float]] = times) -> float:
        return statistics.median(of[(side, name)])

    def has(side: str) -> list[str]:
        return [n for n in cmds if (side, n) in times]

    print(
        f"over {args.runs} runs: wall median (min-max), its difference from --version, and the median CPU "
        f"(user + system: what a busy machine does not inflate); python -c pass: {statistics.median(base):.3f} s"
    )
    head = "".join(f"{side + ' wall':>22}{'- --version':>12}{'CPU':>7}{'- --version':>12}" for side in sides)
    print(f"  {'command':<30}{head}")
    for name in cmds:
        cells = ""
        for side in sides:
            if (side, name) not in times:
                cells += f"{'(no such command)':>53}"
                continue
            values = times[(side, name)]
            cells += f"{med(side, name):7.3f} ({min(values):.3f}-{max(values):.3f})"
            cells += f"{med(side, name) - med(side, '--version'):+12.3f}"
            cells += (
                f"{med(side, name, cpus):7.3f}{med(side, name, cpus) - med(side, '--version', cpus):+12.3f}"
            )
        print(f"  {name:<30}{cells}")
    for side in sides:
        for what, of in (("wall", times), ("CPU", cpus)):
            over = [n for n in has(side) if med(side, n, of) - med(side, "--version", of) > GOAL_S]
            worst = max(has(side), key=lambda n: med(side, n, of))
            print(
                f"{side}, {what}: the slowest is `vmio {worst}`, {med(side, worst, of) - med(side, '--version', of):+.3f} s "
                f"from --version; {len(over)} of {len(has(side))} beyond +{GOAL_S} s{': ' + ', '.join(over) if over else ''}"
            )
    for side, src in sides.items():
        print(f"heaviest imports outside vmio of `vmio --help` ({side}, cumulative):")
        for us, module in heaviest(src, ["--help"], 8) or [(0, "(none)")]:
            print(f"  {us / 1e6:6.3f} s  {module}")


if __name__ == "__main__":
    main()
