"""``vmio advise`` (Fig. 9 over host facts) and ``vmio diagnose`` (Fig. 10 over evidence)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vmio.advise.config import ADVISE_BUSES, Requirements, advise, parse_buses
from vmio.advise.diagnose import diagnose
from vmio.advise.evidence import load_evidence
from vmio.advise.host import QEMU, read_host_facts
from vmio.advise.text import explain, format_advice, format_diagnosis
from vmio.errors import InputError
from vmio.proc import Runner


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``advise`` and ``diagnose`` to ``sub``."""
    adv = sub.add_parser("advise", help="recommend a VM disk configuration (seed 000, Fig. 9)")
    for flag, text in (
        ("--scale-out", "capacity grows by adding VMs"),
        ("--dedicated-disk", "a device may be given to one VM"),
        ("--live-migration", "VMs must live-migrate"),
    ):
        adv.add_argument(flag, choices=("yes", "no"), default="no", help=f"{text} (default no)")
    adv.add_argument("--bus", default=",".join(ADVISE_BUSES), help="allowed buses, comma-separated")
    adv.add_argument("--json", action="store_true", help="print JSON")
    adv.add_argument("--qemu", default=QEMU, help=argparse.SUPPRESS)
    adv.add_argument("--sysfs", type=Path, default=Path("/sys"), help=argparse.SUPPRESS)
    adv.add_argument("--proc", type=Path, default=Path("/proc"), help=argparse.SUPPRESS)
    adv.set_defaults(handler=run_advise)

    diag = sub.add_parser("diagnose", help="is I/O at its limit, and what limits it (seed 000, Fig. 10)")
    diag.add_argument("--evidence", type=Path, metavar="FILE", help="an evidence JSON file")
    diag.add_argument("--explain", action="store_true", help="print the decision tree and thresholds")
    diag.add_argument("--json", action="store_true", help="print JSON")
    diag.set_defaults(handler=run_diagnose)


def run_advise(args: argparse.Namespace) -> int:
    req = Requirements(
        scale_out=args.scale_out == "yes",
        dedicated_disk=args.dedicated_disk == "yes",
        buses=parse_buses(args.bus),
        live_migration=args.live_migration == "yes",
    )
    facts = read_host_facts(Runner(), sysfs=args.sysfs, proc=args.proc, qemu=args.qemu)
    advice = advise(facts, req)
    if args.json:
        print(json.dumps(advice.to_dict(), indent=2))
    else:
        sys.stdout.write(format_advice(advice))
    return 0


def run_diagnose(args: argparse.Namespace) -> int:
    if args.explain:
        sys.stdout.write(explain())
        return 0
    if args.evidence is None:
        raise InputError("diagnose needs --evidence FILE (or --explain for the decision tree)")
    diagnosis = diagnose(load_evidence(args.evidence))
    if args.json:
        print(json.dumps(diagnosis.to_dict(), indent=2))
    else:
        sys.stdout.write(format_diagnosis(diagnosis))
    return 0
