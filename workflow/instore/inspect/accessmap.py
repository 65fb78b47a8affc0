"""The access map: file offset against read order, the picture that shows scattered reads."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from instore.inspect.basketmap import read_order


def plot_access_maps(maps: Mapping[str, pd.DataFrame], out: Path) -> Path:
    """One panel per file: basket offset (MB) against the order an entry-ordered reader needs it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(maps), figsize=(5 * len(maps), 4), squeeze=False, sharey=True)
    for ax, (label, baskets) in zip(axes[0], maps.items(), strict=True):
        ordered = read_order(baskets)
        ax.scatter(range(len(ordered)), ordered["offset"] / 1e6, s=1, rasterized=True)
        ax.set_title(label)
        ax.set_xlabel("read order (basket)")
    axes[0][0].set_ylabel("file offset (MB)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
