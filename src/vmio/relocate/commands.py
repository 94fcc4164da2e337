"""What the ``relocate`` sub-commands do, as functions returning data (the CLI prints it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from vmio.errors import InputError
from vmio.relocate.disk import builtin_disk
from vmio.relocate.ffsb import SEED_FIT, FfsbProfile, ffsb_layout, ffsb_profile_stream
from vmio.relocate.heat import (
    HotChoice,
    ImageHeat,
    extents_of,
    heat_over_time,
    pages_of,
    summarize,
)
from vmio.relocate.layout import Layout
from vmio.relocate.plan_io import plan_to_dict, plan_zone, read_plan, write_plan
from vmio.relocate.planner import Plan, build_plan
from vmio.relocate.requests import COVERAGE, DEPTH, POLICY, ApplyRequest, EvaluateRequest, PlanRequest
from vmio.relocate.synthetic import FfsbSpec, ffsb_stream, hot_regions
from vmio.system.output_paths import all_or_none
from vmio.traces.trace import Trace, concat
from vmio.units import format_size, parse_size

if TYPE_CHECKING:
    from vmio.mrc.curve import Sampling
    from vmio.mrc.points import CacheCurve
    from vmio.relocate.evaluate import Evaluation, ReplaySetup


def parse_images(specs: Sequence[str]) -> dict[str, int]:
    """``NAME=SIZE`` options to a dict."""
    out = {}
    for spec in specs:
        name, sep, size = spec.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = parse_size(size)
        except ValueError:
            raise InputError(f"--image {spec!r} is not NAME=SIZE such as 'vm1=100G'") from None
    return out


def layout_for(
    trace: Trace, image_opts: Sequence[str], extent: int, disk_bytes: int | None, hot_bytes: int | None
) -> Layout:
    """Images one after another; sizes from ``--image`` or the highest extent each image touches."""
    given = parse_images(image_opts)
    touched = trace.image_extent_bytes()
    sizes = []
    for i, name in enumerate(trace.images):
        size = given.get(name, extents_of(int(touched[i]), extent) * extent)
        if size < touched[i]:
            raise InputError(
                f"--image {name}={format_size(size)} is smaller than its accesses ({int(touched[i])} bytes)"
            )
        sizes.append(size)
    if disk_bytes is None:
        hot = hot_bytes if hot_bytes is not None else max(sizes, default=0)
        disk_bytes = sum(extents_of(s, extent) for s in sizes) * extent + hot * len(sizes)
    return Layout.consecutive(trace.images, sizes, extent, disk_bytes)


def plan_from_trace(
    trace: Trace, layout: Layout, hot_bytes: int | None, coverage: float, zone: str, order: str
) -> Plan:
    hot = HotChoice(hot_bytes, coverage).pick(trace, layout)
    return build_plan(layout, hot, position=zone, order=order, trace=trace)


def analyze_plots(trace: Trace, extent: int, out_dir: Path) -> list[Path]:
    """The access distribution over the images laid out one after another, and per-image heat over time."""
    from vmio.relocate import plots  # matplotlib: only where a figure is drawn, not for every sub-command

    layout = layout_for(trace, [], extent, None, 0)
    phys = layout.physical_offset(trace.image, trace.offset)
    paths: list[Path] = []
    with all_or_none(paths):  # every figure, or none of them
        paths.append(
            plots.access_distribution(
                phys,
                None,
                out_dir / "access-distribution.png",
                disk_bytes=layout.disk_extents * extent,
                title="accesses over disk address",
            )
        )
        for i, name in enumerate(trace.images):
            grid, edges, per = heat_over_time(trace, i, extent, layout.nextents[i])
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
            paths.append(
                plots.heat_over_time(
                    grid,
                    edges,
                    out_dir / f"heat-{safe}.png",
                    row_bytes=per * extent,
                    title=name,
                )
            )
    return paths


PAGE = 4096  # the page a cache curve counts in


@dataclass(frozen=True)
class Analysis:
    """``vmio relocate analyze``: the heat of each image, its LRU cache curve when asked, the figures."""

    requests: int
    request: PlanRequest
    time_unit: str | None
    heat: list[ImageHeat]
    curves: list[CacheCurve] | None
    plots: list[Path]

    def to_json(self) -> dict[str, object]:
        images = [h.as_dict() for h in self.heat]
        for image, curve in zip(images, self.curves or [], strict=False):
            image["cache_curve"] = curve.as_dict()
        return {
            "requests": self.requests,
            "extent_bytes": self.request.extent,
            "coverage": self.request.coverage,
            "time_unit": self.time_unit,
            "images": images,
        }


def analyze_request(
    trace: Trace,
    req: PlanRequest,
    *,
    curves: Sampling | None = None,
    cache: Sequence[int] | None = None,
    plot_dir: Path | None = None,
) -> Analysis:
    """Heat per image; with ``curves``, the miss-ratio curve of each image's pages (exact or sampled) at
    the ``cache`` sizes; with ``plot_dir``, the access distribution and heat over time as PNGs."""
    summary = summarize(trace, req.extent, req.coverage)
    found = None
    if curves is not None:
        from vmio.mrc.points import cache_curve  # the curves' compiled kernels: only when asked

        found = [cache_curve(pages_of(trace, i, PAGE), PAGE, cache, curves) for i in range(len(trace.images))]
    plotted = analyze_plots(trace, req.extent, plot_dir) if plot_dir else []
    return Analysis(len(trace), req, trace.time_unit, summary, found, plotted)


def plan_request(
    trace: Trace, req: PlanRequest, output: Path, *, images: Sequence[str] = (), disk_bytes: int | None = None
) -> Plan:
    """``vmio relocate plan``: the plan for ``trace`` on images laid out one after another, written to
    ``output``."""
    layout = layout_for(trace, images, req.extent, disk_bytes, req.hot_bytes)
    plan = plan_from_trace(trace, layout, req.hot_bytes, req.coverage, req.zone, req.order)
    write_plan(plan, output)
    return plan


SYNTHETIC_MODELS = ("calibrated", "uniform")
Source = Mapping[str, object]  # the ``source`` object of ``evaluate --json``: what was replayed, as JSON


@dataclass(frozen=True)
class EvaluationReport:
    """``vmio relocate evaluate``: the evaluation, what was replayed (``source``) and how (``setup``)."""

    evaluation: Evaluation
    source: Source
    setup: ReplaySetup
    before: NDArray[np.int64] | None = None  # each replayed request's disk address (bytes), original layout
    after: NDArray[np.int64] | None = None  # the same requests' addresses under the plan

    @property
    def calibrated(self) -> bool:
        """Replayed from the calibrated FFSB model (its depth is per benchmark thread)."""
        return self.source.get("model") == "calibrated"

    def zone(self) -> dict[str, object]:
        """The plan's zone as ``evaluate --json`` gives it."""
        return plan_zone(self.evaluation.plan)

    def to_json(self) -> dict[str, object]:
        ev, setup = self.evaluation, self.setup
        return {
            "before": ev.before,
            "after": ev.after,
            "gain": ev.gain,
            "order": ev.plan.order,
            "order_gains": ev.order_gains,
            "order_adds": ev.order_gains[ev.plan.order] - ev.order_gains["image"],
            "plan": plan_to_dict(ev.plan),
            "disk": {"model": setup.disk.name, "note": setup.disk.note},
            "replay": {
                "depth_per_image": setup.depth,
                "depth_per": "thread" if self.calibrated else "image",
                "policy": setup.policy,
                "queue": setup.queue,
            },
            "source": dict(self.source),
        }


def _uniform(args: EvaluateRequest, rng: np.random.Generator) -> tuple[Trace, Trace, Layout, Source, None]:
    """The first FFSB-like model: 4 KiB requests, ``--hot-fraction`` in one hot region, ``--depth`` threads."""
    spec = FfsbSpec(
        vms=args.vms,
        image_bytes=args.image_size,
        hot_bytes=args.hot,
        hot_fraction=args.hot_fraction,
        requests_per_vm=args.requests,
        threads=args.depth or DEPTH,
    )
    spec.check()
    disk = builtin_disk(args.disk)
    starts = hot_regions(spec, rng, args.extent)
    profile, stream = ffsb_stream(spec, starts, rng), ffsb_stream(spec, starts, rng)
    layout = Layout.consecutive(
        profile.images, [spec.image_bytes] * spec.vms, args.extent, disk.capacity_bytes
    )
    source = {
        "kind": "synthetic ffsb",
        "model": "uniform",
        "vms": spec.vms,
        "image_bytes": spec.image_bytes,
        "hot_bytes": spec.hot_bytes,
        "hot_fraction": spec.hot_fraction,
        "requests_per_vm": spec.requests_per_vm,
        "io_bytes": spec.io_bytes,
        "hot_region_starts": [int(s) for s in starts],
        "plan_from": "a second stream drawn from the same distribution (not the replayed one)",
    }
    return profile, stream, layout, source, None


def _calibrated(
    args: EvaluateRequest, rng: np.random.Generator
) -> tuple[Trace, Trace, Layout, Source, NDArray[np.int64]]:
    """FFSB's profile_everything per VM (``vmio.relocate.ffsb``), ``cold_share`` fitted on kogakuin-relocate-2011's 2 VMs."""
    prof = FfsbProfile(
        vms=args.vms,
        image_bytes=args.image_size,
        hot_bytes=args.hot,
        threads=args.threads,
        cold_share=SEED_FIT.cold_share if args.cold_share is None else args.cold_share,
        requests_per_vm=args.requests,
    )
    prof.check()
    disk = builtin_disk(args.disk)
    lay = ffsb_layout(prof, rng, args.extent)
    profile = ffsb_profile_stream(prof, lay, rng, create_phase=True)
    stream = ffsb_profile_stream(prof, lay, rng)
    layout = Layout.consecutive(
        stream.trace.images, [prof.image_bytes] * prof.vms, args.extent, disk.capacity_bytes
    )
    source = {
        "kind": "synthetic ffsb",
        "model": "calibrated",
        "profile": "FFSB examples/profile_everything (4 threads, op_delay 0, its op weights and size_weight)",
        "vms": prof.vms,
        "image_bytes": prof.image_bytes,
        "hot_bytes": prof.hot_bytes,
        "threads_per_vm": prof.threads,
        "max_request_bytes": prof.max_request,
        "cold_share": prof.cold_share,
        "fit": SEED_FIT.as_dict(),
        "requests_per_vm": prof.requests_per_vm,
        "hot_region_starts": [int(s) for s in lay.hot_start],
        "plan_from": "a second stream from the same files, with FFSB's fileset creation before it",
    }
    return profile.trace, stream.trace, layout, source, stream.thread


def _from_traces(args: EvaluateRequest) -> tuple[Trace, Trace, Layout, Source]:
    from vmio.traces.readers import read_trace

    trace = concat([read_trace(p, args.format) for p in args.trace])
    disk = builtin_disk(args.disk)
    layout = layout_for(trace, [], args.extent, disk.capacity_bytes, None)
    if args.open_loop and trace.time_unit != "s":
        raise InputError("--open-loop needs trace times in seconds; this trace's time unit is unknown")
    source = {
        "kind": "trace",
        "files": [str(p) for p in args.trace],
        "requests": len(trace),
        "plan_from": "the same trace that is replayed",
    }
    return trace, trace, layout, source


def evaluate_request(args: EvaluateRequest) -> EvaluationReport:
    from vmio.relocate.evaluate import ReplaySetup, evaluate  # the replay's compiled kernels: not for a plan

    rng = np.random.default_rng(args.seed)
    streams = None
    if args.synthetic and args.ffsb_model not in SYNTHETIC_MODELS:
        raise InputError(f"unknown --ffsb-model {args.ffsb_model!r}; use one of {SYNTHETIC_MODELS}")
    if args.synthetic:
        make = _calibrated if args.ffsb_model == "calibrated" else _uniform
        profile, stream, layout, source, streams = make(args, rng)
        hot = HotChoice(budget_bytes=args.hot)
    else:
        profile, stream, layout, source = _from_traces(args)
        hot = HotChoice(coverage=COVERAGE)
    disk = builtin_disk(args.disk)
    setup = ReplaySetup(disk, None if args.open_loop else (args.depth or DEPTH), args.policy or POLICY)
    order = args.order or ("image" if source.get("model") == "calibrated" else "coaccess")
    ev = evaluate(layout, profile, stream, setup, hot, position=args.zone, order=order, streams=streams)
    if args.save_plan:
        write_plan(ev.plan, args.save_plan)
    before = layout.physical_offset(stream.image, stream.offset)
    after = ev.plan.physical_offset(stream.image, stream.offset)
    if args.plot:
        from vmio.relocate import plots  # matplotlib: only when a figure is asked for

        plots.access_distribution(
            before,
            after,
            args.plot,
            disk_bytes=disk.capacity_bytes,
            title=f"{len(layout.names)} images, gain {ev.gain:+.1%}",
        )
    return EvaluationReport(ev, source, setup, before, after)


def evaluation_lines(r: EvaluationReport) -> list[str]:
    ev, setup, src = r.evaluation, r.setup, r.source
    b, a, plan = ev.before, ev.after, ev.plan
    lay = plan.layout
    model = f"ffsb {src['model']} model, " if "model" in src else ""
    if r.calibrated:
        model += f"{src['threads_per_vm']} FFSB threads/VM, cold share {src['cold_share']:.3f}, "
    depth_per = "thread" if r.calibrated else "image"
    lines = [
        f"{model}disk {setup.disk.name}, {setup.policy}, depth {setup.depth} per {depth_per}",
        f"before: {b['throughput_iops']:.1f} IOPS, mean response {b['mean_response_ms']:.2f} ms, "
        f"p99 {b['p99_response_ms']:.2f} ms, mean seek {b['mean_seek_cylinders']:.0f} cylinders",
        f"after:  {a['throughput_iops']:.1f} IOPS, mean response {a['mean_response_ms']:.2f} ms, "
        f"p99 {a['p99_response_ms']:.2f} ms, mean seek {a['mean_seek_cylinders']:.0f} cylinders",
        f"gain: {ev.gain:+.1%} (zone of {format_size(plan.zone_extents * lay.extent_bytes)} "
        f"at {format_size(plan.zone_start * lay.extent_bytes)}, "
        f"{plan.position} position, {plan.order} order)",
        "in-zone order: "
        + ", ".join(f"{k} {v:+.1%}" for k, v in ev.order_gains.items())
        + f"; {plan.order} adds {ev.order_gains[plan.order] - ev.order_gains['image']:+.1%} over image order",
        f"zone placement: {plan.placement} ({plan.placement_reason})",
    ]
    return lines


def apply_request(args: ApplyRequest) -> list[str]:
    from vmio.relocate.apply import apply_to_image, rollback, side_paths
    from vmio.relocate.devmapper import dm_tables, pvmove_commands

    if args.rollback:
        if not args.to_image:
            raise InputError("--rollback needs --to-image OUT")
        return [f"removed {p}" for p in rollback(args.to_image)]
    if args.plan is None:
        raise InputError("apply needs a PLAN file (from vmio relocate plan)")
    plan = read_plan(args.plan)
    lines: list[str] = []
    if args.dm_tables:
        for name, text in dm_tables(plan, args.dm_tables).items():
            lines += [f"# {name}", text.rstrip("\n")]
    if args.pvmove:
        lines += [" ".join(cmd) for cmd in pvmove_commands(plan, args.pvmove)]
    if args.to_image:
        if not args.source:
            raise InputError(
                "--to-image needs --source DISK (the shared disk file in the layout before the plan)"
            )
        res = apply_to_image(plan, args.source, args.to_image, rate_bytes=args.rate)
        journal, table = side_paths(args.to_image)
        how = "resumed" if res.resumed else "applied"
        lines.append(
            f"{how}: {res.copied} extents copied and verified, {res.skipped} already done; "
            f"{args.to_image} (mapping {table}, journal {journal})"
        )
    return lines
