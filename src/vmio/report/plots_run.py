"""Figures within runs: device IOPS, await and busy % over time, and CPU per QEMU thread class."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable

from vmio.report.chart import Chart, Item, Panel
from vmio.report.data import CampaignData, Group, Row, families, labels, offered_axis, offered_order
from vmio.report.data import offered_label as olabel
from vmio.report.figure import (
    PALETTE,
    TEXT_PT,
    Plot,
    finish,
    legend_of,
    shared_legend,
    slug,
)
from vmio.report.plots_load import curve, family_title, offered_ticks, series_label
from vmio.store.packed import SampleRow
from vmio.targets.traits import vm_config
from vmio.units import format_size

TIME_PANELS = (
    ("IOPS", ("read_iops", "write_iops"), "device IOPS"),
    ("await", ("await_ms",), "device await (ms)"),
    ("busy", ("busy_pct",), "device busy %"),
)
QEMU_CLASSES = (
    ("vcpu_pct", "vCPU threads"),
    ("iothread_pct", "I/O threads"),
    ("main_pct", "main loop"),
    ("other_pct", "other threads"),
)


def representative(groups: list[Group]) -> Group | None:
    """The saturating point of a target and workload: least load processes, highest offered load."""
    done = [g for g in groups if g.rows]
    if not done:
        return None
    return min(done, key=lambda g: (g.key[2], g.key[4], tuple(-x for x in offered_order(g.offered))))


def series(samples: list[SampleRow], source: str, metric: str) -> tuple[list[float], list[float]]:
    pts = [(s["t"], s["value"]) for s in samples if s["source"] == source and s["metric"] == metric]
    return [t for t, _ in pts], [v for _, v in pts]


def over_time_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    plots = []
    for i, workload in enumerate(data.workloads()):
        picks = [
            (t, g)
            for t in data.target_names()
            if (g := representative([g for g in data.groups() if g.key[:2] == (t, workload)]))
        ]
        picks = [(t, g) for t, g in picks if any(data.samples.get(r.point) for r in g.rows)]
        if picks:
            plots.append(_time_figure(data, i, workload, picks, baseline))
    return plots


def _time_figure(
    data: CampaignData, i: int, workload: str, picks: list[tuple[str, Group]], baseline: str | None
) -> Plot:
    """A row of panels per target, a column per device figure; one time axis (labelled at the foot) and one
    legend per column (in its top panel: repetitions and the shading look the same in every row)."""
    fig = Chart(len(picks), len(TIME_PANELS), width=3.8, height=2.4, sharex=True)
    title = f"Device IOPS, await and busy % over time within a run (from /proc/diskstats samples): {workload}"
    plot = Plot(f"time-{i}", title, labels(data, [t for t, _ in picks]), fig)
    for row_axes, (target, g) in zip(fig.grid, picks, strict=True):
        for ax, (name, metrics, ylabel) in zip(row_axes, TIME_PANELS, strict=True):
            for rep_i, row in enumerate(sorted(g.rows, key=lambda r: r.repetition)):
                _rep_lines(plot, ax, data, row, metrics, PALETTE[rep_i % len(PALETTE)], f"{target} {name}")
            _time_panel(ax, _panel_title(target, g, baseline), ylabel)
    for ax in fig.grid[-1]:
        ax.set_xlabel("time in run (s)")
    for column in zip(*fig.grid, strict=True):
        shared_legend(list(column), 6)
    plot.caption += " · one line per repetition; the device is the host block device under the target"
    finish(fig, plot.title, plot.caption)
    return plot


def _panel_title(target: str, g: Group, baseline: str | None) -> str:
    _, _, bs, offered, load = g.key
    return f"{series_label(target, baseline)}: bs {format_size(bs)}, offered {olabel(offered)}, load {load}"


def _time_panel(ax: Panel, title: str, ylabel: str) -> None:
    """A panel's title, y label and axes: four or five ticks a side (these panels are small)."""
    ax.set_title(title, fontsize=TEXT_PT)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.x.nbins, ax.x.integer = 4, True
    ax.y.nbins = 4


def _rep_lines(
    plot: Plot, ax: Panel, data: CampaignData, row: Row, metrics: tuple[str, ...], c: str, name: str
) -> None:
    samples = data.samples.get(row.point, [])
    source = f"dev:{row.device}"
    for metric, ls in zip(metrics, ("-", "--"), strict=False):
        ts, vs = series(samples, source, metric)
        if not ts:
            continue
        what = f" {metric.split('_')[0]}" if len(metrics) > 1 else ""
        label = f"rep {row.repetition}{what}"
        (line,) = ax.plot(ts, vs, ls=ls, color=c, lw=1.2, label=label)
        plot.tag(line, f"{name} {label}")
    _shade_unmeasured(plot, ax, row, name)


def _shade_unmeasured(plot: Plot, ax: Panel, row: Row, name: str) -> None:
    """Shade what the run's averages leave out: fio's start-up and ramp before the measured window."""
    window = row.host_facts.get("measured_window")
    if not (isinstance(window, list) and len(window) == 2 and window[0] > 0):
        return
    label = "start-up and ramp (not averaged)"
    first = label not in ax.get_legend_handles_labels()[1]
    span = ax.axvspan(0, window[0], color="#999999", alpha=0.15, lw=0, label=label if first else None)
    span.set_gid(f"{plot.id}--ramp-{slug(name)}-rep-{row.repetition}")  # not a data series


def qemu_means(samples: list[SampleRow]) -> dict[str, float]:
    """Each thread class's mean CPU % over the run, summed over the VMs (``qemu:<vm>`` sources)."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in samples:
        if s["source"].startswith("qemu:") and s["value"] is not None:
            values[(s["source"], s["metric"])].append(float(s["value"]))
    out: dict[str, float] = defaultdict(float)
    for (_, metric), vs in values.items():
        out[metric] += statistics.fmean(vs)
    return dict(out)


def qemu_thread_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    means = {k: m for k, s in data.samples.items() if (m := qemu_means(s))}
    plots = []
    for i, (family, by_target) in enumerate(families(data).items()):
        vm = {t: gs for t, gs in by_target.items() if any(r.point in means for g in gs for r in g.rows)}
        if vm:
            plots.append(_qemu_figure(data, i, family, vm, means))
    return plots


def _qemu_figure(
    data: CampaignData,
    i: int,
    family: tuple[str, int, int],
    vm: dict[str, list[Group]],
    means: dict[str, dict[str, float]],
) -> Plot:
    axis = offered_axis(g for gs in vm.values() for g in gs)
    fig = Chart(1, len(vm))
    plot = Plot(
        f"qemu-{i}",
        f"CPU per QEMU thread class (% of one core): {family_title(family)}",
        labels(data, vm),
        fig,
    )
    panels = fig.grid[0]
    for ax, (target, groups) in zip(panels, vm.items(), strict=True):
        for j, (metric, name) in enumerate(QEMU_CLASSES):
            curve(plot, ax, axis, groups, _thread_value(means, metric), f"{target} {name}", PALETTE[j])
        offered_ticks(ax, axis)
        ax.set_title(f"{target} ({target_facts(data, target)})")
        ax.set_ylabel("CPU % of one core (sum over VMs)")
        ax.set_ylim(bottom=0)
    _class_legend(panels, list(vm))
    finish(fig, plot.title, plot.caption)
    return plot


def _class_legend(panels: list[Panel], targets: list[str]) -> None:
    """One legend, in the first panel: a thread class is the same colour in every panel (each panel's
    title names its target)."""
    shown: dict[str, Item] = {}
    for ax, target in zip(panels, targets, strict=True):
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            shown.setdefault(label.removeprefix(f"{target} "), handle)
    order = [name for _, name in QEMU_CLASSES if name in shown]
    if order:
        legend_of(panels[0].figure, {n: shown[n] for n in order})


def _thread_value(means: dict[str, dict[str, float]], metric: str) -> Callable[[Row], float | None]:
    return lambda r: means.get(r.point, {}).get(metric)


def target_facts(data: CampaignData, target: str) -> str:
    spec = vm_config(data.targets.get(target))
    if spec is None:
        return "VM"
    return f"bus={spec.bus}, iothreads={spec.iothreads}, vms={spec.vms}, vcpus={spec.vcpus}"
