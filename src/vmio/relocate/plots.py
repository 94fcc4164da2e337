"""Plots of the access distribution over disk address, before and after a plan (kogakuin-relocate-2011, Fig. 4-7)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from vmio.system import files  # noqa: E402


def access_distribution(
    before: NDArray[np.int64],
    after: NDArray[np.int64] | None,
    out: Path,
    *,
    disk_bytes: int,
    title: str = "",
    bins: int = 200,
) -> Path:
    """A histogram of request addresses (GB) on the disk; a second panel for ``after`` when given."""
    panels = [("before", before)] + ([("after", after)] if after is not None else [])
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.6 * len(panels)), sharex=True, squeeze=False)
    edges = np.linspace(0, disk_bytes / 1e9, bins + 1)
    for ax, (label, offsets) in zip(axes[:, 0], panels, strict=True):
        ax.hist(offsets / 1e9, bins=edges, color="tab:blue" if label == "before" else "tab:orange")
        ax.set_ylabel(f"requests ({label})")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("disk address [GB]")
    if title:
        axes[0, 0].set_title(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    files.write_figure(fig, out, dpi=100)
    plt.close(fig)
    return out


def heat_over_time(
    grid: NDArray[np.int64],
    edges: NDArray[np.float64],
    out: Path,
    *,
    row_bytes: int,
    title: str,
) -> Path:
    """A time × address heat map of one image's accesses (each of ``grid``'s rows the accesses to
    ``row_bytes`` of the image's address)."""
    fig, ax = plt.subplots(figsize=(8, 3))
    top = grid.shape[1] * row_bytes / 1e9
    ax.imshow(grid.T, aspect="auto", origin="lower", extent=(edges[0], edges[-1], 0, top), cmap="viridis")
    ax.set_xlabel("time")
    ax.set_ylabel("image address [GB]")
    ax.set_title(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    files.write_figure(fig, out, dpi=100)
    plt.close(fig)
    return out
