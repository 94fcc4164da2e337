"""``vmio membal sim SCENARIO [--json] [--plots DIR]``: simulate memory policies and compare to the bounds;
``vmio membal run ...`` (in ``livecli``): drive real VMs' balloons with a live policy."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vmio.cli.membal_live import add_run
from vmio.errors import InputError
from vmio.membal.outcome import Outcome, outcome_json, run_scenario
from vmio.membal.scenario import load_scenario
from vmio.units import format_size


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``membal`` and its sub-commands to ``sub``."""
    parser = sub.add_parser("membal", help="cache-aware memory balancing between VMs")
    inner = parser.add_subparsers(dest="membal_command", metavar="SUBCOMMAND")
    inner.required = True
    sim = inner.add_parser("sim", help="simulate the scenario's policies against the optimal split")
    sim.add_argument("scenario", metavar="SCENARIO", help="scenario TOML file")
    sim.add_argument("--json", action="store_true", help="print the results as JSON")
    sim.add_argument("--plots", metavar="DIR", type=Path, help="write hit-ratio and memory plots (PNG, SVG)")
    sim.set_defaults(handler=_sim)
    add_run(inner)


def _sim(args: argparse.Namespace) -> int:
    outcome = run_scenario(load_scenario(args.scenario))
    if args.plots is not None:
        from vmio.membal.plots import write_plots

        try:
            paths = write_plots(outcome, args.plots)
        except OSError as exc:
            raise InputError(f"--plots {str(args.plots)!r}: cannot write the plots there: {exc}") from exc
    else:
        paths = []
    if args.json:
        print(json.dumps(outcome_json(outcome), indent=2))
    else:
        print(render_table(outcome))
        for p in paths:
            print(f"wrote {p}")
    return 0


def render_table(out: Outcome) -> str:
    """The text report: per policy, total hit ratio, against equal and against the optimal bound."""
    s = out.scenario
    size = format_size(s.memory * s.page)
    lines = [
        f"scenario {s.name}: {len(s.vms)} VMs sharing {size}, {s.accesses} accesses, epoch {s.epoch}",
        f"{'policy':<12}{'hit ratio':>10}{'vs equal':>10}{'vs optimal':>12}{'efficiency':>12}  memory at end",
    ]
    names = [vm.name for vm in s.vms]
    for name, run in out.runs.items():
        _, eff = run.efficiency()
        mem = " ".join(
            f"{n}={format_size(int(a) * s.page)}" for n, a in zip(names, run.allocation[-1], strict=True)
        )
        lines.append(
            f"{name:<12}{run.hit_ratio:>10.4f}{out.vs_equal(name):>10.3f}{out.vs_optimal(name):>12.3f}"
            f"{float(eff.mean()):>12.3f}  {mem}"
        )
    split = " ".join(
        f"{n}={format_size(int(a) * s.page)}" for n, a in zip(names, out.oracle.allocation[0], strict=True)
    )
    lines.append(
        f"{'optimal':<12}{out.optimal.hit_ratio:>10.4f}   (best split per epoch, exact MRCs: a bound)"
    )
    lines.append(f"{'oracle':<12}{out.oracle.hit_ratio:>10.4f}   (best static split: {split})")
    return "\n".join(lines)
