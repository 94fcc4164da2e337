"""``vmio advise`` (Fig. 9 over host facts) and ``vmio diagnose`` (Fig. 10 over evidence)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from vmio.advise.buses import ADVISE_BUSES
from vmio.cli import argtypes
from vmio.cli.store_args import add_db, default_db, open_store
from vmio.errors import InputError
from vmio.published import Ratio
from vmio.qemu.caps import QEMU_BINARY as QEMU
from vmio.system import files
from vmio.system.process import Runner
from vmio.system.safety import is_block_device
from vmio.units import human_rate

# the diagnosis (its evidence, thresholds and texts) is imported when a command runs, not for its --help
if TYPE_CHECKING:
    from vmio.advise.disk_config import Config


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``advise`` and ``diagnose`` to ``sub``."""
    adv = sub.add_parser("advise", help="recommend a VM disk configuration (hitachi-nvme-2016, Fig. 9)")
    for flag, text in (
        ("--scale-out", "capacity grows by adding VMs"),
        ("--dedicated-disk", "a device may be given to one VM"),
        ("--live-migration", "VMs must live-migrate"),
    ):
        adv.add_argument(flag, choices=("yes", "no"), default="no", help=f"{text} (default no)")
    adv.add_argument("--bus", default=",".join(ADVISE_BUSES), help="allowed buses, comma-separated")
    adv.add_argument("--json", action="store_true", help="print JSON")
    adv.add_argument(
        "--device",
        metavar="PATH",
        default=None,
        help="the VM disk's file or block device, written into the QEMU arguments and libvirt XML",
    )
    adv.add_argument(
        "--db",
        default=None,
        help="the store whose campaigns give this host's VM/bare ratios (default ./vmio.db, or $VMIO_DB)",
    )
    adv.add_argument("--qemu", default=QEMU, help=argparse.SUPPRESS)
    adv.add_argument("--sysfs", type=Path, default=Path("/sys"), help=argparse.SUPPRESS)
    adv.add_argument("--proc", type=Path, default=Path("/proc"), help=argparse.SUPPRESS)
    adv.set_defaults(handler=run_advise)

    diag = sub.add_parser(
        "diagnose", help="is I/O at its limit, and what limits it (hitachi-nvme-2016, Fig. 10)"
    )
    diag.add_argument("campaign", nargs="?", help="a stored campaign to diagnose")
    diag.add_argument("--point", metavar="KEY", help="only this point (default: every unthrottled point)")
    diag.add_argument(
        "--dump-evidence",
        type=Path,
        metavar="FILE",
        help="write the evidence (of the campaign, or with --live of each disk) as JSON",
    )
    add_db(diag)
    for side in ("read", "write"):
        diag.add_argument(
            f"--capacity-{side}-iops",
            type=argtypes.count(1, 10**9),
            metavar="N",
            default=None,
            help=f"the device's {side} capacity in IOPS, as you know it (default: vmio calibrate's, "
            "else unknown)",
        )
    diag.add_argument("--evidence", type=Path, metavar="FILE", help="an evidence JSON file")
    diag.add_argument("--explain", action="store_true", help="print the decision tree and thresholds")
    diag.add_argument("--json", action="store_true", help="print JSON")
    diag.add_argument("--live", action="store_true", help="diagnose the QEMU processes running now")
    diag.add_argument("--seconds", default="5s", help="with --live: how long to sample (default 5s)")
    diag.add_argument(
        "--pid",
        type=argtypes.count(1, 2**22),
        action="append",
        help="with --live: only this QEMU (repeatable)",
    )
    diag.add_argument(
        "--jobs-per-vm",
        type=argtypes.count(1, 4096),
        metavar="N",
        help="with --live: I/O jobs each guest runs (the host cannot see them; default unknown)",
    )
    diag.add_argument("--proc", type=Path, default=Path("/proc"), help=argparse.SUPPRESS)
    diag.set_defaults(handler=run_diagnose)

    cal = sub.add_parser("calibrate", help="measure a device's or file's capacity (IOPS, bandwidth) with fio")
    cal.add_argument(
        "path", metavar="PATH", help="a block device or a file (a missing file is created at SIZE)"
    )
    cal.add_argument("--size", default=None, help="size of a missing file (default 1G)")
    add_db(cal)
    cal.add_argument("--json", action="store_true", help="print JSON")
    cal.add_argument("--runtime", default="2s", help="time per queue depth and pattern (default 2s)")
    cal.add_argument(
        "--destroy-data",
        action="append",
        default=[],
        metavar="PATH",
        help="allow writes to PATH (a device, or a file vmio did not create) though it holds data",
    )
    cal.set_defaults(handler=run_calibrate)

    tune = sub.add_parser("tune", help="apply the top diagnosed action to a campaign's VM targets and re-run")
    tune.add_argument("campaign", help="a stored campaign with VM targets")
    add_db(tune)
    tune.add_argument(
        "--backing",
        metavar="PATH",
        help="a second backing path (spread-disks) or a free block device (dedicate-disk)",
    )
    tune.add_argument("--target", metavar="NAME", help="only this VM target (default: every VM target)")
    tune.add_argument("--name", metavar="NAME", help="the tuned campaign's name (default CAMPAIGN-tuned)")
    tune.add_argument("--boot-timeout", default="90s", help="time a guest has to become ready (default 90s)")
    tune.add_argument("--json", action="store_true", help="print JSON")
    tune.set_defaults(handler=run_tune)


def run_advise(args: argparse.Namespace) -> int:
    from vmio.advise.config_guideline import Requirements, advise, parse_buses
    from vmio.advise.inventory import read_host_facts
    from vmio.advise.text import format_advice

    req = Requirements(
        scale_out=args.scale_out == "yes",
        dedicated_disk=args.dedicated_disk == "yes",
        buses=parse_buses(args.bus),
        live_migration=args.live_migration == "yes",
        device=_device(args.device),
        device_is_block=args.device is not None and is_block_device(args.device),
    )
    facts = read_host_facts(Runner(), sysfs=args.sysfs, proc=args.proc, qemu=args.qemu)
    advice = advise(facts, req, measured=_measured(args))
    if args.json:
        print(json.dumps(advice.to_dict(), indent=2))
    else:
        sys.stdout.write(format_advice(advice))
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from vmio.advise.calibrate import calibrate
    from vmio.units import parse_size

    size = None
    if args.size is not None:
        try:
            size = parse_size(args.size)
        except ValueError as exc:
            raise InputError(f"--size {args.size!r}: {exc}") from None
        if size <= 0:
            raise InputError(f"--size {args.size!r} must be above zero, such as '1G'")
    runtime = argtypes.positive_duration("--runtime", args.runtime)
    with open_store(args, write=True) as store:
        result = calibrate(
            args.path,
            size=size,
            runtime=runtime,
            destroy=args.destroy_data,
            store=store,
            progress=_calibrate_progress(runtime),
        )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    print(f"{result.path} on {result.device or 'an unknown device'} ({result.device_id}), host {result.host}")
    if result.why_no_writes:
        print(f"reads only: {result.why_no_writes}")
    for name, by_qd, cell in (
        ("read_iops", result.read_iops, _iops),
        ("write_iops", result.write_iops, _iops),
        ("read_bw_by_qd", result.read_bw, human_rate),
        ("write_bw_by_qd", result.write_bw, human_rate),
    ):
        if by_qd:
            print(f"  {name}: " + ", ".join(f"qd{qd} {cell(v)}" for qd, v in by_qd.items()))
    cap_w = max(result.write_iops.values()) if result.write_iops else None
    writes = "not measured" if cap_w is None else f"{cap_w:,.0f}"
    print(
        f"capacity: {max(result.read_iops.values()):,.0f} read IOPS, {writes} write IOPS (stored in {store.path})"
    )
    return 0


def _iops(value: float) -> str:
    return f"{value:,.0f} IOPS"


def _calibrate_progress(runtime: float) -> Callable[[int, int, str], None]:
    """``vmio calibrate``'s progress on stderr: the step, how many are left and about how long."""

    from vmio.advise.calibrate import QUEUE_DEPTHS
    from vmio.cli import terminal

    def show(done: int, total: int, step: str) -> None:
        if done < total:
            left = terminal.hms((total - done) * len(QUEUE_DEPTHS) * (runtime + 0.5))
            print(f"[{done}/{total}] calibrating {step} (about {left} left)", file=sys.stderr, flush=True)
        else:
            print(f"[{total}/{total}] calibrated", file=sys.stderr, flush=True)

    return show


def _device(path: str | None) -> str | None:
    """``--device PATH``: an absolute path to an existing file or block device (nothing is written to it)."""
    if path is None:
        return None
    if not path.startswith("/"):
        raise InputError(f"--device {path!r} is not an absolute path; give the file or device as /path")
    if not Path(path).exists():
        raise InputError(f"--device {path!r} does not exist; create the disk image or name a block device")
    if not (Path(path).is_file() or is_block_device(path)):
        raise InputError(f"--device {path!r} is neither a regular file nor a block device")
    return path


def _measured(args: argparse.Namespace) -> Callable[[Config], Ratio | None] | None:
    """This host's stored ratios, per configuration and shape; none when no store exists (advise never
    creates one)."""
    from vmio.advise.measured import measured_ratios, pick
    from vmio.store import Store

    path = args.db or default_db()
    if not Path(path).exists():  # the default store and a named one alike: advice from the paper's ratios
        print(
            f"vmio: note: no store at {path!r}: the advice uses hitachi-nvme-2016's VM/bare ratios, not ones "
            "measured on this host (vmio run makes a store; --db names another)",
            file=sys.stderr,
        )
        return None
    with Store(path, readonly=True) as store:
        ratios = measured_ratios(store)
    return lambda config: pick(ratios, config)


def run_diagnose(args: argparse.Namespace) -> int:
    from vmio.advise.diagnose import diagnose
    from vmio.advise.evidence import load_evidence
    from vmio.advise.text import explain, format_diagnosis

    if args.explain:
        sys.stdout.write(explain())
        return 0
    if args.live:
        if args.campaign is not None or args.evidence is not None:
            raise InputError("--live diagnoses running QEMUs; give it without CAMPAIGN or --evidence")
        from vmio.cli.diagnose_live import run_live

        return run_live(args)
    if args.campaign is not None:
        return _diagnose_campaign(args)
    if args.evidence is None:
        raise InputError("diagnose needs CAMPAIGN, --evidence FILE, or --explain for the decision tree")
    evidence = load_evidence(args.evidence)
    if args.capacity_read_iops is not None or args.capacity_write_iops is not None:
        source = "declared with --capacity-read-iops/--capacity-write-iops"
        devices = tuple(
            replace(
                d,
                capacity_read_iops=args.capacity_read_iops,
                capacity_write_iops=args.capacity_write_iops,
                capacity_source=source,
            )
            for d in evidence.devices
        )
        evidence = replace(evidence, devices=devices)
    diagnosis = diagnose(evidence)
    if args.json:
        print(json.dumps(diagnosis.to_dict(), indent=2))
    else:
        sys.stdout.write(format_diagnosis(diagnosis))
    return 0


def _diagnose_campaign(args: argparse.Namespace) -> int:
    from vmio.advise import from_store
    from vmio.advise.diagnose import diagnose
    from vmio.advise.text import format_diagnosis

    with open_store(args) as store:
        camp = from_store.stored_campaign(store, args.campaign)
        runs = from_store.points_to_diagnose(store, args.campaign, args.point)
        declared = (args.capacity_read_iops, args.capacity_write_iops)
        found = [
            (run["point_key"], from_store.evidence_for(store, camp, run, declared=declared)) for run in runs
        ]
        builds = {run["point_key"]: from_store.build_of(run) for run in store.runs(args.campaign)}
    if args.dump_evidence is not None:
        doc = {key: ev.to_dict() for key, ev in found} if len(found) > 1 else found[0][1].to_dict()
        files.write_atomic(args.dump_evidence, (json.dumps(doc, indent=2) + "\n").encode())
        print(f"evidence for {len(found)} point(s) written to {args.dump_evidence}")
        return 0
    verdicts = {key: diagnose(ev) for key, ev in found}
    several = len({b for b in builds.values() if b}) > 1
    if args.json:
        print(
            json.dumps(
                {key: {**d.to_dict(), "qemu_build": builds[key]} for key, d in verdicts.items()}, indent=2
            )
        )
        return 0
    for key, d in verdicts.items():
        # the build beside each point when the campaign ran several: the verdict may differ with the build
        build = f"  [{builds[key]}]" if several and builds[key] else ""
        sys.stdout.write(f"== {key}{build}\n{format_diagnosis(d)}\n")
    return 0


def run_tune(args: argparse.Namespace) -> int:
    from vmio.advise import tune
    from vmio.campaign import runner
    from vmio.cli.campaign import ProgressPrinter
    from vmio.cli.tune_result import Result, format_outcome, format_plan
    from vmio.qemu import probe_caps
    from vmio.report import compare, data

    options = runner.Options(boot_timeout=argtypes.positive_duration("--boot-timeout", args.boot_timeout))
    with open_store(args, write=True) as store:
        plan = tune.plan(
            store,
            args.campaign,
            caps=probe_caps,
            backing=args.backing,
            tuned_name=args.name,
            only=args.target,
        )
        if not args.json:
            sys.stdout.write(format_plan(plan))
            sys.stdout.flush()
        bar = ProgressPrinter(sys.stderr)
        outcome = tune.execute(plan, store, options, bar) if not plan.refused else None
        bar.close()
        result = Result(plan)
        if outcome is not None:
            before, after = data.load(store, plan.campaign), data.load(store, plan.tuned_name)
            result = Result(plan, outcome, compare.before_after(before, after), outcome.failures)
    if args.json:
        print(json.dumps(result.as_dict(), indent=1))
    else:
        sys.stdout.write(format_outcome(result))
    return 1 if plan.refused or result.failures else 0
