"""Figures of a simulated scenario: hit ratio over time per VM and in total (hitachi-membal-2014 Fig. 2/3), and each
VM's memory over time, one panel per policy. Written as PNG and SVG with matplotlib's Agg backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from vmio.membal.outcome import Outcome  # noqa: E402
from vmio.system import files  # noqa: E402
from vmio.system.output_paths import all_or_none  # noqa: E402


def _panels(n: int, title: str) -> tuple[Any, list[Any]]:
    cols = min(n, 2)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.0 * cols, 3.2 * rows), squeeze=False, sharey=True)
    fig.suptitle(title)
    flat = list(axes.reshape(-1))
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _save(fig: Any, out: Path, stem: str) -> list[Path]:
    fig.tight_layout()
    paths: list[Path] = []
    try:
        with all_or_none(paths):
            paths.append(files.write_figure(fig, out / f"{stem}.png", dpi=110))
            paths.append(files.write_figure(fig, out / f"{stem}.svg", dpi=110))
    finally:
        plt.close(fig)
    return paths


def plot_hit_ratio(outcome: Outcome, out: Path) -> list[Path]:
    s = outcome.scenario
    fig, axes = _panels(len(outcome.runs), f"{s.name}: hit ratio per epoch of {s.epoch} accesses")
    names = [vm.name for vm in s.vms]
    for ax, (policy, run) in zip(axes, outcome.runs.items(), strict=True):
        per_vm, total = run.epoch_hit_ratio()
        x = np.arange(1, total.size + 1)
        for i, name in enumerate(names):
            ax.plot(x, per_vm[:, i], label=name, linewidth=1.0)
        ax.plot(x, total, label="total", color="black", linewidth=1.6)
        ax.set_title(f"{policy} (total {run.hit_ratio:.3f}, ×{outcome.vs_equal(policy):.3f} equal)")
        ax.set_xlabel("epoch")
        ax.set_ylabel("hit ratio")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, out, "hit_ratio")


def plot_memory(outcome: Outcome, out: Path) -> list[Path]:
    s = outcome.scenario
    panels = {
        **{k: r.allocation for k, r in outcome.runs.items()},
        "optimal (bound)": outcome.optimal.allocation,
    }
    fig, axes = _panels(len(panels), f"{s.name}: page-cache memory per VM (MiB)")
    mib = s.page / float(1 << 20)
    for ax, (policy, alloc) in zip(axes, panels.items(), strict=True):
        x = np.arange(1, alloc.shape[0] + 1)
        ax.stackplot(x, (alloc * mib).T, labels=[vm.name for vm in s.vms], alpha=0.8)
        ax.set_title(policy)
        ax.set_xlabel("epoch")
        ax.set_ylabel("MiB")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    return _save(fig, out, "memory")


def write_plots(outcome: Outcome, out: Path) -> list[Path]:
    """Write ``hit_ratio`` and ``memory`` figures (PNG and SVG) into ``out``; returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with all_or_none(written):  # the four files, or none of them
        written += plot_hit_ratio(outcome, out)
        written += plot_memory(outcome, out)
    return written
