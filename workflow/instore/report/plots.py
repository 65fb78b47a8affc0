"""Shared plot pieces: a figure grid in the report's style and the calibrated-limit line."""

from __future__ import annotations

from typing import Any

LIMIT_STYLE = {"color": "crimson", "linestyle": "--", "linewidth": 1.2}


def panels(n: int, width: float = 5.0, height: float = 3.6) -> tuple[Any, Any]:
    """A row of ``n`` axes with seaborn's style applied."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def panel_per(
    table: Any, column: str, width: float = 5.0
) -> tuple[Any, list[tuple[Any, Any, Any]]]:
    """One panel per value of ``column`` (in the order the rows give them): the figure, and
    each panel's axes with its value and its rows."""
    values = list(dict.fromkeys(table[column]))
    fig, axes = panels(len(values), width=width)
    return fig, [(ax, v, table[table[column] == v]) for ax, v in zip(axes, values, strict=True)]


def limit_line(ax: Any, value: float | None, label: str) -> None:
    """Draw the site's calibrated limit, or say on the axes that there is none."""
    if value is None or value != value:  # None or NaN
        ax.text(0.99, 0.98, "no calibrated limit", transform=ax.transAxes, ha="right",
                va="top", fontsize=8, color="grey")  # fmt: skip
        return
    ax.axhline(value, **LIMIT_STYLE, label=label)
    ax.legend(fontsize=8)


def iqr() -> tuple[str, int]:
    """Seaborn's error bar for the interquartile range: the spread the tables report."""
    return ("pi", 50)
