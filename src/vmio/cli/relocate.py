"""``vmio relocate analyze | plan | evaluate | apply``."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from vmio.cli import argtypes
from vmio.cli.argtypes import size
from vmio.cli.mrc_args import sampling, sampling_options
from vmio.errors import InputError
from vmio.relocate.requests import DEPTH, POLICY, ApplyRequest, EvaluateRequest, PlanRequest
from vmio.units import format_size

if TYPE_CHECKING:
    Sub = argparse._SubParsersAction[argparse.ArgumentParser]


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number in (0, 1]")
    return value


def _size(n: int) -> str:
    """A default size as the help text spells it (``1M``, ``100G``)."""
    return format_size(n).upper()


def register(sub: Sub) -> None:
    parser = sub.add_parser("relocate", help="hot-spot relocation of VM images sharing one disk")
    rsub = parser.add_subparsers(dest="relocate_command", metavar="ACTION")
    rsub.required = True
    _add_analyze(rsub)
    _add_plan(rsub)
    _add_evaluate(rsub)
    _add_apply(rsub)
    _add_capture(rsub)


def _add_capture(rsub: Sub) -> None:
    p = rsub.add_parser(
        "capture", help="trace a host block device with blktrace (where the kernel allows it)"
    )
    p.add_argument("--device", type=Path, required=True, help="the block device holding the VM images")
    p.add_argument(
        "--seconds", type=argtypes.real(0.1, 86400), default=30.0, help="how long to trace (default 30)"
    )
    p.add_argument(
        "-o", "--output", type=argtypes.out_file, required=True, help="blkparse text output, for analyze/plan"
    )
    p.set_defaults(handler=_capture)


def _capture(args: argparse.Namespace) -> int:
    from vmio.relocate.capture import blktrace_capture

    if args.seconds <= 0:
        raise InputError(f"--seconds {args.seconds!r} must be positive")
    out = blktrace_capture(args.device, args.seconds, args.output)
    print(f"trace of {args.device} for {args.seconds:g} s written to {out} (vmio relocate analyze {out})")
    return 0


def _trace_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    p.add_argument("traces", nargs="*", metavar="TRACE", help="trace files")
    if required:
        p.add_argument(
            "--run",
            metavar="CAMPAIGN[:POINT]",
            help="instead of files: the VM traces vmio kept for a campaign (targets with trace = true)",
        )
        p.add_argument("--db", default=None, help="the store whose traces --run reads (default ./vmio.db)")
    p.add_argument(
        "--format", default=PlanRequest.format, help="auto | blkparse | fio | qemu | cloudphysics | csv"
    )
    p.add_argument(
        "--extent",
        type=argtypes.extent,
        default=PlanRequest.extent,
        help=f"extent size (default {_size(PlanRequest.extent)})",
    )


def _add_analyze(rsub: Sub) -> None:
    p = rsub.add_parser("analyze", help="heat per image: accesses per extent, hot set, plots")
    _trace_options(p, required=True)
    p.add_argument(
        "--coverage",
        type=_fraction,
        default=PlanRequest.coverage,
        help="hot set covers this share of accesses",
    )
    p.add_argument(
        "--plot-dir", type=argtypes.out_dir, help="write access-distribution and heat-over-time PNGs here"
    )
    p.add_argument(
        "--cache-curve",
        action="store_true",
        help="per image, the miss ratio of an LRU cache in front of it (what would still reach the disk)",
    )
    p.add_argument(
        "--cache",
        type=_sizes,
        metavar="SIZE,...",
        help="cache sizes for --cache-curve (default: 1/64, 1/16, 1/4, 1/2 and all of the pages each image touches)",
    )
    sampling_options(p, "--cache-curve (default: exact)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=_analyze)


def _sizes(text: str) -> tuple[int, ...]:
    try:
        values = tuple(size(part) for part in text.split(","))
    except (argparse.ArgumentTypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of sizes; use e.g. 64M,256M,1G") from None
    if any(v < 4096 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: every cache size must be at least one 4 KiB page")
    return values


def _plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hot-bytes", type=size, help="hot budget per image (default: --coverage)")
    p.add_argument(
        "--coverage",
        type=_fraction,
        default=PlanRequest.coverage,
        help="hot set covers this share of accesses",
    )
    p.add_argument("--zone", default=PlanRequest.zone, help="auto | after | start | center | EXTENT_NUMBER")
    p.add_argument("--order", default=PlanRequest.order, help="in-zone order: image | first | coaccess")


def _add_plan(rsub: Sub) -> None:
    p = rsub.add_parser("plan", help="a relocation plan from traces, as JSON")
    _trace_options(p, required=True)
    _plan_options(p)
    p.add_argument("--image", action="append", default=[], metavar="NAME=SIZE", help="an image's size")
    p.add_argument("--disk-size", type=size, help="disk size (default: the images plus their hot bytes)")
    p.add_argument("-o", "--output", type=argtypes.out_file, required=True, help="plan file to write")
    p.set_defaults(handler=_plan)


def _add_evaluate(rsub: Sub) -> None:
    p = rsub.add_parser("evaluate", help="replay a multi-VM stream before and after a plan on a disk model")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--trace", nargs="+", type=Path, metavar="FILE", help="trace files (one image each or more)"
    )
    src.add_argument(
        "--synthetic", choices=["ffsb"], help="an FFSB-like stream as kogakuin-relocate-2011 describes"
    )
    p.add_argument(
        "--format",
        default=EvaluateRequest.format,
        help="the traces' format: auto | blkparse | fio | qemu | cloudphysics | csv",
    )
    p.add_argument(
        "--extent",
        type=argtypes.extent,
        default=EvaluateRequest.extent,
        help="extent size (default %(default)s bytes)",
    )
    p.add_argument(
        "--vms",
        type=argtypes.count(1, 64),
        default=EvaluateRequest.vms,
        help="VMs sharing the disk (default %(default)s)",
    )
    p.add_argument(
        "--image-size",
        type=size,
        default=EvaluateRequest.image_size,
        help=f"image size (default {_size(EvaluateRequest.image_size)})",
    )
    p.add_argument(
        "--hot",
        type=size,
        default=EvaluateRequest.hot,
        help=f"hot bytes per image (default {_size(EvaluateRequest.hot)} as in kogakuin-relocate-2011)",
    )
    p.add_argument(
        "--ffsb-model",
        default=EvaluateRequest.ffsb_model,
        help="calibrated (FFSB's own profile, fitted on kogakuin-relocate-2011's 2 VMs; default) | uniform (the first model)",
    )
    p.add_argument(
        "--hot-fraction",
        type=_fraction,
        default=EvaluateRequest.hot_fraction,
        help="uniform model: share of requests in the hot region",
    )
    p.add_argument(
        "--threads",
        type=argtypes.count(1, 256),
        default=EvaluateRequest.threads,
        help=f"calibrated model: FFSB threads per VM (default {EvaluateRequest.threads})",
    )
    p.add_argument(
        "--cold-share",
        type=argtypes.real(0, 1),
        default=EvaluateRequest.cold_share,
        help="calibrated model: requests outside the file area (fitted)",
    )
    p.add_argument(
        "--requests",
        type=argtypes.count(1, 10_000_000),
        default=EvaluateRequest.requests,
        help="synthetic requests per VM",
    )
    p.add_argument(
        "--seed",
        type=argtypes.count(0, 2**63 - 1),
        default=EvaluateRequest.seed,
        help="the seed of the synthetic traces (default %(default)s)",
    )
    p.add_argument("--disk", default=EvaluateRequest.disk, help="disk model: 7200 | hp97560")
    p.add_argument(
        "--policy",
        default=None,
        help=f"fcfs | elevator | mq-deadline | bfq (the Linux schedulers as modelled; default {POLICY})",
    )
    p.add_argument(
        "--depth",
        type=argtypes.count(1, 4096),
        default=None,
        help="outstanding requests per VM (uniform model, traces) or per FFSB thread (calibrated); "
        f"default {DEPTH}",
    )
    p.add_argument("--open-loop", action="store_true", help="issue trace requests at their times instead")
    p.add_argument(
        "--zone", default=EvaluateRequest.zone, help="auto | seed | median | after | start | center | EXTENT"
    )
    p.add_argument(
        "--order",
        default=None,
        help="in-zone order: image | first | coaccess (default: image for the calibrated FFSB model, "
        "as kogakuin-relocate-2011 moved each hot region whole; coaccess otherwise)",
    )
    p.add_argument(
        "--plot", type=argtypes.out_file_anywhere, help="PNG of the access distribution before and after"
    )
    p.add_argument("--save-plan", type=argtypes.out_file, help="write the plan used to this file")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=_evaluate)


def _add_apply(rsub: Sub) -> None:
    p = rsub.add_parser("apply", help="apply a plan: to an image file, or generate dm / LVM steps")
    p.add_argument("plan", type=Path, help="the relocation plan (JSON) to apply")
    p.add_argument(
        "--to-image",
        type=argtypes.out_file,
        metavar="OUT",
        help="write the relocated disk here (+ .map, .journal)",
    )
    p.add_argument(
        "--source",
        type=Path,
        help="the shared disk (a file or block device, only read) in the layout before the plan",
    )
    p.add_argument("--rollback", action="store_true", help="remove what an interrupted apply wrote")
    p.add_argument("--rate", type=size, help="copy at most this many bytes per second")
    p.add_argument("--dm-tables", metavar="DEVICE", help="print device-mapper linear tables onto DEVICE")
    p.add_argument("--pvmove", metavar="PV", help="print pvmove commands for volumes on PV")
    p.set_defaults(handler=_apply)


def _traces_of(args: argparse.Namespace) -> Any:
    """The trace files named, or with ``--run`` the VM traces vmio kept beside the store."""
    if args.run:
        from vmio.cli.store_args import default_db
        from vmio.traces.vm_runs import beside_store, read_run_traces

        campaign, _, point = args.run.partition(":")
        return read_run_traces(beside_store(args.db or default_db()), campaign, point or None)
    if not args.traces:
        raise InputError("give trace files, or --run CAMPAIGN for the traces of vmio's own VM runs")
    return _read_traces(args.traces, args.format)


def _read_traces(paths: list[Path] | list[str], fmt: str) -> Any:
    from vmio.traces.readers import read_trace
    from vmio.traces.trace import concat

    return concat([read_trace(p, fmt) for p in paths])


def _analyze(args: argparse.Namespace) -> int:
    from vmio.relocate.commands import analyze_request

    curves = sampling(args) if args.cache_curve else None
    request = PlanRequest(format=args.format, extent=args.extent, coverage=args.coverage)
    found = analyze_request(
        _traces_of(args), request, curves=curves, cache=args.cache, plot_dir=args.plot_dir
    )
    if args.json:
        print(json.dumps(found.to_json(), indent=1))
        return 0
    print(
        f"{found.requests} requests, extent {format_size(args.extent)}, "
        f"hot = extents covering {args.coverage:.0%}"
    )
    for h in found.heat:
        print(
            f"{h.name}: {h.accesses} accesses on {h.extents_touched} extents; hot {h.hot_extents} extents "
            f"({format_size(h.hot_bytes)}) take {h.hot_share:.1%}"
        )
    for h, curve in zip(found.heat, found.curves or [], strict=False):
        points = ", ".join(f"{_mib(b)} {r:.3f}" for b, r in curve.points)
        print(f"{h.name}: LRU cache miss ratio ({curve.method}): {points}")
    return 0


def _mib(n: int) -> str:
    """A cache size for the text output: as given where it is round, else in MiB to one decimal."""
    return format_size(n) if n % (1 << 20) == 0 else f"{n / (1 << 20):.1f}M"


def _plan(args: argparse.Namespace) -> int:
    from vmio.relocate.commands import plan_request

    request = PlanRequest(
        format=args.format,
        extent=args.extent,
        coverage=args.coverage,
        hot_bytes=args.hot_bytes,
        zone=args.zone,
        order=args.order,
    )
    plan = plan_request(_traces_of(args), request, args.output, images=args.image, disk_bytes=args.disk_size)
    print(
        f"plan: {plan.zone_extents} hot extents into a zone at {format_size(plan.zone_start * args.extent)} "
        f"({plan.order} order), {len(plan.moves())} moves -> {args.output}"
    )
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from vmio.relocate.commands import evaluate_request, evaluation_lines

    result = evaluate_request(_request(EvaluateRequest, args))
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        print("\n".join(evaluation_lines(result)))
    return 0


def _apply(args: argparse.Namespace) -> int:
    from vmio.relocate.commands import apply_request

    if not (args.to_image or args.dm_tables or args.pvmove):
        raise InputError("apply needs --to-image OUT (with --source DISK), --dm-tables DEVICE or --pvmove PV")
    for line in apply_request(_request(ApplyRequest, args)):
        print(line)
    return 0


R = TypeVar("R")


def _request(kind: Callable[..., R], args: argparse.Namespace) -> R:
    """The typed request ``kind`` from the parsed options of the same names."""
    names = {f.name for f in dataclasses.fields(kind)}  # type: ignore[arg-type]
    values = {k: v for k, v in vars(args).items() if k in names}
    if "trace" in values:
        values["trace"] = tuple(values["trace"] or ())
    return kind(**values)
