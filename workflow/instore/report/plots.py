"""Shared plot pieces: a figure grid in the report's style, the calibrated-limit line, and bars
or lines of per-point medians with their 95% intervals as error bars (from the points'
``<m>_lo``/``<m>_hi``; a figure without them is drawn without bars)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from instore.report.intervals import has_interval, median_column

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


def medians_and_errors(
    points: pd.DataFrame, metric: str, scale: float = 1.0
) -> tuple[np.ndarray, np.ndarray | None]:
    """The points' medians of ``metric`` and their error bars (below, above) from the
    interval; None when the points carry no interval for it (NaN: a point measured once)."""
    med = pd.to_numeric(points[median_column(points, metric)], errors="coerce").to_numpy() * scale
    if not has_interval(points, metric):
        return med, None
    lo = pd.to_numeric(points[f"{metric}_lo"], errors="coerce").to_numpy() * scale
    hi = pd.to_numeric(points[f"{metric}_hi"], errors="coerce").to_numpy() * scale
    return med, np.vstack([med - lo, hi - med])


def interval_bars(
    ax: Any,
    points: pd.DataFrame,
    x: str,
    metric: str,
    hue: str | None = None,
    order: Sequence[Any] | None = None,
    hue_order: Sequence[Any] | None = None,
    scale: float = 1.0,
) -> None:
    """One bar per point: ``x`` along the axis, ``hue`` side by side, the bar's height its
    median, its error bar the 95% interval. One point per (``x``, ``hue``) is expected."""
    xs = list(order) if order is not None else list(dict.fromkeys(points[x]))
    hues = [None] if hue is None else (list(hue_order) if hue_order is not None
                                       else list(dict.fromkeys(points[hue])))  # fmt: skip
    width = 0.8 / len(hues)
    for i, level in enumerate(hues):
        part = points if hue is None else points[points[hue] == level]
        part = part.set_index(x).reindex(xs)
        med, err = medians_and_errors(part, metric, scale)
        pos = np.arange(len(xs)) + (i - (len(hues) - 1) / 2) * width
        ax.bar(pos, med, width, yerr=err, capsize=3, error_kw={"elinewidth": 1},
               label=None if level is None else str(level))  # fmt: skip
    ax.set_xticks(np.arange(len(xs)), [str(v) for v in xs])
    ax.set_xlabel(x)


LINE_STYLES = ("-", "--", ":", "-.")


def interval_lines(
    ax: Any,
    points: pd.DataFrame,
    x: str,
    metric: str,
    hue: str,
    style: str | None = None,
    scale: float = 1.0,
) -> None:
    """One line per ``hue`` (and ``style``) through the points' medians against ``x``, with
    the 95% intervals as error bars; each line labelled ``hue`` (``style``)."""
    hues = list(dict.fromkeys(points[hue]))
    styles = [None] if style is None else list(dict.fromkeys(points[style]))
    colours = [f"C{i % 10}" for i in range(len(hues))]
    for colour, level in zip(colours, hues, strict=True):
        for dash, kind in zip(LINE_STYLES * len(styles), styles, strict=False):
            part = points[points[hue] == level]
            if kind is not None:
                part = part[part[style] == kind]
            if part.empty:
                continue
            part = part.sort_values(x)
            med, err = medians_and_errors(part, metric, scale)
            label = str(level) if kind is None else f"{level} ({kind})"
            ax.errorbar(part[x], med, yerr=err, color=colour, linestyle=dash, marker="o",
                        capsize=3, label=label)  # fmt: skip
