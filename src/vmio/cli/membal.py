"""``vmio membal sim SCENARIO [--json] [--plots DIR] [--sample-rate R | --sample-size S]``: simulate memory
policies and compare to the bounds; ``vmio membal mrc TRACE [--sample-rate R | --sample-size S]``: the
miss-ratio curve of a trace of any length, streamed; ``vmio membal run ...`` (in ``cli.membal_live``): drive real
VMs' balloons with a live policy."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from vmio.cli import argtypes
from vmio.cli.membal_live import add_run
from vmio.cli.mrc_args import sampling, sampling_options
from vmio.errors import InputError
from vmio.units import format_size

# the simulator and the curves (numpy, numba) are imported when a command runs, not for its --help
if TYPE_CHECKING:
    from vmio.membal.outcome import Outcome
    from vmio.mrc.curve import MissRatioCurve


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``membal`` and its sub-commands to ``sub``."""
    parser = sub.add_parser("membal", help="cache-aware memory balancing between VMs")
    inner = parser.add_subparsers(dest="membal_command", metavar="SUBCOMMAND")
    inner.required = True
    sim = inner.add_parser("sim", help="simulate the scenario's policies against the optimal split")
    sim.add_argument("scenario", metavar="SCENARIO", help="scenario TOML file")
    sim.add_argument("--json", action="store_true", help="print the results as JSON")
    sim.add_argument(
        "--plots", metavar="DIR", type=argtypes.out_dir, help="write hit-ratio and memory plots (PNG, SVG)"
    )
    sampling_options(sim, "the bounds' miss-ratio curves (default: exact)")
    sim.set_defaults(handler=_sim)
    mrc = inner.add_parser("mrc", help="the LRU miss-ratio curve of a block trace, read as a stream")
    mrc.add_argument(
        "trace", metavar="TRACE", type=Path, help="CloudPhysics vSCSI CSV (version,time,op,size,lbn)"
    )
    mrc.add_argument("--page", type=argtypes.extent, default=4096, help="page size (default 4k)")
    mrc.add_argument(
        "--chunk",
        type=argtypes.count(1, 1 << 30),
        help="pages read per chunk",
    )
    mrc.add_argument(
        "--points", type=argtypes.count(1, 100000), default=20, help="cache sizes printed (default 20)"
    )
    mrc.add_argument("--json", action="store_true", help="print the curve as JSON")
    sampling_options(mrc, "the curve (default: exact)")
    mrc.set_defaults(handler=_mrc)
    add_run(inner)


def _mrc(args: argparse.Namespace) -> int:
    from vmio.mrc.curve import stream_curve
    from vmio.traces.cloudphysics import DEFAULT_CHUNK, iter_vscsi_pages

    chunk = DEFAULT_CHUNK if args.chunk is None else args.chunk
    if chunk < 1 or args.points < 2:
        raise InputError(f"--chunk {chunk!r} must be at least 1 and --points {args.points!r} at least 2")
    if not args.page or args.page & (args.page - 1):
        raise InputError(f"--page {args.page!r} is not a power of two; use a page size such as '4k'")
    curve = stream_curve(iter_vscsi_pages(args.trace, args.page, chunk), sampling(args))
    if args.json:
        print(json.dumps(curve_json(curve, args.page, args.points), indent=2))
    else:
        print(render_curve(curve, args.trace.name, args.page, args.points))
    return 0


def curve_points(curve: MissRatioCurve, points: int) -> list[int]:
    """``points`` cache sizes (pages) from one page to the largest distance the curve saw, evenly spaced."""
    top = max(int(curve.sizes[-1]), 1)
    return sorted({max(1, round(top * i / (points - 1))) for i in range(points)})


def curve_json(curve: MissRatioCurve, page: int, points: int) -> dict[str, object]:
    sizes = curve_points(curve, points)
    return {
        "method": curve.method,
        "accesses": curve.accesses,
        "sampled": curve.sampled,
        "keys": curve.keys,
        "rate": curve.rate,
        "page": page,
        "curve": [
            {"pages": c, "bytes": c * page, "miss_ratio": round(float(m), 6)}
            for c, m in zip(sizes, curve.at(sizes), strict=True)
        ],
    }


def render_curve(curve: MissRatioCurve, name: str, page: int, points: int) -> str:
    """The text report: how the curve was built, then cache size → miss ratio."""
    sizes = curve_points(curve, points)
    lines = [
        f"{name}: {curve.accesses} page accesses, {curve.method}: {curve.sampled} sampled accesses, "
        f"{curve.keys} keys held, rate {curve.rate:.6g} at the end",
        f"{'cache':>10}{'pages':>12}{'miss ratio':>12}",
    ]
    for c, m in zip(sizes, curve.at(sizes), strict=True):
        lines.append(f"{format_size(c * page):>10}{c:>12}{float(m):>12.4f}")
    return "\n".join(lines)


def _sim(args: argparse.Namespace) -> int:
    from vmio.membal.outcome import outcome_json, run_scenario
    from vmio.membal.scenario import load_scenario

    outcome = run_scenario(load_scenario(args.scenario), curves=sampling(args))
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
    if out.curves.exact:
        lines.append(
            f"{'optimal':<12}{out.optimal.hit_ratio:>10.4f}   (best split per epoch, exact MRCs: a bound)"
        )
    else:
        lines.append(
            f"{'optimal':<12}{out.optimal.hit_ratio:>10.4f}   (best split per epoch, MRCs "
            f"{out.curves.describe()}: an estimate of the bound)"
        )
    lines.append(f"{'oracle':<12}{out.oracle.hit_ratio:>10.4f}   (best static split: {split})")
    return "\n".join(lines)
