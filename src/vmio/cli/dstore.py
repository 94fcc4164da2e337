"""``vmio dstore``: up | down | status | profile | model."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from vmio.cli import argtypes
from vmio.cli.dstore_model import add_model_parser
from vmio.cli.store_args import add_db, open_store
from vmio.dstore import cluster
from vmio.dstore.baseline import baseline_measure, parse_baseline
from vmio.dstore.degraded import Outage, format_run, run_degraded
from vmio.dstore.guestrun import guest_measure, guest_target
from vmio.dstore.profile import (
    DEFAULT_BS,
    Criteria,
    Point,
    Profile,
    degraded_warning,
    format_side_by_side,
    format_table,
    parse_bs_list,
    ratios,
    run_profile,
)
from vmio.dstore.stored import (
    Configured,
    FioTap,
    ceph_versions,
    check_name,
    file_target,
    rbd_target,
    store_profile,
)
from vmio.dstore.variants import check_kind, make_variant, remove_variant
from vmio.errors import InputError
from vmio.store import Store
from vmio.system import files, rbdimage
from vmio.system.cephclient import CephClient, authenticate
from vmio.system.output_paths import all_or_none
from vmio.system.process import Runner
from vmio.units import parse_duration

SCRATCH_MIB = 1024  # the image `dstore profile` makes for itself on an existing cluster (as `dstore up`)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vmio dstore`` and its sub-commands to ``sub``."""
    parser = sub.add_parser(
        "dstore", help="replicated VM storage: Ceph cluster, bitisle-dstore-2014 profile, model"
    )
    dsub = parser.add_subparsers(dest="dstore_command", metavar="ACTION")
    dsub.required = True
    p = dsub.add_parser("up", help="start a throwaway Ceph cluster on 127.0.0.1")
    p.add_argument("--dir", required=True, type=Path, help="new folder for the cluster")
    p.add_argument("--osds", type=argtypes.count(1, 16), default=3)
    p.add_argument("--deadline", default="180s", help="time allowed for all PGs to be active+clean")
    p.set_defaults(handler=_up)
    p = dsub.add_parser("down", help="stop every daemon of a cluster and remove its folder")
    p.add_argument("--dir", required=True, type=Path)
    p.set_defaults(handler=_down)
    p = dsub.add_parser("status", help="health, OSDs, PG states and daemons")
    _target_args(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_status)
    p = dsub.add_parser("profile", help="bitisle-dstore-2014's profile: 30/70 random, 50 outstanding, 4K-1M")
    _target_args(p)
    _profile_args(p)
    p.set_defaults(handler=_profile)
    add_model_parser(dsub)


def _target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", type=Path, help="a cluster started by `vmio dstore up`")
    p.add_argument("--conf", type=Path, help="an existing cluster's ceph.conf (instead of --dir)")
    p.add_argument("--pool", help="pool of the existing cluster")
    p.add_argument("--image", help="RBD image in that pool")
    p.add_argument(
        "--replicas", type=argtypes.count(1, 16), default=3, help="pool size of the existing cluster"
    )
    p.add_argument("--client", metavar="NAME", help="connect as client.NAME (default: the conf's, admin)")
    p.add_argument("--keyring", type=Path, metavar="PATH", help="that client's keyring (default: the conf's)")


def _profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bs", help="e.g. 4k,64k,1m (default 4K-1M; one size, 4k, with --fail-osd)")
    p.add_argument("--runtime", help="per block size (default 10s; with --fail-osd: back-at + 20s)")
    p.add_argument("--ramp", default="1s")
    p.add_argument("--iodepth", type=argtypes.count(1, 65536), default=50)
    p.add_argument("--rwmixread", type=argtypes.count(0, 100), default=30)
    p.add_argument("--ideal-ms", type=argtypes.real(0, 1e6), default=20.0)
    p.add_argument("--acceptable-ms", type=argtypes.real(0, 1e6), default=100.0)
    p.add_argument("--min-iops-host", type=argtypes.real(0, 1e9), default=500.0)
    p.add_argument("--min-iops-cluster", type=argtypes.real(0, 1e9), default=4000.0)
    p.add_argument(
        "--spike-ms", type=argtypes.real(0, 1e6), default=100.0, help="limit for the spikes (p99, max)"
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
    p.add_argument("--boot-timeout", default="180s", help="for --from-guest's VM")
    p.add_argument(
        "--fail-osd", type=argtypes.count(0, 1023), metavar="N", help="stop osd.N during a time-series run"
    )
    p.add_argument("--at", default="10s", help="with --fail-osd: when to stop it")
    p.add_argument("--back-at", default="40s", help="with --fail-osd: when to start it again")
    p.add_argument(
        "--destroy-data",
        action="append",
        default=[],
        metavar="rbd:POOL/IMAGE",
        help="allow writing this RBD image although it holds data vmio did not put there",
    )
    p.add_argument("--plot-dir", type=argtypes.out_dir, help="write profile.png (and compare.png) here")
    p.add_argument("-o", "--output", type=argtypes.out_file, help="also write the JSON result to this file")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--name", help="also store the profile as campaign NAME (new in the store) for show, export, report"
    )
    add_db(p)


def _client(args: argparse.Namespace) -> CephClient:
    if args.keyring is not None and args.client is None:
        raise InputError(
            f"--keyring {str(args.keyring)!r} needs --client NAME, the client it holds a key for"
        )
    client = CephClient(args.client, args.keyring.absolute() if args.keyring else None)
    client.check()
    return client


def target(args: argparse.Namespace, runner: Runner | None = None) -> cluster.ClusterRef:
    """The cluster named by --dir, or by --conf/--pool/--image, as --client (its key checked first)."""
    ref = _target(args)
    authenticate(runner or Runner(), ref.conf, ref.client)
    return ref


def _target(args: argparse.Namespace) -> cluster.ClusterRef:
    if args.dir is not None and args.conf is not None:
        raise InputError("give either --dir or --conf, not both")
    if args.dir is not None:
        return replace(cluster.load(args.dir), client=_client(args))
    if args.conf is None:
        raise InputError(
            "no cluster given; use --dir DIR (from `vmio dstore up`) or --conf FILE --pool P --image I"
        )
    if not args.pool or not args.image:
        raise InputError(f"--conf {str(args.conf)!r} needs --pool and --image naming the RBD image to use")
    return cluster.existing(args.conf, args.pool, args.image, args.replicas, _client(args))


@contextlib.contextmanager
def writable_target(args: argparse.Namespace, runner: Runner) -> Iterator[cluster.ClusterRef]:
    """The image a profile writes. On an existing cluster without --image: a new image marked as vmio's,
    removed after. Otherwise the named one, refused (exit 3) if it holds data not named in --destroy-data."""
    if args.conf is not None and args.dir is None and not args.image:
        if not args.pool:
            raise InputError(f"--conf {str(args.conf)!r} needs --pool (vmio makes its own image there)")
        base = cluster.existing(args.conf, args.pool, "-", args.replicas, _client(args))
        authenticate(runner, base.conf, base.client)
        image = rbdimage.create_scratch(runner, base.conf, base.pool, SCRATCH_MIB, auth=base.auth())
        try:
            yield replace(base, image=image)
        finally:
            rbdimage.remove_scratch(runner, base.conf, base.pool, image, base.auth())
        return
    ref = target(args, runner)
    rbdimage.check_write(runner, ref.conf, ref.pool, ref.image, args.destroy_data, ref.auth())
    yield ref


def _duration(flag: str, text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from exc


def _up(args: argparse.Namespace) -> int:
    ref = cluster.up(args.dir, osds=args.osds, deadline_s=_duration("--deadline", args.deadline))
    print(
        f"cluster up in {ref.root}: conf {ref.conf}, pool {ref.pool} (size {ref.replicas}), image {ref.image}"
    )
    return 0


def _down(args: argparse.Namespace) -> int:
    stopped = cluster.down(args.dir)
    print(f"stopped {', '.join(stopped) or 'no running daemons'}; removed {args.dir}")
    return 0


def _status(args: argparse.Namespace) -> int:
    info = cluster.status(Runner(), target(args))
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        for key, value in info.items():
            print(f"{key:>10}: {value}")
    clean = info["pgs"] > 0 and info["pg_states"].get("active+clean", 0) == info["pgs"]
    return 0 if clean and info["osds_up"] == info["osds"] else 1


def _profile(args: argparse.Namespace) -> int:
    if args.fail_osd is not None:
        return _degraded(args)
    for flag in ("--at", "--back-at"):
        if getattr(args, flag[2:].replace("-", "_")) != {"--at": "10s", "--back-at": "40s"}[flag]:
            raise InputError(f"{flag} {getattr(args, flag[2:].replace('-', '_'))!r} needs --fail-osd N")
    if args.db is not None and args.name is None:
        raise InputError(f"--db {args.db!r} names the store for --name; give --name NAME too")
    if args.name is None:
        runner = FioTap()
        with writable_target(args, runner) as ref:
            return _profile_on(args, ref, runner, None)
    with open_store(args, write=True) as store:
        check_name(store, args.name)
        runner = FioTap()
        with writable_target(args, runner) as ref:
            return _profile_on(args, ref, runner, store)


def _profile_on(
    args: argparse.Namespace, ref: cluster.ClusterRef, runner: FioTap, store: Store | None
) -> int:
    bs_list = parse_bs_list(args.bs) if args.bs else list(DEFAULT_BS)
    runtime = _duration("--runtime", args.runtime or "10s")
    ramp = _duration("--ramp", args.ramp)
    boot_timeout = _duration("--boot-timeout", args.boot_timeout)
    criteria = Criteria(
        args.ideal_ms, args.acceptable_ms, args.min_iops_host, args.min_iops_cluster, args.spike_ms
    )
    labels = check_kind(args.compare) if args.compare else None
    baseline = parse_baseline(args.baseline, ref) if args.baseline else None

    configs: list[Configured] = []

    def run(
        on: cluster.ClusterRef, label: str, name: str, measure: Any = None, watch: bool = True
    ) -> Profile:
        mark = len(runner.tapped)
        prof = run_profile(
            on,
            bs_list,
            runtime_s=runtime,
            ramp_s=ramp,
            criteria=criteria,
            runner=runner,
            iodepth=args.iodepth,
            rwmixread=args.rwmixread,
            on_point=_progress,
            measure=measure,
            watch=watch,
        )
        prof.setup["config"] = label
        warning = degraded_warning(prof, label)
        if warning:
            print(warning, file=sys.stderr)
        configs.append(Configured(rbd_target(name, on), prof, runner.tapped[mark:]))
        return prof

    base = run(ref, labels[1] if labels else "as configured", "host-librbd")
    out: dict[str, Any] = base.to_json()
    sides: list[tuple[str, Profile, str]] = []  # (label, profile, ratio name) printed beside the base
    if baseline is not None:
        with baseline_measure(baseline, ref, runner) as (on, measure):
            other_base = run(on, baseline.label, f"host-librbd-size{baseline.replicas}", measure,
                             watch=baseline.path is None)  # fmt: skip
        if baseline.path is not None:
            other_base.setup.update(
                where="local file, libaio", path=str(baseline.path), pool=None, image=None
            )
            configs[-1].target = file_target("host-file", baseline.path)
        out["baseline"] = {"label": baseline.label, "points": other_base.to_json()["points"],
                           "setup": other_base.setup}  # fmt: skip
        for point, ratio in zip(out["points"], ratios(base.points, other_base.points).values(), strict=True):
            point["vs_baseline"] = ratio
        sides.append((baseline.label, other_base, "vs base"))
    if args.from_guest:
        with guest_measure(ref, runner, boot_timeout=boot_timeout) as (measure, facts):
            guest = run(ref, "from guest", "guest-rbd", measure)
        guest.setup.update(facts)
        configs[-1].target = replace(guest_target(ref), name="guest-rbd")
        out["guest"] = {"label": "from guest", "points": guest.to_json()["points"], "setup": guest.setup}
        for point, ratio in zip(
            out["guest"]["points"], ratios(guest.points, base.points).values(), strict=True
        ):
            point["vs_host"] = ratio
        sides.append((f"from guest ({guest.setup.get('accel')})", guest, "guest/host"))
    if labels:
        variant = make_variant(runner, ref, args.compare)
        try:
            other = run(
                variant, labels[0], f"host-librbd-{'size2' if args.compare == 'replicas' else 'striped'}"
            )
        finally:
            remove_variant(runner, ref, variant)
        out["compare"] = {"kind": args.compare, "labels": list(labels), "other": other.to_json()}
    if args.plot_dir is not None:
        from vmio.dstore.plots import plot_compare, plot_profile  # matplotlib: only when plotting

        plotted: list[Path] = []
        with all_or_none(plotted):  # every figure, or none of them
            plotted.append(plot_profile(base, args.plot_dir / "profile.png"))
            for label, prof, _ in sides:
                name = "baseline.png" if prof.setup.get("config") != "from guest" else "guest.png"
                plotted.append(plot_compare(
                    prof, base, (label, "replicated"), args.plot_dir / name, title=f"{label} vs replicated"
                ))  # fmt: skip
            if labels:
                plotted.append(plot_compare(
                    other, base, labels, args.plot_dir / "compare.png", title=f"{labels[0]} vs {labels[1]}"
                ))  # fmt: skip
    if store is not None:
        keys = store_profile(store, args.name, configs, ceph_versions(runner, ref))
        print(f"stored as campaign {args.name!r} ({len(keys)} points) in {store.path}", file=sys.stderr)
    if args.output is not None:
        files.write_atomic(args.output, (json.dumps(out, indent=2) + "\n").encode())
    print(json.dumps(out, indent=2) if args.json else format_table(base))
    if labels and not args.json:
        print(f"\n{labels[0]}:\n{format_table(other)}")
    for label, prof, ratio_name in sides if not args.json else ():
        print(f"\n{label}:\n{format_table(prof)}")
        if ratio_name == "vs base":
            print(f"\nreplicated vs {label} (IOPS ratio):\n"
                  f"{format_side_by_side(base, prof, ('replicated', label), ratio_name)}")  # fmt: skip
        else:
            print(f"\n{label} vs host librbd (IOPS ratio):\n"
                  f"{format_side_by_side(prof, base, (label, 'host librbd'), ratio_name)}")  # fmt: skip
    return 0


def _degraded(args: argparse.Namespace) -> int:
    for flag, value in (("--baseline", args.baseline), ("--compare", args.compare)):
        if value:
            raise InputError(f"{flag} {value!r} cannot be combined with --fail-osd; run them separately")
    if args.from_guest:
        raise InputError("--from-guest cannot be combined with --fail-osd; run them separately")
    if args.name is not None or args.db is not None:
        raise InputError(
            f"--name {args.name!r}: a run with --fail-osd is a time series, not stored as a campaign; "
            "drop --name/--db (-o keeps its JSON)"
        )
    ref = target(args)
    rbdimage.check_write(Runner(), ref.conf, ref.pool, ref.image, args.destroy_data, ref.auth())
    bs_list = parse_bs_list(args.bs) if args.bs else [4096]
    if len(bs_list) != 1:
        raise InputError(f"--bs {args.bs!r}: a run with --fail-osd takes one block size")
    at = _duration("--at", args.at)
    back = _duration("--back-at", args.back_at)
    runtime = _duration("--runtime", args.runtime) if args.runtime else back + 20.0
    outage = Outage(args.fail_osd, at, back)
    outage.check(ref, runtime)
    run = run_degraded(
        ref, outage, bs=bs_list[0], runtime_s=runtime, iodepth=args.iodepth, rwmixread=args.rwmixread
    )
    out = {"degraded": run.to_json()}
    if args.output is not None:
        files.write_atomic(args.output, (json.dumps(out, indent=2) + "\n").encode())
    print(json.dumps(out, indent=2) if args.json else format_run(run))
    return 0


def _progress(point: Point) -> None:
    print(
        f"  bs {point.bs}: {point.iops:.0f} IOPS, mean {point.mean_lat_ms:.1f} ms ({point.verdict})",
        file=sys.stderr,
    )
