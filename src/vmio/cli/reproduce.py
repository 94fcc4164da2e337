"""``vmio reproduce --list [--json]`` and ``vmio reproduce ID [--scale quick|paper] -o DIR [--json] [--force]``."""

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
    claims = result["claims"]
    assert isinstance(claims, list)
    print(f"{result['paper']} ({result['scale']} scale)")
    for c in claims:
        agrees = {True: "agrees", False: "DISAGREES", None: "not judged"}[c["agrees"]]
        measured = "-" if c["measured"] is None else f"{c['measured']:.4g}"
        print(f"  {c['id']}: paper {c['paper_value']:g} {c['unit']}, vmio {measured}: {agrees}")
        if c["why"]:
            print(f"      why: {c['why']}")
    for kind, heading in (("retried", "measured on a second try"), ("failures", "failed")):
        items = result.get(kind)
        assert isinstance(items, list)
        for item in items:
            print(f"  {heading}: {item}")
