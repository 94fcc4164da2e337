"""Sub-commands over campaigns: run, show, export."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TextIO

from vmio import spec
from vmio.campaign import runner
from vmio.cli import argtypes, terminal
from vmio.errors import InputError
from vmio.fio import jobfile
from vmio.report.compare_text import columns
from vmio.spec.sla import parse_sla
from vmio.store import Store, export
from vmio.store import rows as summary
from vmio.targets import placement
from vmio.traces.vm_runs import beside_store
from vmio.units import format_size


def default_db() -> str:
    return os.environ.get("VMIO_DB", "vmio.db")


def add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=None, help="the store (default ./vmio.db, or $VMIO_DB)")


def open_store(args: argparse.Namespace, *, write: bool = False) -> Store:
    """The store of ``--db``; commands that only read it open it read-only (never creating or changing it)."""
    return Store(args.db or default_db(), readonly=not write)


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
    p.add_argument("--runtime", help="with --target: each job section's runtime (default 10s)")
    p.add_argument("--dry-run", action="store_true", help="print the points and their fio job files")
    p.add_argument("--force", action="store_true", help="redo points already done")
    p.add_argument("--destroy-data", action="append", default=[], metavar="DEVICE",
                   help="allow writes to DEVICE even though it holds data")  # fmt: skip
    p.add_argument(
        "--interval",
        type=argtypes.duration,
        default="1s",
        help="sampling interval (default 1s, at least 100ms)",
    )
    p.add_argument("--workdir", help="keep job files and fio logs here")
    p.add_argument(
        "--boot-timeout",
        type=argtypes.duration,
        default="90s",
        help="time a guest has to become ready (default 90s)",
    )
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("show", help="show stored campaigns and their points")
    p.add_argument("campaign", nargs="?")
    add_db(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--sla", metavar="METRIC=BOUND",
                   help="the highest IOPS within a latency bound per target and workload, e.g. p99=2ms "
                   "(metric p50, p99, p99.9 or mean)")  # fmt: skip
    p.add_argument("--ops", action="store_true",
                   help="the timed operations (ops workloads) per target, bs, rw and load processes: count and "
                   "min/avg/max latency in ms (seed 004's Figs. 2-4, 8)")  # fmt: skip
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("export", help="export a campaign's points and metric series")
    p.add_argument("campaign")
    add_db(p)
    p.add_argument("--format", choices=export.FORMATS, required=True)
    p.add_argument("-o", "--output", required=True, help="output file (series go beside it)")
    p.set_defaults(handler=cmd_export)


FIO_SUFFIXES = (".fio", ".job", ".ini")


def fio_campaign_text(job_file: str, target: str, size: str | None, runtime: str | None = None) -> str:
    """The spec of ``vmio run JOBFILE --target PATH``: one host target, one workload per job section."""
    lines = ["[campaign]", f"name = {json.dumps(Path(job_file).stem)}", "",
             "[[target]]", 'name = "target"', f"path = {json.dumps(target)}"]  # fmt: skip
    if size is not None:
        lines.append(f"size = {json.dumps(size)}")
    lines += ["", "[[workload]]", f"fio = {json.dumps(str(Path(job_file).resolve()))}"]
    if runtime is not None:
        lines.append(f"runtime = {json.dumps(runtime)}")
    return "\n".join(lines) + "\n"


def load_run_spec(args: argparse.Namespace) -> tuple[spec.Campaign, str]:
    """The campaign ``vmio run`` runs and the spec text it stores."""
    is_job_file = Path(args.spec).suffix in FIO_SUFFIXES
    if is_job_file:
        if not args.target:
            raise InputError(
                f"{args.spec} is a fio job file; say where it runs: vmio run {args.spec} --target PATH"
            )
        text = fio_campaign_text(args.spec, args.target, args.size, args.runtime)
        return spec.loads_spec(text, f"<vmio run {args.spec} --target {args.target}>"), text
    if args.target or args.size or args.runtime:
        raise InputError(
            f"--target, --size and --runtime go with a fio job file (.fio), not the spec {args.spec}"
        )
    return spec.load_spec(args.spec), Path(args.spec).read_text(encoding="utf-8")


def cmd_run(args: argparse.Namespace) -> int:
    camp, text = load_run_spec(args)
    if args.interval < 0.1:
        raise InputError(f"--interval {args.interval:g}s is below the 100ms floor")
    if args.dry_run:
        print_dry_run(camp, sys.stdout)
        return 0
    options = runner.Options(
        force=args.force,
        destroy_data=tuple(args.destroy_data),
        interval=args.interval,
        workdir=Path(args.workdir) if args.workdir else None,
        boot_timeout=args.boot_timeout,
        trace_root=beside_store(args.db or default_db()),
    )
    bar = ProgressPrinter(sys.stderr)
    with open_store(args, write=True) as store, terminated_as_interrupt():
        outcome = runner.run(camp, text, store, options, bar)
        bar.close()
        print(
            f"campaign {camp.name!r}: {outcome.done} done, {outcome.failed} failed, "
            f"{outcome.skipped} already done; store {store.path}"
        )
        for failure in outcome.failures:
            print(f"  failed: {failure}")
    return 1 if outcome.failed else 0


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """A SIGTERM during a run unwinds it like Ctrl-C: VMs shut down, loop devices detached."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def print_dry_run(camp: spec.Campaign, out: TextIO) -> None:
    points = camp.points()
    out.write(f"campaign {camp.name!r}: {len(points)} points\n")
    for point in points:
        workload = camp.workload(point.workload)
        target = camp.target(point.target)
        place = dataclasses.replace(
            placement.endpoints(target, workload)[0].place, lat_log_prefix="ops-0", hist_log_prefix="hist-0"
        )
        text = jobfile.render(workload, bs=point.bs, offered_iops=point.offered_iops,
                              load_processes=point.load_processes, place=place)  # fmt: skip
        out.write(f"\n## {point.key}  ({target.kind}; {placement.where(target)})\n{text}")
        if camp.seed is not None and workload.ops:
            out.write(
                f"; measure replays the campaign's seeded offsets (seed {camp.seed}) through read_iolog\n"
            )


class ProgressPrinter:
    """rich's bar on a terminal (``console``: a rich Console to draw on); plain lines otherwise."""

    def __init__(self, stream: TextIO, console: terminal.Console | None = None) -> None:
        self.stream = stream
        self.console = console or terminal.console_for(stream)
        self.bar = terminal.RichBar(self.console) if self.console is not None else None

    def __call__(self, p: runner.Progress) -> None:
        if self.bar is not None:
            self.bar.update(p.done, p.total, p.point, p.status, p.eta_s, p.iops)
            return
        eta = f" ETA {_hms(p.eta_s)}" if p.eta_s is not None else ""
        if p.status != "running":
            self.stream.write(f"[{p.done}/{p.total}] {p.status} {p.point}\n")
        else:
            self.stream.write(f"[{p.done}/{p.total}] running {p.point}{eta}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


_hms = terminal.hms


def cmd_show(args: argparse.Namespace) -> int:
    if args.ops:
        return show_ops(args)
    if args.sla is not None:
        return show_sla(args)
    with open_store(args) as store:
        rows = summary.point_rows(store, args.campaign)
    if args.json:
        print(json.dumps([row.to_json(facts=False) for row in rows], indent=1))
        return 0
    console = terminal.console_for(sys.stdout)
    if console is not None and rows:
        print_show_table(rows, console)
    else:
        print(format_table(rows), end="")
    return 0


def print_show_table(rows: list[summary.PointRow], console: terminal.Console) -> None:
    """``vmio show``'s table through rich (on a terminal)."""
    terminal.print_table(console, show_lines(rows), right=frozenset(range(3, 11)))


def show_ops(args: argparse.Namespace) -> int:
    """``vmio show CAMPAIGN --ops [--json]``."""
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
    if not rows:
        return "no timed operations stored (a workload with ops = N stores them)\n"
    head = ("target", "accel", "build", "machine", "vCPUs", "VMs", "cache", "rw", "bs", "load", "ops",
            "min ms", "avg ms", "max ms")  # fmt: skip

    def cell(value: object) -> str:
        return "-" if value is None else str(value)

    lines = [head] + [
        (str(r["target"]), cell(r["accel"]), cell(r["qemu_version"]), cell(r["machine"]), cell(r["vcpus"]),
         "-" if r["vms"] is None else f"{r['vms']}" + (f" ({r['idle_vms']} idle)" if r["idle_vms"] else ""),
         cell(r["cache"]), str(r["rw"]), format_size(int(str(r["bs"]))), str(r["load_processes"]),
         str(r["ops"]), f"{r['min_ms']:.3f}", f"{r['avg_ms']:.3f}", f"{r['max_ms']:.3f}")
        for r in rows
    ]  # fmt: skip
    return columns(lines, right=frozenset(range(8, len(head))))


def show_sla(args: argparse.Namespace) -> int:
    from vmio.report import data, sla

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
    lines: list[tuple[str, ...]] = [head]
    for r in rows:
        lat = r.read_lat_ns or r.write_lat_ns
        lines.append((
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
        ) + ((_steady(r.steady),) if steady else ()))  # fmt: skip
    return lines


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
    with open_store(args) as store:
        written = export.export(store, args.campaign, args.format, Path(args.output))
    for path in written:
        print(path)
    return 0
