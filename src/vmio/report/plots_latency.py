"""Per-operation latency per target (okayama-hypervisors-2020 Fig. 2-4, 8): a box of every operation, min/avg/max marks,
with load processes along the axis and (vCPUs, VMs) as panels; and each operation's latency in turn, per
environment and load (okayama-hypervisors-2020 Fig. 5)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vmio.report.data import CampaignData, Group, Offered, labels
from vmio.report.data import offered_label as olabel
from vmio.report.figure import PALETTE, Plot, color, finish, legend, legend_of, log_scale, new_figure, style
from vmio.targets.traits import vm_config
from vmio.units import format_size

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

Facet = tuple[int, int] | None  # (vCPUs, VMs); None for host targets


def facet_label(facet: Facet) -> str:
    if facet is None:
        return "host (no VM)"
    vcpus, vms = facet
    return f"{vcpus} vCPU{'s' if vcpus != 1 else ''} · {vms} VM{'s' if vms != 1 else ''}"


@dataclass
class OpSet:
    """Every operation of a group's repetitions (µs), and each repetition's mean."""

    group: Group
    ops_us: list[float]
    rep_means_us: list[float]


def op_sets(data: CampaignData, groups: list[Group]) -> list[OpSet]:
    out = []
    for g in groups:
        per_rep = [[o["lat_ns"] / 1e3 for o in data.oplat.get(r.point, [])] for r in g.rows]
        per_rep = [ops for ops in per_rep if ops]
        if per_rep:
            out.append(
                OpSet(g, [v for ops in per_rep for v in ops], [statistics.fmean(ops) for ops in per_rep])
            )
    return out


def per_operation_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    """The per-operation section: the boxes of every operation (Figs. 2-4, 8), then each operation in turn
    (Fig. 5)."""
    return oplat_plots(data, baseline) + series_plots(data, baseline)


def oplat_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    by_figure: dict[tuple[str, int, Offered], list[OpSet]] = {}
    for s in op_sets(data, data.groups()):
        _, w, bs, offered, _ = s.group.key
        by_figure.setdefault((w, bs, offered), []).append(s)
    return [_figure(data, i, key, sets, baseline) for i, (key, sets) in enumerate(by_figure.items())]


def _figure(
    data: CampaignData, i: int, key: tuple[str, int, Offered], sets: list[OpSet], baseline: str | None
) -> Plot:
    workload, bs, offered = key
    facets = sorted({data.facet(s.group.target) for s in sets}, key=lambda f: (f is not None, f or (0, 0)))
    n = sum(len(s.ops_us) for s in sets)
    with style():
        fig = new_figure(1, len(facets), width=max(4.6, 1.2 * len({s.group.key[4] for s in sets}) + 2.5))
        title = f"Per-operation latency: {workload} · bs {format_size(bs)} · offered {olabel(offered)}"
        plot = Plot(f"oplat-{i}", title, labels(data, {s.group.target for s in sets}), fig)
        for ax, facet in zip(
            fig.subplots(1, len(facets), squeeze=False, sharey=True)[0], facets, strict=True
        ):
            _panel(plot, ax, data, [s for s in sets if data.facet(s.group.target) == facet], baseline)
            ax.set_title(facet_label(facet))
        plot.caption += (
            f" · boxes: all {n} operations pooled over repetitions (whiskers 5-95%); ◆ median of the "
        )
        plot.caption += "repetitions' means with min-max bar; ▼ min, ▲ max operation"
        finish(fig, plot.title, plot.caption)
    return plot


def _panel(plot: Plot, ax: Axes, data: CampaignData, sets: list[OpSet], baseline: str | None) -> None:
    from matplotlib.patches import Patch  # box plots are matplotlib's: imported when one is drawn

    names = data.target_names()
    loads = sorted({s.group.key[4] for s in sets})
    targets = [t for t in names if any(s.group.target == t for s in sets)]
    width = 0.8 / len(targets)
    handles: list[Patch | Line2D] = []
    for j, target in enumerate(targets):
        mine = sorted((s for s in sets if s.group.target == target), key=lambda s: s.group.key[4])
        pos = [loads.index(s.group.key[4]) - 0.4 + width * (j + 0.5) for s in mine]
        c = color(names, target, baseline)
        label = f"{target} (baseline)" if target == baseline else target
        ops = [s.ops_us for s in mine]
        box = ax.boxplot(
            ops,
            positions=pos,
            widths=width * 0.8,
            whis=(5, 95),
            showfliers=False,
            patch_artist=True,
            manage_ticks=False,
        )
        for patch in box["boxes"]:
            patch.set(facecolor=c, alpha=0.35, edgecolor=c)
        for median in box["medians"]:
            median.set(color=c, lw=1.6)
        plot.tag(box["boxes"], label)
        _marks(plot, ax, pos, mine, c, label)
        handles.append(Patch(facecolor=c, alpha=0.35, edgecolor=c, label=label))
    ax.set_xticks(range(len(loads)), [str(n) for n in loads])
    ax.set_xlim(-0.5, len(loads) - 0.5)
    ax.set_xlabel("co-running load processes")
    ax.set_ylabel("latency per operation (µs)")
    log_scale(ax)
    ax.grid(alpha=0.3, axis="y")
    legend_of(ax.figure, {str(h.get_label()): h for h in handles})  # type: ignore[arg-type]


def _marks(plot: Plot, ax: Axes, pos: list[float], sets: list[OpSet], c: str, label: str) -> None:
    means = [statistics.median(s.rep_means_us) for s in sets]
    err = [
        [m - min(s.rep_means_us) for m, s in zip(means, sets, strict=True)],
        [max(s.rep_means_us) - m for m, s in zip(means, sets, strict=True)],
    ]
    avg = ax.errorbar(pos, means, yerr=err, fmt="D", ms=4, color=c, capsize=2)
    (low,) = ax.plot(pos, [min(s.ops_us) for s in sets], "v", ms=4, color=c)
    (high,) = ax.plot(pos, [max(s.ops_us) for s in sets], "^", ms=4, color=c)
    plot.tag(avg.lines[0], f"{label} avg")
    plot.tag(low, f"{label} min")
    plot.tag(high, f"{label} max")


SERIES_COLUMNS = 3


def series_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    """okayama-hypervisors-2020's Fig. 5: the latency of operation i against i, one panel per environment (target), one
    line per count of co-running load processes; the first measured process of the first repetition."""
    by_figure: dict[tuple[str, int, Offered], dict[str, dict[int, list[float]]]] = {}
    for g in data.groups():
        target, workload, bs, offered, loads = g.key
        first = next((ops for r in g.rows if (ops := data.oplat.get(r.point))), None)
        if not first:
            continue
        host, job = first[0]["host"], first[0]["job"]
        mine = [o["lat_ns"] / 1e6 for o in first if (o["host"], o["job"]) == (host, job)]
        by_figure.setdefault((workload, bs, offered), {}).setdefault(target, {})[loads] = mine
    return [
        _series_figure(data, i, key, panels, baseline) for i, (key, panels) in enumerate(by_figure.items())
    ]


def _series_figure(
    data: CampaignData,
    i: int,
    key: tuple[str, int, Offered],
    panels: dict[str, dict[int, list[float]]],
    baseline: str | None,
) -> Plot:
    workload, bs, offered = key
    targets = [t for t in data.target_names() if t in panels]
    cols = min(SERIES_COLUMNS, len(targets))
    rows = -(-len(targets) // cols)
    all_loads = sorted({n for lines in panels.values() for n in lines})
    with style():
        fig = new_figure(rows, cols, width=4.2, height=2.8)
        title = (
            f"Latency of each operation in turn: {workload} · bs {format_size(bs)} · offered "
            f"{olabel(offered)}"
        )
        plot = Plot(f"opseries-{i}", title, labels(data, targets), fig)
        axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
        for k, target in enumerate(targets):
            ax = axes[k // cols][k % cols]
            for loads, lats in sorted(panels[target].items()):
                label = f"{target} · {loads} load"
                xs = [float(n) for n in range(1, len(lats) + 1)]
                colour = PALETTE[all_loads.index(loads) % len(PALETTE)]
                name = f"{loads} load process{'es' if loads != 1 else ''}"
                (line,) = ax.plot(xs, lats, lw=1, marker=".", ms=3, color=colour, label=name)
                plot.tag(line, label)
                plot.keep(label, xs, lats)
            ax.set_title(
                f"{target}" + (" (baseline)" if target == baseline else "") + f" · {_env(data, target)}"
            )
            ax.set_xlabel("operation (in issue order)")
            ax.set_ylabel("latency (ms)")
            log_scale(ax)
            ax.grid(alpha=0.3)
            legend(ax)
        for k in range(len(targets), rows * cols):
            axes[k // cols][k % cols].set_visible(False)
        plot.caption += (
            " · each line: one measured process's operations, the same offsets in every panel when the "
        )
        plot.caption += "campaign has a seed (first repetition)"
        finish(fig, plot.title, plot.caption)
    return plot


def _env(data: CampaignData, target: str) -> str:
    """A VM target's environment in short: vCPUs, VMs (idle ones), host cache, machine."""
    spec = vm_config(data.targets.get(target))
    if spec is None:
        return "host"
    idle, vms = spec.idle_vms, spec.vms
    return (
        f"{spec.vcpus} vCPU · {vms + idle} VM{'s' if vms + idle != 1 else ''}"
        + (f" ({idle} idle)" if idle else "")
        + f" · cache {spec.cache} · "
        + spec.machine
    )
