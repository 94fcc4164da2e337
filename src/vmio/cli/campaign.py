"""Sub-commands over campaigns: run, show, export."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from vmio.cli import argtypes
from vmio.cli.store_args import add_db, default_db, open_store, writing_store
from vmio.errors import InputError
from vmio.store.formats import FORMATS as EXPORT_FORMATS
from vmio.units import format_size

# Each command imports the library it runs when it runs (tests/test_cli_startup.py): `vmio run --help` and
# `vmio --help` need none of it.
if TYPE_CHECKING:
    from vmio import spec
    from vmio.campaign import runner
    from vmio.cli import terminal
    from vmio.store import rows as summary
    from vmio.store.imported_files import ImportedFile


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the campaign sub-commands to ``sub``."""
    p = sub.add_parser("run", help="run a campaign from a TOML spec, or a fio job file on one target")
    p.add_argument("spec", help="experiment spec (TOML), or a fio job file (.fio/.job/.ini) with --target")
    add_db(p)
    p.add_argument(
        "--target",
        metavar="PATH",
        help="with a fio job file: the file or block device it runs on (a one-target campaign)",
    )
    p.add_argument("--size", help="with --target: the size of a target file to create (e.g. 1G)")
    p.add_argument(
        "--runtime",
        help="with --target: each job section's runtime (default: the section's own runtime=, else 10s)",
    )
    p.add_argument(
        "--name",
        help="the campaign's name (default: the spec's [campaign] name, or the job "
        "file's name without its suffix)",
    )
    p.add_argument(
        "--series",
        metavar="NAME",
        help="put the campaign in series NAME (overrides [campaign] series; see vmio trend)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the points and their fio job files")
    p.add_argument("--force", action="store_true", help="redo points already done")
    p.add_argument(
        "--layers",
        action="store_true",
        help="trace where each point's latency goes, per layer (as [campaign] layers = true; docs/layers.md)",
    )
    p.add_argument(
        "--destroy-data",
        action="append",
        default=[],
        metavar="PATH",
        help="allow writes to PATH though it holds data: a device or a file vmio did not create, "
        "rbd:POOL/IMAGE (an RBD image), DOMAIN:DISK (a libvirt domain's disk), or any path a remote "
        "target writes, exactly as its spec writes it; repeatable",
    )
    p.add_argument(
        "--interval",
        type=argtypes.duration,
        default="1s",
        help="sampling interval (default 1s, at least 100ms)",
    )
    p.add_argument("--workdir", type=argtypes.out_dir, help="keep job files and fio logs here")
    p.add_argument(
        "--boot-timeout",
        type=argtypes.duration,
        default="90s",
        help="time a guest has to become ready (default 90s)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print each point's timeline (target start, fio start, measuring, samplers, logs, store "
        "write) and the share of the wall time spent measuring",
    )
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("show", help="show stored campaigns and their points")
    p.add_argument(
        "campaign",
        nargs="?",
        help="a campaign's name (without it: the list of campaigns; with --json, every point)",
    )
    add_db(p)
    p.add_argument("--json", action="store_true", help="print every point as JSON (show --json's fields)")
    add_wide(p)
    p.add_argument(
        "--sla",
        metavar="METRIC=BOUND",
        help="the highest IOPS within a latency bound per target and workload, e.g. p99=2ms "
        "(metric p50, p99, p99.9 or mean)",
    )
    p.add_argument(
        "--ops",
        action="store_true",
        help="the timed operations (ops workloads) per target, bs, rw and load processes: count and "
        "min/avg/max latency in ms (okayama-hypervisors-2020's Figs. 2-4, 8)",
    )
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("ls", help="list stored campaigns: one line each (targets, workloads, points)")
    add_db(p)
    p.add_argument("--json", action="store_true", help="print the list as a JSON array")
    add_wide(p)
    p.set_defaults(handler=cmd_ls)

    p = sub.add_parser("rm", help="remove a stored campaign and all of its points")
    p.add_argument("campaign", help="the campaign to remove")
    add_db(p)
    p.set_defaults(handler=cmd_rm)

    p = sub.add_parser("rename", help="rename a stored campaign")
    p.add_argument("old", metavar="OLD", help="the campaign's stored name")
    p.add_argument("new", metavar="NEW", help="its new name (unique in the store)")
    add_db(p)
    p.set_defaults(handler=cmd_rename)

    p = sub.add_parser(
        "import", help="store fio JSON or json+ output from runs made without vmio as a campaign"
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="fio --output-format=json or json+ output (local or client/server, any fio from 2.0.10), or a "
        "folder of them such as bench-fio's (every *.json, *.jsonplus, *.json+ under it); each job name becomes a point",
    )
    p.add_argument(
        "--campaign", required=True, help="the campaign to store them in (new, or an imported one)"
    )
    p.add_argument("--target", default="fio", help="the target label of the points (default fio)")
    p.add_argument("--series", metavar="NAME", help="put the campaign in series NAME (see vmio trend)")
    add_db(p)
    p.set_defaults(handler=cmd_import)

    p = sub.add_parser("export", help="export a campaign's points and metric series")
    p.add_argument("campaign", help="the campaign to export")
    add_db(p)
    p.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        help="csv, json, parquet, ndjson or prometheus (default: from the output's suffix, e.g. "
        ".csv, .json, .parquet, .ndjson, .prom)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=argtypes.out_file,
        required=True,
        help="output file (csv and parquet write their series and operations beside it); '-' writes "
        "json, ndjson or prometheus to stdout",
    )
    p.set_defaults(handler=cmd_export)


def add_wide(p: argparse.ArgumentParser) -> None:
    """``--wide``: on a terminal too narrow for every column, show them all (it wraps the lines)."""
    p.add_argument(
        "--wide",
        action="store_true",
        help="on a terminal, every column even when they do not fit its width (by default the least "
        "needed columns are left out, and named, rather than any number cut)",
    )


# on a narrow terminal the columns of show and ls leave in this order (never a cut number)
SHOW_DROP = ("%sys", "%usr", "steady", "MB/s r/w", "dev busy%", "status", "p50 ms", "accel")
LS_DROP = ("created", "workloads", "targets", "accel")
FIO_SUFFIXES = (".fio", ".job", ".ini")


def fio_campaign_text(
    job_file: str, target: str, size: str | None, runtime: str | None = None, name: str | None = None
) -> str:
    """The spec of ``vmio run JOBFILE --target PATH``: one host target, one workload per job section."""
    lines = [
        "[campaign]",
        f"name = {json.dumps(name or Path(job_file).stem)}",
        "",
        "[[target]]",
        'name = "target"',
        f"path = {json.dumps(target)}",
    ]
    if size is not None:
        lines.append(f"size = {json.dumps(size)}")
    lines += ["", "[[workload]]", f"fio = {json.dumps(str(Path(job_file).resolve()))}"]
    if runtime is not None:
        lines.append(f"runtime = {json.dumps(runtime)}")
    return "\n".join(lines) + "\n"


def load_run_spec(args: argparse.Namespace) -> tuple[spec.Campaign, str]:
    """The campaign ``vmio run`` runs and the spec text it stores (a job file read with the installed
    fio's option names)."""
    from vmio import spec
    from vmio.fio import options as fio_options

    is_job_file = Path(args.spec).suffix in FIO_SUFFIXES
    if is_job_file:
        if not args.target:
            raise InputError(
                f"{args.spec} is a fio job file; say where it runs: vmio run {args.spec} --target PATH"
            )
        from vmio.cli import run_checks

        run_checks.check_job_flags(args)
        text = fio_campaign_text(args.spec, args.target, args.size, args.runtime, args.name)
        shown = f"<vmio run {args.spec} --target {args.target}>"
        return with_series(spec.loads_spec(text, shown, fio_names=fio_options.names), args.series), text
    if args.target or args.size or args.runtime:
        raise InputError(
            f"--target, --size and --runtime go with a fio job file (.fio), not the spec {args.spec}"
        )
    camp = spec.load_spec(args.spec, fio_names=fio_options.names)
    if args.name:
        camp = dataclasses.replace(camp, name=spec.campaign_name(args.name, "--name"))
    return with_series(camp, args.series), Path(args.spec).read_text(encoding="utf-8")


def with_series(camp: spec.Campaign, series: str | None) -> spec.Campaign:
    """The campaign in series ``--series`` when given."""
    if series is None:
        return camp
    return dataclasses.replace(camp, series=checked_series(series))


def checked_series(series: str) -> str:
    from vmio.spec.series import series_name

    try:
        return series_name(series)
    except ValueError as exc:
        raise InputError(f"--series {series!r}: {exc}") from None


def cmd_run(args: argparse.Namespace) -> int:
    from vmio.campaign import runner
    from vmio.cli import run_checks
    from vmio.traces.vm_runs import beside_store

    camp, text = load_run_spec(args)
    if args.layers:
        camp = dataclasses.replace(camp, layers=True)
    if args.interval < 0.1:
        raise InputError(f"--interval {args.interval:g}s is below the 100ms floor")
    if args.dry_run:
        print_dry_run(camp, sys.stdout)
        return 0
    job_file = Path(args.spec).suffix in FIO_SUFFIXES
    if job_file:
        run_checks.check_job_target(args)
    run_checks.check_rerun(args, camp, args.db or default_db(), job_file)
    options = runner.Options(
        force=args.force,
        destroy_data=tuple(args.destroy_data),
        interval=args.interval,
        workdir=Path(args.workdir) if args.workdir else None,
        boot_timeout=args.boot_timeout,
        trace_root=beside_store(args.db or default_db()),
    )
    sys.stderr.write(job_file_changes(camp))
    bar = ProgressPrinter(sys.stderr, verbose=args.verbose)
    with writing_store(args) as store:
        outcome = runner.run(camp, text, store, options, bar)
        bar.close()
        print(
            f"campaign {camp.name!r}: {outcome.done} done, {outcome.failed} failed, "
            f"{outcome.skipped} already done; store {store.path}"
        )
        if args.verbose and outcome.wall_s > 0:
            print(
                f"measuring (fio's ramp and runtime) {outcome.measuring_s:.1f} s of {outcome.wall_s:.1f} s "
                f"({outcome.measuring_s / outcome.wall_s * 100:.0f} %)"
            )
        for failure in outcome.failures:
            print(f"  failed: {failure}")
        print(format_stops(outcome.stops), end="")
    return 1 if outcome.failed else 0


def job_file_changes(camp: spec.Campaign) -> str:
    """What vmio changed in the user's fio job files, one line each, said before the first point runs (not
    only by --dry-run): the options it replaced (with file:line) and sections it runs one at a time."""
    where: dict[str, list[str]] = {}  # a change → the workloads (job sections) it was made in
    for w in camp.workloads:
        for change in w.fio_replaced:
            where.setdefault(change, []).append(w.name)
    lines = []
    for change, names in where.items():
        if change.startswith("ran alone"):  # each section's own: which others it ran beside in the file
            lines.append(f"vmio: {names[0]} {change}\n")
        else:
            lines.append(f"vmio: replaced {change} in {', '.join(names)}\n")
    return "".join(lines)


def _pct(value: object) -> str:
    return f"{value:.1f} %" if isinstance(value, int | float) else "-"


def print_dry_run(camp: spec.Campaign, out: TextIO) -> None:
    from vmio.campaign.measure import point_job, swept_place, swept_workload
    from vmio.targets import kind_of, placement

    points = camp.points()
    out.write(f"campaign {camp.name!r}: {len(points)} points\n")
    if camp.series is not None:
        out.write(f"series {camp.series!r} (vmio trend {camp.series})\n")
    if camp.layers:
        out.write(
            "layers: each point's latency traced per layer (host_block; guest_block in vmio's VMs; qemu in their "
            "virtio-blk disks; docs/layers.md)\n"
        )
    if camp.until is not None:
        out.write(
            f"then more passes while a point's IOPS spread exceeds {camp.until.bound * 100:g}% "
            f"(until_spread), up to {camp.until.max_repetitions} repetitions (max_repetitions)\n"
        )
    for w in camp.workloads:
        if w.stop_at is not None:
            out.write(
                f"workload {w.name!r}: each sweep (target, bs, jobs, load, rep) stops at its first point "
                f"beyond {w.stop_at.metric} = {w.stop_at.bound_ms:g} ms; its later points are not run\n"
            )
    for point in points:
        workload = swept_workload(camp.workload(point.workload), point)
        target = camp.target(point.target)
        place = dataclasses.replace(
            swept_place(placement.endpoints(target, workload)[0].place, point),
            lat_log_prefix="ops-0",
            hist_log_prefix="hist-0",
        )
        text = point_job(workload, point, place)
        if point.offered_pct is not None:
            poisson = ", rate_process=poisson" if workload.arrivals == "poisson" else ""
            text += (
                f"; rate_iops = {point.offered_pct:g}% of the achieved IOPS of {point.max_key()} "
                f"(run first), split over the jobs{poisson}\n"
            )
        disk = kind_of(target).label(target)
        out.write(f"\n## {point.key}  ({target.kind}; {placement.where(target)}{disk})\n{text}")
        if camp.seed is not None and workload.ops:
            out.write(
                f"; measure replays the campaign's seeded offsets (seed {camp.seed}) through read_iolog\n"
            )


class ProgressPrinter:
    """rich's bar on a terminal (``console``: a rich Console to draw on); plain lines otherwise."""

    def __init__(
        self, stream: TextIO, console: terminal.Console | None = None, verbose: bool = False
    ) -> None:
        from vmio.cli import terminal

        self.stream = stream
        self.verbose = verbose  # each point's timeline too
        self.console = console or terminal.console_for(stream)
        self.bar = terminal.RichBar(self.console) if self.console is not None else None
        self.last_line = 0.0

    PLAIN_EVERY_S = 10.0  # off a terminal, a running point's countdown is printed this often

    def __call__(self, p: runner.Progress) -> None:
        self.show(p)
        if self.verbose and p.wall_s is not None:
            from vmio.campaign import timeline

            line = timeline.format_line(p.point, list(p.timeline), p.wall_s)
            if self.console is not None:
                self.console.print(line, markup=False, highlight=False)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()

    def show(self, p: runner.Progress) -> None:
        if self.bar is not None:
            if self.console is not None:  # above the bar, where they stay
                if p.status == "failed":
                    self.console.print(f"failed {p.point}: {p.error or 'no reason recorded'}", markup=False)
                for warning in p.warnings:
                    self.console.print(f"warning {p.point}: {warning}", markup=False)
            self.bar.update(p.done, p.total, p.point, p.status, p.eta_s, p.iops, p.point_left_s, live=p.tick)
            return
        if p.tick:
            now = time.monotonic()
            if now - self.last_line < self.PLAIN_EVERY_S:
                return
            self.last_line = now
        eta = f" ETA {_hms(p.eta_s)}" if p.eta_s is not None else ""
        if p.status != "running":
            done = f" ({p.iops:,.0f} IOPS)" if p.iops is not None else ""
            why = f": {p.error}" if p.error else ""
            self.stream.write(f"[{p.done}/{p.total}] {p.status} {p.point}{done}{why}\n")
            self.stream.writelines(f"  warning: {warning}\n" for warning in p.warnings)
        elif p.tick:
            left = f" {_hms(p.point_left_s)} left in the point" if p.point_left_s is not None else ""
            iops = f", device {p.iops:,.0f} IOPS" if p.iops is not None else ""
            self.stream.write(f"[{p.done}/{p.total}] running {p.point}{left}{iops}{eta}\n")
        else:
            self.last_line = time.monotonic()
            self.stream.write(f"[{p.done}/{p.total}] running {p.point}{eta}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _hms(seconds: float) -> str:
    from vmio.cli import terminal

    return terminal.hms(seconds)


def cmd_import(args: argparse.Namespace) -> int:
    from vmio import spec
    from vmio.campaign import imported

    name = spec.campaign_name(args.campaign, "--campaign")
    target = spec.campaign_name(args.target, "--target")
    if "/" in target:
        raise InputError(f"--target {target!r}: a target label has no '/' (it is part of each point's key)")
    series = checked_series(args.series) if args.series is not None else None
    files = [f for given in args.files for f in imported.expand(Path(given))]
    # every file read and checked before any store opens: refused, no store is made
    recs, read = imported.read_files(files, name, target)
    with writing_store(args) as store:
        keys = imported.import_files(store, recs, name, series, read)
        print(
            f"campaign {name!r}: {len(keys)} point(s) imported from {len(files)} file(s); store {store.path}"
        )
    for key in keys:
        print(f"  {key}")
    return 0


def cmd_ls(args: argparse.Namespace) -> int:
    from vmio.store import campaigns

    with open_store(args) as store:
        rows = campaigns.campaign_rows(store)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print_campaigns(rows, args.wide)
    return 0


def print_campaigns(rows: list[dict[str, object]], wide: bool) -> None:
    """``vmio ls``'s table: through rich on a terminal (no cell cut), plain text otherwise."""
    from vmio.cli import terminal

    console = terminal.console_for(sys.stdout)
    if console is None or not rows:
        print(format_campaigns(rows), end="")
        return
    lines = campaign_lines(rows)
    drop = terminal.by_name(lines[0], LS_DROP)
    terminal.print_table(console, lines, right=frozenset({4, 5}), drop=drop, wide=wide)


def format_campaigns(rows: list[dict[str, object]]) -> str:
    """The text table of ``vmio ls`` (and of ``vmio show`` without a campaign)."""
    from vmio.report.compare_text import columns

    if not rows:
        return "no campaigns stored\n"
    return columns(campaign_lines(rows), right=frozenset({4, 5}))


def campaign_lines(rows: list[dict[str, object]]) -> list[tuple[str, ...]]:
    """The head and one line per campaign of ``vmio ls``."""

    def names(value: object) -> str:
        items = [str(v) for v in value] if isinstance(value, list) else []
        return ",".join(items) if len(items) <= 3 else f"{','.join(items[:2])},+{len(items) - 2} more"

    series = any(r.get("series") for r in rows)  # the column only in stores that hold a series
    lines: list[tuple[str, ...]] = [
        ("campaign", "created", "targets", "workloads", "done", "failed", "accel")
        + (("series",) if series else ())
    ]
    lines += [
        (
            str(r["name"]),
            str(r["created"] or "-"),
            names(r["targets"]),
            names(r["workloads"]),
            str(r["points_done"]),
            str(r["points_failed"]),
            names(r["accel"]) or "-",
        )
        + ((str(r.get("series") or "-"),) if series else ())
        for r in rows
    ]
    return lines


def cmd_rm(args: argparse.Namespace) -> int:
    from vmio.traces import vm_runs

    with open_store(args, write=True) as store:
        count = store.remove_campaign(args.campaign)
    traces = vm_runs.remove_campaign(vm_runs.beside_store(args.db or default_db()), args.campaign)
    print(f"removed campaign {args.campaign!r} ({count} points){' and its VM traces' if traces else ''}")
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    from vmio import spec
    from vmio.traces import vm_runs

    new = spec.campaign_name(args.new, "NEW")
    with open_store(args, write=True) as store:
        store.rename_campaign(args.old, new)
    vm_runs.rename_campaign(vm_runs.beside_store(args.db or default_db()), args.old, new)
    print(f"renamed campaign {args.old!r} to {new!r}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from vmio.cli import terminal
    from vmio.store import campaigns, show_json
    from vmio.store import rows as summary

    if args.ops:
        return show_ops(args)
    if args.sla is not None:
        return show_sla(args)
    if not args.campaign and not args.json:  # the list of campaigns; `show --json` stays every point
        with open_store(args) as store:
            listed = campaigns.campaign_rows(store)
        print_campaigns(listed, args.wide)
        return 0
    if args.json:
        with open_store(args) as store:
            pieces = show_json.pieces(store, args.campaign)
        sys.stdout.writelines(pieces)
        print()
        return 0
    with open_store(args) as store:
        rows = summary.point_rows(store, args.campaign)
        stops = store.stops(args.campaign) if args.campaign else []
        settles = store.settles(args.campaign) if args.campaign else {}
        until = store.spec(args.campaign).until if settles else None
        files = store.files_imported(args.campaign) if args.campaign else []
    console = terminal.console_for(sys.stdout)
    if console is not None and rows:
        print_show_table(rows, console, args.wide)
    else:
        print(format_table(rows), end="")
    note = summary.shared_host_note(rows)
    if note:
        print(f"note: {note}")
    print(format_stops(stops), end="")
    print(format_settles(settles, until.max_repetitions if until else None), end="")
    print(format_imported(files), end="")
    return 0


def format_imported(files: Sequence[ImportedFile]) -> str:
    """fio's whole-run ``disk_util`` of each imported file of more than one job, one line each (a point of a
    one-job file shows it as its busy %)."""
    lines = []
    for f in files:
        if len(f.jobs) < 2 or not f.disk_util:
            continue
        disks = ", ".join(f"{d.get('name')} {_pct(d.get('util'))}" for d in f.disk_util)
        lines.append(
            f"{f.path} ({len(f.jobs)} jobs: {', '.join(f.jobs)}): disk busy over the whole run {disks} "
            "(fio's disk_util: the file's, no one job's)\n"
        )
    return "".join(lines)


def format_settles(settles: Mapping[str, tuple[int, bool, float | None]], most: int | None) -> str:
    """Repeat-until-stable's outcome per point: the repetitions it took, whether its IOPS spread settled."""
    if not settles:
        return ""
    lines = ["repeat until stable (IOPS spread: half-width of the 95 % interval of the mean):\n"]
    for point, (taken, settled, spread) in sorted(settles.items()):
        said = "-" if spread is None else f"{spread * 100:.1f}%"
        verdict = "settled" if settled else "did NOT settle"
        verdict += f" (max_repetitions = {most})" if not settled and taken == most else ""
        lines.append(f"  {point}: {verdict} after {taken} repetition(s), spread {said}\n")
    return "".join(lines)


def print_show_table(rows: list[summary.PointRow], console: terminal.Console, wide: bool = False) -> None:
    """``vmio show``'s table through rich (on a terminal): the least needed columns left out, and named,
    when the terminal is too narrow for all (``wide``: all the same)."""
    from vmio.cli import terminal

    lines = show_lines(rows)
    drop = terminal.by_name(lines[0], SHOW_DROP)
    terminal.print_table(console, lines, right=frozenset(range(3, len(lines[0]))), drop=drop, wide=wide)


def show_ops(args: argparse.Namespace) -> int:
    """``vmio show CAMPAIGN --ops [--json]``."""
    from vmio.store import rows as summary

    if not args.campaign:
        raise InputError("--ops needs a campaign: vmio show CAMPAIGN --ops")
    if args.sla is not None:
        raise InputError("--ops and --sla are separate views; give one of them")
    with open_store(args) as store:
        rows = summary.ops_rows(store, args.campaign)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(format_ops(rows), end="")
    return 0


def format_ops(rows: list[dict[str, object]]) -> str:
    """The text table of ``vmio show CAMPAIGN --ops``."""
    from vmio.report.compare_text import columns

    if not rows:
        return "no timed operations stored (a workload with ops = N stores them)\n"
    head = ("target", "accel", "build", "machine", "vCPUs", "VMs", "cache", "workload", "rw", "bs", "load",
            "ops", "min ms", "avg ms", "max ms")  # fmt: skip

    def cell(value: object) -> str:
        return "-" if value is None else str(value)

    lines = [head] + [
        (str(r["target"]), cell(r["accel"]), cell(r["qemu_version"]), cell(r["machine"]), cell(r["vcpus"]),
         "-" if r["vms"] is None else f"{r['vms']}" + (f" ({r['idle_vms']} idle)" if r["idle_vms"] else ""),
         cell(r["cache"]), str(r["workload"]), str(r["rw"]), format_size(int(str(r["bs"]))), str(r["load_processes"]),
         str(r["ops"]), f"{r['min_ms']:.3f}", f"{r['avg_ms']:.3f}", f"{r['max_ms']:.3f}")
        for r in rows
    ]  # fmt: skip
    return columns(lines, right=frozenset(range(9, len(head))))


def show_sla(args: argparse.Namespace) -> int:
    from vmio.report import data, sla
    from vmio.spec.sla import parse_sla

    try:
        bound = parse_sla(args.sla)
    except ValueError as exc:
        raise InputError(f"--sla: {exc}") from None
    if not args.campaign:
        raise InputError(f"--sla {args.sla!r} needs a campaign: vmio show CAMPAIGN --sla {args.sla}")
    with open_store(args) as store:
        loaded = data.load(store, args.campaign)
    knees = sla.knees(loaded, bound)
    if args.json:
        print(json.dumps([k.as_dict() for k in knees], indent=1))
    else:
        print(sla.format_text(knees, loaded.name, bound), end="")
    return 0


def format_table(rows: list[summary.PointRow]) -> str:
    """The text table of ``vmio show``."""
    from vmio.report.compare_text import columns

    lines = show_lines(rows)
    if len(lines) == 1:
        return "no points stored\n"
    return columns(lines, right=frozenset(range(3, len(lines[0]))))


def show_lines(rows: list[summary.PointRow]) -> list[tuple[str, ...]]:
    """The head and one line per point of ``vmio show``'s table."""
    head: tuple[str, ...] = (
        "point",
        "status",
        "accel",
        "IOPS r/w",
        "MB/s r/w",
        "p50 ms",
        "p99 ms",
        "dev busy%",
        "%usr",
        "%sys",
    )
    steady = any(r.steady is not None for r in rows)  # the column only when a point asked for steady state
    if steady:
        head = (*head, "steady")
    shares = any(r.offered_pct is not None for r in rows)  # the IOPS a share of the max point offered
    if shares:
        head = (*head, "offered IOPS")
    imports = any(r.target_kind == "import" for r in rows)  # the fio version that wrote each imported point
    if imports:
        head = (*head, "fio")
    lines: list[tuple[str, ...]] = [head]
    for r in rows:
        lat = r.read_lat_ns or r.write_lat_ns
        lines.append(
            (
                f"{r.campaign}:{r.point}",
                r.status,
                r.accel or "-",
                f"{_num(r.read_iops)}/{_num(r.write_iops)}",
                f"{_mb(r.read_bw)}/{_mb(r.write_bw)}",
                _ms(lat, "p50"),
                _ms(lat, "p99"),
                _num(r.metric("dev_busy_pct"), 1),
                _num(r.metric("cpu_usr_pct"), 1),
                _num(r.metric("cpu_sys_pct"), 1),
            )
            + ((_steady(r.steady),) if steady else ())
            + ((_offered(r),) if shares else ())
            + (((r.fio_version or "-").removeprefix("fio-"),) if imports else ())
        )
    return lines


def _offered(row: summary.PointRow) -> str:
    if row.offered_pct is None:
        return "-" if row.offered_iops is None else str(row.offered_iops)
    return f"{row.offered_iops} ({row.offered_pct:g}%)"


def format_stops(stops: list[dict[str, Any]]) -> str:
    """Where a campaign's sweeps stopped at their ``stop_at`` bound, one line each."""
    return "".join(
        f"sweep {s['sweep']} stopped at {s['point']}: {s['why']}; {len(s['not_run'])} later point(s) not run\n"
        for s in stops
    )


def _steady(value: Mapping[str, object] | None) -> str:
    if value is None:
        return "-"
    return f"yes@{value['at_s']:g}s" if value.get("reached") else "no"


def _num(value: object, digits: int = 0) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:.{digits}f}"


def _mb(value: object) -> str:
    return "-" if not isinstance(value, int | float) else f"{value / 1e6:.1f}"


def _ms(lat: Mapping[str, float | None] | None, key: str) -> str:
    value = lat.get(key) if lat is not None else None
    return "-" if value is None else f"{value / 1e6:.3f}"


def cmd_export(args: argparse.Namespace) -> int:
    from vmio.store import export

    if str(args.output) == "-":  # stdout (out_file hands every name over as a Path)
        if args.format is None:
            raise InputError("export -o - needs --format (json, ndjson or prometheus): stdout has no suffix")
        with open_store(args) as store:
            data = export.document(store, args.campaign, args.format)
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    fmt = args.format or export.format_for(str(args.output))
    with open_store(args) as store:
        written = export.export(store, args.campaign, fmt, Path(args.output))
    for path in written:
        print(path)
    return 0
