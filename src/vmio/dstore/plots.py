"""Figures in the manner of bitisle-dstore-2014: IOPS bars and latency lines per block size with the criteria drawn
in (Fig. 2), and two configurations side by side (Fig. 3: mirror only vs striped; here also size 2 vs 3).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from vmio.dstore.profile import Profile  # noqa: E402
from vmio.system import files  # noqa: E402
from vmio.units import format_size  # noqa: E402

VERDICT_COLOURS = {"ideal": "#2e7d32", "acceptable": "#f9a825", "fails": "#c62828"}


def plot_profile(profile: Profile, path: Path, title: str = "bitisle-dstore-2014 profile") -> Path:
    """IOPS bars coloured by verdict and mean/p99 latency lines, with the service criteria."""
    labels = [format_size(p.bs) for p in profile.points]
    xs = list(range(len(labels)))
    fig, ax = plt.subplots(figsize=(9, 5.5))
    try:
        ax.bar(
            xs,
            [p.iops for p in profile.points],
            color=[VERDICT_COLOURS[p.verdict] for p in profile.points],
            alpha=0.8,
            label="IOPS",
        )
        _iops_lines(ax, profile)
        ax.set_xticks(xs, labels)
        ax.set_xlabel("block size (30 % read / 70 % write, random)")
        ax.set_ylabel("IOPS")
        lat = ax.twinx()
        lat.plot(xs, [p.mean_lat_ms for p in profile.points], "o-", color="black", label="mean latency")
        lat.plot(xs, [p.p99_lat_ms for p in profile.points], "s--", color="grey", label="p99 latency")
        _latency_lines(lat, profile)
        lat.set_ylabel("latency (ms)")
        _legend(ax, lat)
        ax.set_title(title)
        fig.tight_layout()
        fig.subplots_adjust(bottom=0.22)
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_figure(fig, path, dpi=110)
    finally:
        plt.close(fig)
    return path


def plot_compare(
    a: Profile, b: Profile, labels: tuple[str, str], path: Path, title: str = "Two configurations"
) -> Path:
    """Side by side: IOPS of both configurations (left) and their mean latency (right)."""
    sizes = sorted({p.bs for p in a.points} & {p.bs for p in b.points})
    pa = {p.bs: p for p in a.points}
    pb = {p.bs: p for p in b.points}
    xs = list(range(len(sizes)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    try:
        width = 0.4
        left.bar([x - width / 2 for x in xs], [pa[s].iops for s in sizes], width, label=labels[0])
        left.bar([x + width / 2 for x in xs], [pb[s].iops for s in sizes], width, label=labels[1])
        _iops_lines(left, a)
        left.set_ylabel("IOPS")
        right.plot(xs, [pa[s].mean_lat_ms for s in sizes], "o-", label=f"{labels[0]} mean")
        right.plot(xs, [pb[s].mean_lat_ms for s in sizes], "s-", label=f"{labels[1]} mean")
        _latency_lines(right, a)
        right.set_ylabel("mean latency (ms)")
        for ax in (left, right):
            ax.set_xticks(xs, [format_size(s) for s in sizes])
            ax.set_xlabel("block size")
            ax.legend(fontsize="x-small")
        fig.suptitle(title)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_figure(fig, path, dpi=110)
    finally:
        plt.close(fig)
    return path


def _iops_lines(ax: Axes, profile: Profile) -> None:
    c = profile.criteria
    ax.axhline(
        c.min_iops_host,
        color="tab:blue",
        linestyle=":",
        linewidth=1,
        label=f"{c.min_iops_host:g} IOPS per host",
    )
    ax.axhline(
        c.min_iops_cluster,
        color="tab:purple",
        linestyle=":",
        linewidth=1,
        label=f"{c.min_iops_cluster:g} IOPS per cluster",
    )


def _latency_lines(ax: Axes, profile: Profile) -> None:
    c = profile.criteria
    ax.axhline(
        c.ideal_ms,
        color=VERDICT_COLOURS["ideal"],
        linestyle="--",
        linewidth=1,
        label=f"ideal ≤ {c.ideal_ms:g} ms",
    )
    ax.axhline(
        c.acceptable_ms,
        color=VERDICT_COLOURS["fails"],
        linestyle="--",
        linewidth=1,
        label=f"acceptable ≤ {c.acceptable_ms:g} ms",
    )


def _legend(*axes: Axes) -> None:
    handles, names = [], []
    for ax in axes:
        h, n = ax.get_legend_handles_labels()
        handles += h
        names += n
    handles += [Patch(color=c) for c in VERDICT_COLOURS.values()]
    names += [f"bar: {v}" for v in VERDICT_COLOURS]
    axes[0].legend(
        handles, names, fontsize="x-small", loc="upper center", ncol=5, bbox_to_anchor=(0.5, -0.15)
    )
