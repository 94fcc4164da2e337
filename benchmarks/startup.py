"""Start-up benchmark: what a `vmio` command costs before it does anything.

Run: .venv/bin/python benchmarks/startup.py [--runs N]
Prints the wall time of `vmio --version`, `vmio run --help` and `vmio show --help` (median and range over N
runs, each a fresh interpreter, interleaved with a bare `python -c pass` measured the same way), and the
heaviest imports outside vmio of `vmio --version` and of `vmio run --help` from Python's own `-X importtime`
account. `vmio --version` imports no command module; a command imports only its own family's module
(`vmio.cli.main.FEATURES`), and the heavy libraries (matplotlib, numba) only where they are used.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

VMIO = str(Path(sys.executable).with_name("vmio"))
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "vmio --version": [VMIO, "--version"],
    "vmio run --help": [VMIO, "run", "--help"],
    "vmio show --help": [VMIO, "show", "--help"],
}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=60)
    return time.perf_counter() - start


def heaviest(args: list[str], top: int) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the imports outside vmio of `python -X importtime -m vmio ARGS`, largest
    first."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "vmio", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True, timeout=60,
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
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for cmd in COMMANDS.values():
        wall(cmd)  # warm the page cache
    for _ in range(args.runs):
        for name, cmd in COMMANDS.items():
            times[name].append(wall(cmd))
    print(f"wall time over {args.runs} runs (median, min-max):")
    for name, values in times.items():
        print(f"  {name:<20} {statistics.median(values):6.3f} s  ({min(values):.3f}-{max(values):.3f})")
    for args in (["--version"], ["run", "--help"]):
        print(f"heaviest imports outside vmio of `vmio {' '.join(args)}` (cumulative):")
        for us, module in heaviest(args, 8) or [(0, "(none)")]:
            print(f"  {us / 1e6:6.3f} s  {module}")


if __name__ == "__main__":
    main()
