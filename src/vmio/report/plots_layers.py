"""``#layers``: where each I/O's time went, per target and offered load (docs/layers.md).

One figure per workload family, reads and writes in panels of their own; one horizontal bar per target and
offered load, stacked by each layer's own cost: the innermost traced layer's mean, then each outer layer's
mean less the one inside it (the median over repetitions). Only points traced with ``layers = true`` are
drawn; a difference below zero (layers that do not nest, with a page cache in the path) is drawn as zero.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from vmio.report.chart import Chart, Item
from vmio.report.data import CampaignData, Group, families, labels, offered_label, tcg_note
from vmio.report.figure import PALETTE, Plot, finish, legend_of
from vmio.report.plots_load import family_title

INNER_FIRST = ("host_block", "qemu", "guest_block", "app")
OWN = {  # what a layer's own share is, inside the one outside it
    "host_block": "host block layer and device",
    "qemu": "QEMU and host kernel submission",
    "guest_block": "guest kernel block layer",
    "app": "above the traced layers (fio, guest or host kernel)",
}


def means(layers: Mapping[str, object] | None, ddir: str) -> dict[str, float]:
    """Each traced layer's mean (µs) for one direction."""
    out = {}
    for name, layer in (layers or {}).items():
        figures = layer.get(ddir) if isinstance(layer, dict) else None
        if isinstance(figures, dict) and isinstance(figures.get("mean_us"), int | float):
            out[name] = float(figures["mean_us"])
    return out


def own_costs(layered: Mapping[str, float]) -> list[tuple[str, float]]:
    """Each traced layer's own share (µs), innermost first: its mean less the next traced layer inside."""
    out, inside = [], 0.0
    for name in INNER_FIRST:
        if name in layered:
            out.append((name, max(0.0, layered[name] - inside)))
            inside = layered[name]
    return out


def _median(group: Group, ddir: str) -> dict[str, float]:
    per_rep = [means(r.layers, ddir) for r in group.rows if r.layers]
    names = {n for m in per_rep for n in m}
    return {n: statistics.median(m[n] for m in per_rep if n in m) for n in names}


def layer_plots(data: CampaignData, baseline: str | None) -> list[Plot]:
    plots = []
    for i, (family, by_target) in enumerate(families(data).items()):
        groups = [g for gs in by_target.values() for g in gs if any(r.layers for r in g.rows)]
        # the directions the workload moved (the disk's other traffic aside)
        ddirs = [d for d in ("read", "write") if any("app" in _median(g, d) for g in groups)]
        if not groups or not ddirs:
            continue
        fig = Chart(1, len(ddirs), width=5.2, height=2.0 + 0.35 * len(groups), sharey=True)
        caption = labels(data, by_target) + (
            " · each bar: the median over repetitions of each layer's mean · with a host page cache in the path"
            ' (buffered I/O, cache = "writeback") an I/O need not reach the disk and the disk\'s requests are'
            " write-back, read-ahead or merged: the layers need not nest, and a share below zero is drawn as zero"
        )
        plot = Plot(
            f"layers-{i}", f"Where each I/O's time went, by layer: {family_title(family)}", caption, fig
        )
        names = [f"{data.target_label(g.target)} · {offered_label(g.offered)}" for g in groups]
        handles: dict[str, Item] = {}
        for ax, ddir in zip(fig.grid[0], ddirs, strict=True):
            for y, g in enumerate(groups):
                left = 0.0
                for name, cost in own_costs(_median(g, ddir)):
                    bar = ax.barh(y, cost, left=left, color=PALETTE[INNER_FIRST.index(name)], height=0.6)
                    plot.tag(list(bar.patches), OWN[name])
                    handles.setdefault(OWN[name], bar.patches[0])
                    plot.titles.setdefault(f"{plot.id}--{ddir}", []).append(
                        f"{names[y]}: {name} {cost:.1f} µs"
                    )
                    left += cost
            ax.set_yticks(range(len(groups)), names)
            ax.invert_yaxis()
            ax.set_xlabel("mean latency (µs), stacked by layer")
            ax.set_title(f"{ddir}s")
        note = tcg_note(data.target_label(g.target) for g in groups)
        if note:
            plot.caption += f" · {note.strip()}"
        legend_of(fig, handles)
        finish(fig, plot.title, plot.caption)
        plots.append(plot)
    return plots
