"""``vmio dstore model``: fit the replicated-store model to a profile and ask what-if questions."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from vmio.cli import argtypes
from vmio.dstore.settings import WRITE_PATHS, Criteria, ModelSettings, ProfileSettings
from vmio.units import format_size

# the model and the cluster commands (numpy, QMP) are imported when `dstore model` runs, not for its --help
if TYPE_CHECKING:
    from vmio.dstore import commands
    from vmio.dstore.model import Prediction


def add_model_parser(dsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``model`` to the dstore sub-commands."""
    p = dsub.add_parser("model", help="predict IOPS/latency per block size; fit to a profile; what-if")
    p.add_argument(
        "--calibrate",
        metavar="CAMPAIGN_OR_PROFILE",
        help="a profile JSON from `vmio dstore profile --json`, or a stored campaign with rbd targets",
    )
    p.add_argument("--db", default=None, help="the store for --calibrate CAMPAIGN (default ./vmio.db)")
    p.add_argument("--target", help="the campaign's rbd target to fit (default: all of them)")
    p.add_argument("--fit-bs", help="fit only at these block sizes, e.g. 4k,8k,16k")
    p.add_argument("--bs", help="predict at these block sizes (default: bitisle-dstore-2014's 4k..1m)")
    base = p.add_argument_group("the measured (base) configuration")
    base.add_argument(
        "--base-replicas",
        type=argtypes.count(1, 64),
        help=f"default: the profile's pool size, else {ModelSettings.REPLICAS}",
    )
    base.add_argument(
        "--devices",
        type=argtypes.count(1, 100_000),
        help=f"OSDs/devices; default: the profile's OSDs, else {ModelSettings.DEVICES}",
    )
    base.add_argument("--hosts", type=argtypes.count(1, 100_000), help="storage hosts; default: the devices")
    base.add_argument(
        "--base-network", default=ModelSettings.base_network, help="link speed in bits, e.g. 10G"
    )
    base.add_argument("--rtt", default=ModelSettings.rtt, help="network round trip")
    base.add_argument(
        "--base-write-path",
        choices=WRITE_PATHS,
        default=ModelSettings.base_write_path,
        help="how the base configuration writes replicas (default %(default)s)",
    )
    base.add_argument(
        "--dev-op", default=ModelSettings.dev_op, help="device service time per op (without --calibrate)"
    )
    base.add_argument(
        "--dev-bw", default=ModelSettings.dev_bw, help="device bandwidth, bytes/s (without --calibrate)"
    )
    what = p.add_argument_group("what if")
    what.add_argument(
        "--replicas", type=argtypes.count(1, 64), help="what if: this many copies of each write"
    )
    what.add_argument("--stripe", type=argtypes.count(1, 1024), help="stripe width (pieces per I/O)")
    what.add_argument("--network", help="link speed in bits per second, e.g. 25G")
    what.add_argument("--write-path", choices=WRITE_PATHS, help="what if: replicas written this way")
    what.add_argument(
        "--cache-share", type=argtypes.real(0, 1), help="fraction of writes absorbed by a write cache"
    )
    what.add_argument(
        "--iodepth",
        type=argtypes.count(1, 65536),
        help=f"outstanding I/Os (default: the profile's, else {ProfileSettings.iodepth})",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=_model)


def _model(args: argparse.Namespace) -> int:
    from vmio.cli.store_args import default_db
    from vmio.dstore import commands
    from vmio.dstore.profile import parse_bs_list

    result = commands.model(
        ModelSettings(
            calibrate=args.calibrate,
            db=args.db or default_db(),
            target=args.target,
            fit_bs=tuple(parse_bs_list(args.fit_bs)) if args.fit_bs else None,
            bs=tuple(parse_bs_list(args.bs)) if args.bs else None,
            base_replicas=args.base_replicas,
            devices=args.devices,
            hosts=args.hosts,
            base_network=args.base_network,
            rtt=args.rtt,
            base_write_path=args.base_write_path,
            dev_op=args.dev_op,
            dev_bw=args.dev_bw,
            replicas=args.replicas,
            stripe=args.stripe,
            network=args.network,
            write_path=args.write_path,
            cache_share=args.cache_share,
            iodepth=args.iodepth,
        )
    )
    if args.json:
        print(json.dumps(_json(result), indent=2))
    else:
        print(_table(result))
    return 0


def _row(p: Prediction, criteria: Criteria) -> dict[str, object]:
    from vmio.dstore.profile import verdict

    return {**asdict(p), "verdict": verdict(p.mean_lat_ms, p.iops, criteria)}


def _json(result: commands.ModelResult) -> dict[str, object]:
    """``dstore model --json``: the fit, the predictions before and after the changes, the criteria."""
    fit, criteria = result.fit, result.criteria
    return {
        "fit": {
            "params": asdict(fit.params),
            "fit_bs": fit.fit_bs,
            "rms_log_error": fit.rms_log_error,
            "outstanding": fit.outstanding,
            "read_frac": fit.read_frac,
        },
        "baseline": [_row(p, criteria) for p in result.baseline],
        "what_if": {"changes": result.changes, "points": [_row(p, criteria) for p in result.changed]},
        "criteria": asdict(criteria),
    }


def _table(result: commands.ModelResult) -> str:
    from vmio.dstore.profile import verdict

    fit, criteria, changes = result.fit, result.criteria, result.changes
    p = fit.params
    lines = [
        f"model: {p.replicas} replicas, {p.devices} devices, {p.write_path} writes, "
        f"device {p.dev_op_s * 1e3:.3f} ms/op + {p.dev_bw / 1e6:.0f} MB/s, "
        + (
            f"fit error {fit.rms_log_error:.1%} (rms log IOPS) at {len(fit.fit_bs)} block sizes"
            if fit.fit_bs
            else "not fitted (parameters as given)"
        )
    ]
    what = ", ".join(f"{k}={v}" for k, v in changes.items()) or "no change"
    lines.append(f"{'bs':>6} {'IOPS':>8} {'mean ms':>8} {'p99 ms':>8} {'verdict':>10} | what if {what}")
    for b, c in zip(result.baseline, result.changed, strict=True):
        lines.append(
            f"{format_size(b.bs):>6} {b.iops:8.0f} {b.mean_lat_ms:8.2f} {b.p99_lat_ms:8.2f} "
            f"{verdict(b.mean_lat_ms, b.iops, criteria):>10} | {c.iops:8.0f} "
            f"{c.mean_lat_ms:8.2f} {c.p99_lat_ms:8.2f} {verdict(c.mean_lat_ms, c.iops, criteria)}"
        )
    return "\n".join(lines)
