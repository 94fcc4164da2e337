"""``vmio reproduce --list [--json]``, ``vmio reproduce ID [--scale quick|paper] -o DIR [--json] [--force]`` and
``vmio reproduce --diff A B [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vmio.cli import argtypes
from vmio.cli.campaign import ProgressPrinter
from vmio.cli.store_args import add_db, default_db
from vmio.errors import InputError
from vmio.reproduce import SCALES
from vmio.system import files


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``reproduce`` to ``sub``."""
    p = sub.add_parser(
        "reproduce",
        help="run a paper's experiments and set its claims beside vmio's figures (ids: docs/references.md)",
    )
    p.add_argument("paper", nargs="?", metavar="ID", help="the paper's id (see --list)")
    p.add_argument("--list", action="store_true", help="list the papers vmio implements")
    p.add_argument(
        "--diff",
        nargs=2,
        type=Path,
        metavar=("A", "B"),
        help="list the claims whose verdict or stability changed between two result.json (or their folders); "
        "exit 1 when some did",
    )
    p.add_argument(
        "--scale",
        choices=SCALES,
        default="quick",
        help="quick: a few minutes on 2 cores; paper: the paper's sizes where this host allows",
    )
    p.add_argument(
        "-o", "--output", metavar="DIR", type=Path, help="write DIR/index.html and DIR/result.json"
    )
    p.add_argument("--json", action="store_true", help="print the result (or the list) as JSON")
    p.add_argument("--force", action="store_true", help="write into DIR even if it is not empty")
    add_db(p)
    p.add_argument(
        "--disk-dir",
        type=Path,
        default=files.scratch_home(),
        help="where the disk files of a paper's campaigns go, on a disk filesystem (default /var/lib/vmio for root, else ~/.local/state/vmio)",
    )
    p.add_argument(
        "--boot-timeout",
        type=argtypes.duration,
        default="300s",
        help="how long a guest may take to come up (default 300s)",
    )
    p.add_argument(
        "--conf",
        type=Path,
        default=None,
        help="bitisle-dstore-2014: an existing Ceph cluster's ceph.conf (default: vmio starts a "
        "throwaway cluster and removes it after); vmio makes and removes its own images in --pool",
    )
    p.add_argument(
        "--pool", default="vmio", help="the pool of --conf's cluster for vmio's images (default vmio)"
    )
    p.add_argument(
        "--no-live",
        dest="live",
        action="store_false",
        help="hitachi-membal-2014: the simulated cases only (by default case 1 also runs live "
        "where QEMU runs)",
    )
    p.set_defaults(handler=_reproduce)


def _reproduce(args: argparse.Namespace) -> int:
    if args.diff is not None:
        if args.paper is not None or args.list:
            raise InputError("reproduce: --diff A B takes no ID and no --list")
        return _diff(args.diff[0], args.diff[1], args.json)
    if args.list:
        if args.paper is not None:
            raise InputError(f"reproduce: --list takes no ID (got {args.paper!r})")
        return _list(args.json)
    from vmio.reproduce import Request, check, reproduce  # every paper's experiments: when one runs
    from vmio.traces.vm_runs import beside_store

    if args.paper is None:
        raise InputError("reproduce: name a paper's ID (see `vmio reproduce --list`) or pass --list")
    if args.output is None:
        raise InputError(f"reproduce {args.paper}: -o DIR is required (where index.html and result.json go)")
    db = args.db or default_db()
    req = Request(
        args.paper,
        args.scale,
        args.output,
        args.force,
        db,
        args.disk_dir,
        args.boot_timeout,
        beside_store(db),
        args.conf,
        args.pool,
        args.live,
    )
    check(req)
    bar = ProgressPrinter(sys.stderr)
    rep = reproduce(req, bar)
    bar.close()
    result = rep.json()
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        _print_claims(result)
        print(f"wrote {args.output / 'index.html'} and {args.output / 'result.json'}")
    return 1 if rep.failures else 0


def _diff(a: Path, b: Path, as_json: bool) -> int:
    from vmio.reproduce.diff import diff, load

    changes = diff(load(a), load(b))
    if as_json:
        print(json.dumps(changes, indent=2, ensure_ascii=False))
    elif not changes:
        print(f"no claim's verdict or stability changed between {a} and {b}")
    for c in [] if as_json else changes:
        print(
            f"{c['id']}: {c['before']} -> {c['after']} (vmio {_num(c['measured_before'])} -> {_num(c['measured_after'])})"
        )
    return 1 if changes else 0


def _num(v: object) -> str:
    return "-" if not isinstance(v, int | float) else f"{v:.4g}"


def _list(as_json: bool) -> int:
    from vmio.reproduce import papers

    entries = [p.listing() for p in papers()]
    if as_json:
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    width = max(len(e["id"]) for e in entries)
    for e in entries:
        needs = ", ".join(e["needs"]) or "-"
        print(f"{e['id']:<{width}}  {e['year']}  needs: {needs}")
        print(f"{'':<{width}}  {e['title']} ({'; '.join(e['authors'])})")
    return 0


def _print_claims(result: dict[str, object]) -> None:
    from vmio.reproduce.result import verdict

    claims = result["claims"]
    assert isinstance(claims, list)
    print(f"{result['paper']} ({result['scale']} scale)")
    shown = {"agree": "agrees", "disagree": "DISAGREES", "cannot_tell": "the repetitions cannot tell",
             "not_judged": "not judged", "setup": "setup, not judged",
             "absent": "absent: not tested here"}  # fmt: skip
    for c in claims:
        measured = "-" if c["measured"] is None else f"{c['measured']:.4g}"
        reps = f" (n={c['repetitions']})" if c["repetitions"] > 1 else ""
        print(
            f"  {c['id']}: paper {c['paper_value']:g} {c['unit']}, vmio {measured}{reps}: {shown[verdict(c)]}"
        )
        if c["why"]:
            print(f"      why: {c['why']}")
    n = result["counts"]
    assert isinstance(n, dict)
    print(f"  result claims: {n['agree']} agree, {n['disagree']} disagree, {n['cannot_tell']} cannot tell, "
          f"{n['not_judged']} not judged; {n['setup']} setup and {n.get('absent', 0)} absent claims not "
          "counted")  # fmt: skip
    for kind, heading in (("retried", "measured on a second try"), ("failures", "failed")):
        items = result.get(kind)
        assert isinstance(items, list)
        for item in items:
            print(f"  {heading}: {item}")
