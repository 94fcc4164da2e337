"""``vmio dstore``: up | down | status | profile | show | model."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from vmio.cli import argtypes
from vmio.cli.dstore_model import add_model_parser
from vmio.cli.store_args import add_db, open_store
from vmio.dstore.settings import AT_S, BACK_AT_S, PROFILE_RUNTIME_S, Criteria, ProfileSettings, UpSettings
from vmio.errors import InputError
from vmio.system import files
from vmio.units import parse_duration

# the cluster's commands (Ceph, fio, campaigns, QMP, numpy) are imported when a command runs, not for --help
if TYPE_CHECKING:
    from vmio.dstore import commands
    from vmio.dstore.profile import Point
    from vmio.dstore.where import Where


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vmio dstore`` and its sub-commands to ``sub``."""
    parser = sub.add_parser(
        "dstore", help="replicated VM storage: Ceph cluster, bitisle-dstore-2014 profile, model"
    )
    dsub = parser.add_subparsers(dest="dstore_command", metavar="ACTION")
    dsub.required = True
    p = dsub.add_parser("up", help="start a throwaway Ceph cluster on 127.0.0.1")
    p.add_argument("--dir", required=True, type=Path, help="new folder for the cluster")
    p.add_argument(
        "--osds",
        type=argtypes.count(1, 16),
        default=UpSettings.osds,
        help="how many OSDs (default %(default)s)",
    )
    p.add_argument(
        "--deadline",
        default=f"{UpSettings.deadline_s:g}s",
        help="time allowed for all PGs to be active+clean",
    )
    p.add_argument(
        "--network",
        choices=("loopback", "netns"),
        default=UpSettings.network,
        help="loopback: every daemon on 127.0.0.1; netns: the mon, each OSD and the client each in a network "
        "namespace of its own, joined through a bridge by rate-shaped links (replicas cross them)",
    )
    p.add_argument(
        "--rate", help="with --network netns: each link's rate (default 10gbit; e.g. 1gbit, 100mbit)"
    )
    p.add_argument(
        "--delay-ms",
        type=argtypes.real(0, 10000),
        help="with --network netns: one-way delay added per link where the kernel has netem (else named absent)",
    )
    p.set_defaults(handler=_up)
    p = dsub.add_parser("down", help="stop every daemon of a cluster and remove its folder")
    p.add_argument("--dir", required=True, type=Path, help="the folder `vmio dstore up` made")
    p.set_defaults(handler=_down)
    p = dsub.add_parser("status", help="health, OSDs, PG states and daemons")
    _target_args(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=_status)
    p = dsub.add_parser("profile", help="bitisle-dstore-2014's profile: 30/70 random, 50 outstanding, 4K-1M")
    _target_args(p)
    _profile_args(p)
    p.set_defaults(handler=_profile)
    p = dsub.add_parser("show", help="a stored profile (dstore profile --name) as dstore profile printed it")
    p.add_argument("name", metavar="NAME", help="the campaign the profile is stored as")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_db(p)
    p.set_defaults(handler=_show)
    add_model_parser(dsub)


def _target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", type=Path, help="a cluster started by `vmio dstore up`")
    p.add_argument("--conf", type=Path, help="an existing cluster's ceph.conf (instead of --dir)")
    p.add_argument("--pool", help="pool of the existing cluster")
    p.add_argument("--image", help="RBD image in that pool")
    p.add_argument(
        "--replicas",
        type=argtypes.count(1, 16),
        help="pool size of the existing cluster",
    )
    p.add_argument("--client", metavar="NAME", help="connect as client.NAME (default: the conf's, admin)")
    p.add_argument("--keyring", type=Path, metavar="PATH", help="that client's keyring (default: the conf's)")


def _profile_args(p: argparse.ArgumentParser) -> None:
    d, c = ProfileSettings(), Criteria()
    p.add_argument("--bs", help="e.g. 4k,64k,1m (default 4K-1M; one size, 4k, with --fail-osd)")
    p.add_argument(
        "--runtime", help=f"per block size (default {PROFILE_RUNTIME_S:g}s; with --fail-osd: back-at + 20s)"
    )
    p.add_argument(
        "--ramp", default=f"{d.ramp_s:g}s", help="warm-up before each point is measured (default %(default)s)"
    )
    p.add_argument(
        "--iodepth",
        type=argtypes.count(1, 65536),
        default=d.iodepth,
        help="outstanding I/Os (default %(default)s, bitisle-dstore-2014's 50)",
    )
    p.add_argument(
        "--rwmixread",
        type=argtypes.count(0, 100),
        default=d.rwmixread,
        help="%% reads in the mix (default %(default)s)",
    )
    p.add_argument(
        "--ideal-ms",
        type=argtypes.real(0, 1e6),
        default=c.ideal_ms,
        help="the ideal latency bound in ms (default %(default)s)",
    )
    p.add_argument(
        "--acceptable-ms",
        type=argtypes.real(0, 1e6),
        default=c.acceptable_ms,
        help="the acceptable latency bound in ms (default %(default)s)",
    )
    p.add_argument(
        "--min-iops-host",
        type=argtypes.real(0, 1e9),
        default=c.min_iops_host,
        help="the IOPS a host must get (default %(default)s)",
    )
    p.add_argument(
        "--min-iops-cluster",
        type=argtypes.real(0, 1e9),
        default=c.min_iops_cluster,
        help="the IOPS the cluster must get (default %(default)s)",
    )
    p.add_argument(
        "--spike-ms", type=argtypes.real(0, 1e6), default=c.spike_ms, help="limit for the spikes (p99, max)"
    )
    p.add_argument("--compare", help="also profile a second configuration: replicas | striping")
    p.add_argument(
        "--baseline",
        help="also profile a non-replicated baseline: replicas=1 (same OSDs, one copy) or file:PATH",
    )
    p.add_argument(
        "--from-guest",
        action="store_true",
        help="also profile from inside a VM whose disk is the RBD image (QEMU's rbd driver)",
    )
    p.add_argument("--boot-timeout", default=f"{d.boot_timeout_s:g}s", help="for --from-guest's VM")
    p.add_argument(
        "--fail-osd", type=argtypes.count(0, 1023), metavar="N", help="stop osd.N during a time-series run"
    )
    p.add_argument("--at", help=f"with --fail-osd: when to stop it (default {AT_S:g}s)")
    p.add_argument("--back-at", help=f"with --fail-osd: when to start it again (default {BACK_AT_S:g}s)")
    p.add_argument(
        "--destroy-data",
        action="append",
        default=[],
        metavar="rbd:POOL/IMAGE",
        help="allow writing this RBD image although it holds data vmio did not put there",
    )
    p.add_argument("--plot-dir", type=argtypes.out_dir, help="write profile.png (and compare.png) here")
    p.add_argument("-o", "--output", type=argtypes.out_file, help="also write the JSON result to this file")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument(
        "--name",
        help="also keep the profile as campaign NAME for show, export, report (the same profile stored under "
        "NAME is resumed)",
    )
    add_db(p)


def _where(args: argparse.Namespace) -> Where:
    from vmio.dstore.where import Where

    replicas = Where.replicas if args.replicas is None else args.replicas
    return Where(args.dir, args.conf, args.pool, args.image, replicas, args.client, args.keyring)


def _duration(flag: str, text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from exc


def _settings(args: argparse.Namespace) -> ProfileSettings:
    """The profile's settings from the flags: what was not given keeps ``ProfileSettings``' default."""
    from vmio.dstore.profile import parse_bs_list

    criteria = Criteria(
        args.ideal_ms, args.acceptable_ms, args.min_iops_host, args.min_iops_cluster, args.spike_ms
    )
    return ProfileSettings(
        bs=tuple(parse_bs_list(args.bs)) if args.bs else None,
        runtime_s=_duration("--runtime", args.runtime) if args.runtime else None,
        ramp_s=_duration("--ramp", args.ramp),
        iodepth=args.iodepth,
        rwmixread=args.rwmixread,
        criteria=criteria,
        compare=args.compare,
        baseline=args.baseline,
        from_guest=args.from_guest,
        boot_timeout_s=_duration("--boot-timeout", args.boot_timeout),
        fail_osd=args.fail_osd,
        at_s=_duration("--at", args.at) if args.at is not None else None,
        back_at_s=_duration("--back-at", args.back_at) if args.back_at is not None else None,
        destroy_data=tuple(args.destroy_data),
        plot_dir=args.plot_dir,
        name=args.name,
    )


def _up(args: argparse.Namespace) -> int:
    from vmio.dstore import commands
    from vmio.dstore.profile import network_text
    from vmio.system.netns import parse_rate

    if args.network != "netns":
        for flag, value in (("--rate", args.rate), ("--delay-ms", args.delay_ms)):
            if value is not None:
                raise InputError(f"{flag} {value!r} shapes a network of namespaces; give --network netns too")
    settings = UpSettings(
        args.osds,
        _duration("--deadline", args.deadline),
        args.network,
        parse_rate(args.rate) if args.rate is not None else UpSettings.rate,
        args.delay_ms,
    )
    ref = commands.up(args.dir, settings)
    print(
        f"cluster up in {ref.root}: conf {ref.conf}, pool {ref.pool} (size {ref.replicas}), image {ref.image}; "
        f"network: {network_text(ref.network_json())}"
    )
    return 0


def _down(args: argparse.Namespace) -> int:
    from vmio.dstore import commands

    stopped = commands.down(args.dir)
    print(f"stopped {', '.join(stopped) or 'no running daemons'}; removed {args.dir}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from vmio.dstore import commands

    info = commands.status(_where(args))
    if args.json:
        print(json.dumps(info.to_json(), indent=2))
    else:
        for key, value in info.to_json().items():
            print(f"{key:>10}: {value}")
    return 0 if info.healthy else 1


def _profile(args: argparse.Namespace) -> int:
    from vmio.dstore import commands
    from vmio.dstore.degraded import format_run

    if args.db is not None and args.name is None:
        raise InputError(f"--db {args.db!r} names the store for --name; give --name NAME too")
    settings = _settings(args)
    if settings.fail_osd is not None:
        if settings.name is None:
            run = commands.degraded(_where(args), settings)
        else:
            with open_store(args, write=True) as store:
                run = commands.degraded(_where(args), settings, store=store)
        out = {"degraded": run.to_json()}
        _write_json(args, out)
        print(json.dumps(out, indent=2) if args.json else format_run(run))
        return 0
    if settings.name is None:
        result = commands.profile(_where(args), settings, on_point=_progress, warn=_warn)
    else:
        with open_store(args, write=True) as store:
            result = commands.profile(_where(args), settings, store=store, on_point=_progress, warn=_warn)
            print(
                f"stored as campaign {settings.name!r} ({len(result.stored or [])} points) in {store.path}",
                file=sys.stderr,
            )
    _write_json(args, result.to_json())
    _print_profile(result, args.json)
    return 0


def _show(args: argparse.Namespace) -> int:
    from vmio.dstore import commands

    with open_store(args) as store:
        result = commands.stored(store, args.name)
    _print_profile(result, args.json)
    return 0


def _write_json(args: argparse.Namespace, out: Mapping[str, object]) -> None:
    if args.output is not None:
        files.write_atomic(args.output, (json.dumps(out, indent=2) + "\n").encode())


def _print_profile(result: commands.ProfileResult, as_json: bool) -> None:
    from vmio.dstore.profile import format_side_by_side, format_table

    base, labels = result.base, result.labels
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
        return
    print(format_table(base))
    if labels and result.other is not None:
        print(f"\n{labels[0]}:\n{format_table(result.other)}")
    for label, prof, ratio_name in result.sides:
        print(f"\n{label}:\n{format_table(prof)}")
        if ratio_name == "vs base":
            print(
                f"\nreplicated vs {label} (IOPS ratio):\n"
                f"{format_side_by_side(base, prof, ('replicated', label), ratio_name)}"
            )
        else:
            print(
                f"\n{label} vs host librbd (IOPS ratio):\n"
                f"{format_side_by_side(prof, base, (label, 'host librbd'), ratio_name)}"
            )


def _warn(text: str) -> None:
    print(text, file=sys.stderr)


def _progress(point: Point) -> None:
    print(
        f"  bs {point.bs}: {point.iops:.0f} IOPS, mean {point.mean_lat_ms:.1f} ms ({point.verdict})",
        file=sys.stderr,
    )
