"""``vmio membal run``: boot VMs, drive their balloons with a live policy, print and store each decision."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vmio.cli import argtypes
from vmio.cli.argtypes import duration, size
from vmio.errors import InputError
from vmio.membal.guest_reports import LIVE_POLICIES
from vmio.units import format_size

# the controller (QMP, numpy) and the store are imported when `membal run` runs, not for its --help
if TYPE_CHECKING:
    from vmio.membal.compare import Comparison, Side, SideVm
    from vmio.membal.live import Step
    from vmio.membal.liverun import LiveOutcome, LiveSettings

_DEFAULTS: dict[str, Any] = {
    "vms": 2,
    "memory": 512 << 20,
    "floor": 256 << 20,
    "policy": "refault",
    "interval": 2.0,
    "duration": 60.0,
    "max_step": 64 << 20,
    "min_move": 8 << 20,
    "budget": 0,
    "psi_threshold": 0.01,
}


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
    add(
        "--compare",
        metavar="POLICIES",
        help="run these live policies one after the other (e.g. equal,efficiency; the first is the baseline), "
        "each for --duration on the same workloads, and simulate the config's [run] sim scenario beside them",
    )
    add(
        "--sim",
        metavar="SCENARIO",
        help="with --compare: the membal sim scenario (default: the config's [run] sim)",
    )
    add("--accel", default="auto", choices=("auto", "kvm", "tcg"), help="accelerator (default auto)")
    add(
        "--domains",
        metavar="A,B",
        help="drive these running libvirt domains' balloons instead of booting VMs (statistics from their "
        "balloon drivers; default policy mom)",
    )
    add("--uri", help="with --domains: the libvirt URI (default qemu:///system)")
    add("--db", help="the store (default $VMIO_DB or ./vmio.db)")
    add("--json", action="store_true", help="print the steps and the summary as JSON")
    run.set_defaults(handler=_run)


def settings_from(args: argparse.Namespace) -> LiveSettings:
    """Command-line options over the ``--config`` file over the defaults."""
    from vmio.membal.live import policy_params
    from vmio.membal.liverun import LiveSettings
    from vmio.membal.livework import Load, load_config

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
        vms=n,
        memory=values["memory"],
        floors=floors,
        policy=values["policy"],
        interval=values["interval"],
        duration=values["duration"],
        max_step=values["max_step"],
        min_move=values["min_move"],
        budget=values["budget"],
        psi_threshold=values["psi_threshold"],
        loads=loads,
        accel=args.accel,
        params=policy_params(values["policy"], params),
    )


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
    from vmio.membal.liverun import describe, run_live
    from vmio.store import Store

    if args.domains is not None:
        return _run_domains(args)
    if args.uri is not None:
        raise InputError(f"--uri {args.uri!r} goes with --domains; name the domains to balance")
    if args.compare is not None:
        return _compare(args)
    if args.sim is not None:
        raise InputError(f"--sim {args.sim!r} goes with --compare; add --compare equal,efficiency")
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


def _run_domains(args: argparse.Namespace) -> int:
    """``run --domains a,b [--uri URI]``: existing domains' balloons through libvirt."""
    from vmio.libvirt.virsh import DEFAULT_URI
    from vmio.membal.domains import read_domains, run_domains, with_domains
    from vmio.membal.liverun import describe
    from vmio.membal.livework import load_config
    from vmio.store import Store

    names = tuple(d.strip() for d in args.domains.split(",") if d.strip())
    if not names:
        raise InputError(f"--domains {args.domains!r} names no domain; give their names, e.g. --domains a,b")
    for flag, value in (("vms", args.vms), ("load", args.load), ("compare", args.compare), ("sim", args.sim)):
        if value is not None:
            raise InputError(
                f"--{flag} does not go with --domains: vmio drives the domains as they run, with their own "
                "workloads"
            )
    if args.policy is None and not (args.config and "policy" in load_config(args.config).run):
        args.policy = "mom"
    args.vms = len(names)
    settings = replace(settings_from(args), uri=args.uri or DEFAULT_URI, domains=names)
    virsh, domains = read_domains(settings)
    settings = with_domains(settings, domains)
    settings.rules()
    db = args.db or os.environ.get("VMIO_DB", "vmio.db")
    with Store(db) as store:
        if not args.json:
            print(describe(settings), flush=True)
        outcome = run_domains(settings, store, virsh, domains, on_step=None if args.json else _print_step)
    args.vms = None
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


def outcome_json(settings: LiveSettings, out: LiveOutcome) -> dict[str, object]:
    steps = [
        {
            "step": st.index,
            "t": st.t,
            "vms": [
                {
                    "vm": v.vm,
                    "old": v.move.old,
                    "new": v.move.new,
                    "proposed": v.move.proposed,
                    "actual": v.actual,
                    "reason": v.move.reason,
                    "signals": v.signals.to_json(),
                }
                for v in st.vms
            ],
        }
        for st in out.steps
    ]
    return {
        "run_id": out.run_id,
        "accel": out.accel,
        "settings": settings.to_json(),
        "steps": steps,
        "summary": out.summary,
        "hit_ratio": out.hit_ratio,
    }


def _compared(args: argparse.Namespace) -> list[str]:
    if args.policy is not None:
        raise InputError(f"--policy {args.policy!r} and --compare {args.compare!r} exclude each other")
    policies = [p.strip() for p in args.compare.split(",") if p.strip()]
    if len(policies) < 2 or len(set(policies)) != len(policies):
        raise InputError(
            f"--compare {args.compare!r}: name two or more different policies, e.g. equal,efficiency"
        )
    return policies


def _scenario_path(args: argparse.Namespace) -> Path | None:
    if args.sim is not None:
        return Path(args.sim)
    if args.config is None:
        return None
    from vmio.membal.livework import load_config

    sim = load_config(args.config).run.get("sim")
    return None if sim is None else Path(args.config).parent / str(sim)


def _compare(args: argparse.Namespace) -> int:
    """``run --compare P1,P2,...``: each policy live, one after the other, then the scenario simulated."""
    from vmio.membal.compare import compare
    from vmio.membal.liverun import describe, run_live
    from vmio.membal.outcome import run_scenario
    from vmio.membal.scenario import load_scenario
    from vmio.store import Store

    policies = _compared(args)
    runs = {}
    for p in policies:
        args.policy = p
        runs[p] = settings_from(args)
        runs[p].rules()
    args.policy = None
    path = _scenario_path(args)
    scenario = load_scenario(path) if path is not None else None
    if scenario is not None:
        # the compared policies, whatever the scenario's own list says (equal always runs: the sim's baseline)
        scenario = replace(scenario, policies=tuple(dict.fromkeys(["equal", *policies])))
        if len(scenario.vms) != runs[policies[0]].vms:
            raise InputError(
                f"{path}: scenario {scenario.name!r} has {len(scenario.vms)} VMs and the live runs "
                f"{runs[policies[0]].vms}; give it one [[vm]] per live VM, in the same order"
            )
    db = args.db or os.environ.get("VMIO_DB", "vmio.db")
    live = {}
    with Store(db) as store:
        for p in policies:
            if not args.json:
                print(f"live {p}: {describe(runs[p])}", flush=True)
            live[p] = run_live(runs[p], store, on_step=None if args.json else _print_step)
            if not args.json:
                print(render_summary(live[p], db), flush=True)
    sim = run_scenario(scenario) if scenario is not None else None
    result = compare(policies, live, sim, runs[policies[0]].duration)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(render_comparison(result))
    return 0


def _mem(side: SideVm) -> str:
    move = side["move"]
    sign = "+" if move > 0 else ("-" if move < 0 else "±")
    return f"{format_size(side['initial'])}->{format_size(side['final'])} ({sign}{format_size(abs(move))})"


def render_comparison(c: Comparison) -> str:
    """Live and sim side by side: per VM hit ratio and memory first -> last, total hit ratio, vs baseline."""
    cols = [("live", p) for p in c.policies] + [("sim", p) for p in c.sim]
    head = f"{'':<22}" + "".join(f"{f'{side} {p}':>26}" for side, p in cols)
    what = f"sim: scenario {c.scenario}" if c.scenario else "no sim scenario"
    lines = [
        f"{', '.join(c.policies)}: live {c.duration:g} s each (accel {c.accel}, runs "
        f"{', '.join(str(c.run_ids[p]) for p in c.policies)}); {what}. Memory: live balloon targets, sim "
        "page-cache allocation (first -> last epoch).",
        head,
    ]

    def side(kind: str, p: str) -> Side:
        return (c.live if kind == "live" else c.sim)[p]

    for name in c.names:
        lines.append(
            f"{name + ' hit ratio':<22}"
            + "".join(f"{_ratio(side(k, p).vms[name]['hit_ratio']):>26}" for k, p in cols)
        )
        lines.append(
            f"{name + ' memory':<22}" + "".join(f"{_mem(side(k, p).vms[name]):>26}" for k, p in cols)
        )
    lines.append(f"{'total hit ratio':<22}" + "".join(f"{_ratio(side(k, p).hit_ratio):>26}" for k, p in cols))
    ratios = c.ratios()
    lines.append(f"{'vs ' + c.policies[0]:<22}" + "".join(f"{_ratio(ratios[k][p]):>26}" for k, p in cols))
    return "\n".join(lines)
