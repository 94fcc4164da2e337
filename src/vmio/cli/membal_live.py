"""``vmio membal run``: boot VMs, drive their balloons with a live policy, print and store each decision."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

from vmio.cli import argtypes
from vmio.cli.argtypes import duration, size
from vmio.errors import InputError
from vmio.membal.live import LIVE_POLICIES, Step, policy_params
from vmio.membal.liverun import LiveOutcome, LiveSettings, describe, run_live
from vmio.membal.livework import Load, load_config
from vmio.store import Store
from vmio.units import format_size

_DEFAULTS: dict[str, Any] = {
    "vms": 2, "memory": 512 << 20, "floor": 256 << 20, "policy": "refault", "interval": 2.0,
    "duration": 60.0, "max_step": 64 << 20, "min_move": 8 << 20, "budget": 0, "psi_threshold": 0.01,
}  # fmt: skip


def _sizes(value: str) -> list[int]:
    return [size(v) for v in value.split(",")]


def add_run(inner: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = inner.add_parser("run", help="drive real VMs' balloons with a live policy")
    add: Callable[..., Any] = run.add_argument
    add("--vms", type=argtypes.count(1, 64), help="number of VMs (default 2)")
    add("--memory", type=size, help="each VM's memory, the balloon's ceiling (default 512M)")
    add("--floor", type=_sizes, help="floor(s), one or one per VM, comma-separated (default 256M)")
    add("--budget", type=size, help="memory shared by all VMs (default: (VMs x memory + floors) / 2)")
    add("--policy", help=f"one of {', '.join(LIVE_POLICIES)} (default refault)")
    add("--interval", type=duration, help="time between decisions (default 2s)")
    add("--duration", type=duration, help="how long to control (default 60s)")
    add("--max-step", dest="max_step", type=size, help="most a balloon moves per interval (default 64M)")
    add("--min-move", dest="min_move", type=size, help="hysteresis: smaller moves are skipped (default 8M)")
    add(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a policy parameter, e.g. hysteresis=0.2 or step=32M for refault (repeatable)",
    )
    add(
        "--psi-threshold",
        dest="psi_threshold",
        type=argtypes.real(-1e12, 1e12),  # finite here; liverun says what is accepted
        help="PSI 'some' stall share of an interval that counts as memory pressure (default 0.01)",
    )
    add("--load", type=_sizes, help="buffered-read working set per VM, comma-separated (0: idle)")
    add("--config", metavar="TOML", help="run settings and per-VM workloads ([run], [[vm]])")
    add("--accel", default="auto", choices=("auto", "kvm", "tcg"), help="accelerator (default auto)")
    add("--db", help="the store (default $VMIO_DB or ./vmio.db)")
    add("--json", action="store_true", help="print the steps and the summary as JSON")
    run.set_defaults(handler=_run)


def settings_from(args: argparse.Namespace) -> LiveSettings:
    """Command-line options over the ``--config`` file over the defaults."""
    conf = load_config(args.config) if args.config else None
    values = dict(_DEFAULTS)
    if conf is not None:
        values.update(conf.run)
    for key in _DEFAULTS:
        if getattr(args, key, None) is not None:
            values[key] = getattr(args, key)
    n = values["vms"]
    if n < 1:
        raise InputError(f"--vms {n!r} is not accepted; use 1 or more")
    loads = tuple(Load(size) for size in args.load) if args.load else (conf.loads if conf else ())
    per_vm = () if args.floor is not None or conf is None else conf.floors
    floors = _floors(values["floor"], per_vm, n)
    # the [policy] table belongs to the config's policy: --policy naming another one leaves it out
    same = conf is not None and conf.run.get("policy", _DEFAULTS["policy"]) == values["policy"]
    params = dict(conf.params) if conf is not None and same else {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"--param {item!r} is not KEY=VALUE, e.g. hysteresis=0.2")
        params[key.strip()] = value.strip()
    return LiveSettings(
        vms=n, memory=values["memory"], floors=floors, policy=values["policy"], interval=values["interval"],
        duration=values["duration"], max_step=values["max_step"], min_move=values["min_move"],
        budget=values["budget"], psi_threshold=values["psi_threshold"], loads=loads, accel=args.accel,
        params=policy_params(values["policy"], params),
    )  # fmt: skip


def _floors(floor: int | list[int], per_vm: tuple[int | None, ...], n: int) -> tuple[int, ...]:
    """One floor per VM: a list of one or ``n``; a config's per-VM floors win over its [run] floor."""
    given = floor if isinstance(floor, list) else [floor]
    if len(given) not in (1, n):
        raise InputError(f"--floor has {len(given)} values for {n} VMs; give one, or one per VM")
    floors = given * n if len(given) == 1 else list(given)
    for i, f in enumerate(per_vm[:n]):
        if f is not None:
            floors[i] = f
    return tuple(floors)


def _run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    settings.rules()  # bad floors, budget or steps fail here, before the store is opened
    db = args.db or os.environ.get("VMIO_DB", "vmio.db")
    with Store(db) as store:
        if not args.json:
            print(describe(settings), flush=True)
        outcome = run_live(settings, store, on_step=None if args.json else _print_step)
    if args.json:
        print(json.dumps(outcome_json(settings, outcome), indent=2))
    else:
        print(render_summary(outcome, db))
    return 0


def step_line(step: Step) -> list[str]:
    """One line per VM for one interval."""
    lines = []
    for v in step.vms:
        s, m = v.signals, v.move
        psi = (
            f"psi {s.pressure.stall:6.1%}" if s.pressure.source == "psi" else f"reclaim {s.pressure.reclaim}"
        )
        lines.append(
            f"t={step.t:6.1f}s {v.vm:<8} {format_size(m.old):>6} -> {format_size(m.new):<6} "
            f"actual {format_size(v.actual):>6}  file {s.file >> 20:>4}M free {s.free >> 20:>4}M  "
            f"act {s.activations:>6} refault {s.refaults:>6} read {s.read_pages:>7} "
            f"hit {s.hits:>7} miss {s.misses:>7}  {psi}  {m.reason}"
        )
    return lines


def _print_step(step: Step) -> None:
    print("\n".join(step_line(step)), flush=True)


def render_summary(out: LiveOutcome, db: str) -> str:
    lines = [f"run {out.run_id} (accel {out.accel}) stored in {db}; per VM:"]
    for vm, s in out.summary.items():
        lines.append(
            f"  {vm:<8} {format_size(s['initial'])} -> {format_size(s['final'])} "
            f"(min {format_size(s['min'])}, max {format_size(s['max'])}, floor {format_size(s['floor'])}), "
            f"{s['moves']} moves, {s['pressure_steps']} intervals under pressure, "
            f"{s['activations']} activations, {s['refaults']} refaults, "
            f"{s['hits']} hits {s['misses']} misses (hit ratio {_ratio(s['hit_ratio'])})"
        )
    lines.append(f"  total hit ratio of the workloads: {_ratio(out.hit_ratio)}")
    return "\n".join(lines)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def outcome_json(settings: LiveSettings, out: LiveOutcome) -> dict[str, Any]:
    steps = [
        {
            "step": st.index, "t": st.t,
            "vms": [
                {"vm": v.vm, "old": v.move.old, "new": v.move.new, "proposed": v.move.proposed,
                 "actual": v.actual, "reason": v.move.reason, "signals": v.signals.to_json()}
                for v in st.vms
            ],
        }
        for st in out.steps
    ]  # fmt: skip
    return {"run_id": out.run_id, "accel": out.accel, "settings": settings.to_json(), "steps": steps,
            "summary": out.summary, "hit_ratio": out.hit_ratio}  # fmt: skip
