"""Intervals as the pages show them: the sentence each page says once, the one way a figure is
written (``median [lo, hi]``, or ``median (one measurement)``), table columns built from the
summary's ``<m>_median``/``<m>_lo``/``<m>_hi``/``<m>_n``/``<m>_basis`` and, for the pages that
work from records rather than the summary (load, replay, scale), the same columns computed
with the summary's bootstrap (``instore.summary.interval.median_interval``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from instore.report import show
from instore.summary.interval import ONE_MEASUREMENT, Interval, median_interval

# A point the sweep measured once on purpose (instore.sweep.adaptive): its first run took
# longer than the profile's ``expensive_s``, so it has no interval over repetitions.
EXPENSIVE = "measured"
EXPENSIVE_NOTE = "once: expensive (first run over the profile's expensive_s)"
SENTENCE = (
    "Each figure of a point is the median of its measurements with its 95% bootstrap interval, "
    "written median [low, high]: resampled over the point's repetitions and, for a point of "
    "several jobs (or clients), over its jobs too; n says how many measurements a figure rests "
    "on and what was resampled. A point measured once has no interval and says "
    f'"{ONE_MEASUREMENT}"; one marked "{EXPENSIVE_NOTE.split(" (")[0]}" was measured once on '
    "purpose (its first run cost more than the profile repeats). Error bars in the plots are "
    "these intervals."
)
COUNT = "n (resampled over)"


def note() -> None:
    """Say once on a page what the intervals are."""
    show.note(SENTENCE)


def header(words: str, figure: str = "median") -> str:
    """A figure's column header: ``wall time (s), median [95% interval]``."""
    return f"{words}, {figure} [95% interval]"


def median_column(frame: pd.DataFrame | pd.Series, metric: str) -> str:
    """Where a figure's median is: ``<m>_median`` in the summary, else ``<m>`` itself."""
    index = frame.columns if isinstance(frame, pd.DataFrame) else frame.index
    return f"{metric}_median" if f"{metric}_median" in index else metric


def metric_of(column: str) -> str:
    """``wall_s_median`` -> ``wall_s``."""
    return column.removesuffix("_median")


def has_interval(frame: pd.DataFrame, metric: str) -> bool:
    return f"{metric}_lo" in frame.columns and f"{metric}_hi" in frame.columns


def _number(value: Any) -> float:
    return float(value) if value is not None and pd.notna(value) else math.nan


def of(row: pd.Series, metric: str) -> Interval:
    """A point's figure as an ``Interval`` from its row (a summary row or ``fields``')."""
    n = row.get(f"{metric}_n")
    return Interval(
        _number(row.get(median_column(row, metric))),
        _number(row.get(f"{metric}_lo")),
        _number(row.get(f"{metric}_hi")),
        int(n) if n is not None and pd.notna(n) else 0,
        str(row.get(f"{metric}_basis") or ONE_MEASUREMENT),
    )


def text(interval: Interval, percent: bool = False) -> str:
    """``1.23 [1.1, 1.4]``, ``85% [80%, 90%]``, ``1,052 [980, 1,130]`` or ``0.62 (one
    measurement)``; empty when nothing was measured, the median alone where what it rests on
    is not known (a summary written before intervals)."""
    if math.isnan(interval.median):
        return ""
    values = [abs(v) for v in (interval.median, interval.lo, interval.hi) if not math.isnan(v)]
    fmt = "{:.0%}" if percent else "{:,.0f}" if max(values) >= 1000 else "{:.3g}"
    if interval.n == 0:
        return fmt.format(interval.median)
    return interval.text(fmt)


def count(interval: Interval) -> str:
    """``6 (repetitions and jobs)``; ``1`` for a point measured once."""
    if interval.n == 0:
        return ""
    return (
        str(interval.n) if interval.basis == ONE_MEASUREMENT else f"{interval.n} ({interval.basis})"
    )


def fields(name: str, groups: Sequence[Sequence[float]]) -> dict[str, Any]:
    """A figure's median and interval columns from its values grouped by repetition, as the
    summary names them (``name``, ``name_lo``, ``name_hi``, ``name_n``, ``name_basis``)."""
    interval = median_interval(groups)
    return {name: interval.median, f"{name}_lo": interval.lo, f"{name}_hi": interval.hi,
            f"{name}_n": interval.n, f"{name}_basis": interval.basis}  # fmt: skip


def runs(point: pd.Series, metric: str) -> list[list[float]]:
    """A summary point's values of ``metric`` per repetition (``<m>_runs``)."""
    return [[float(v) for v in run] for run in point[f"{metric}_runs"]]


def pooled(points: pd.DataFrame, metric: str) -> dict[str, Any]:
    """The figure of several summary points together (one point: its own): the median of all
    their measurements with its interval, each point's repetitions resampled as runs; the
    median of their medians alone from a summary without ``<m>_runs``."""
    if f"{metric}_runs" not in points:
        return {f"{metric}_median": points[median_column(points, metric)].median()}
    out = fields(metric, [run for _, point in points.iterrows() for run in runs(point, metric)])
    out[f"{metric}_median"] = out.pop(metric)
    return out


def per_run(values: pd.Series, runs: pd.Series) -> list[list[float]]:
    """``values`` grouped by ``runs`` (repetitions), NaN left out: ``fields``' input."""
    values = pd.to_numeric(values, errors="coerce")
    return [[float(v) for v in g.dropna()] for _, g in values.groupby(runs.to_numpy(), sort=True)]


def table(
    frame: pd.DataFrame,
    columns: dict[str, str],
    percent: Sequence[str] = (),
    ratios: Sequence[str] = (),
) -> pd.DataFrame:
    """``frame``'s ``columns`` under their words, ready for ``show.table``: a figure with an
    interval becomes ``median [lo, hi]`` under ``<words>, median [95% interval]`` (``ratios``:
    ``ratio of medians [95% interval]``), followed by what it rests on (one ``n`` column after
    the figures that rest on the same measurements, its own after a figure that rests on
    others, e.g. one value per repetition); ``percent`` (source names) are shown as
    percentages."""
    out: dict[str, list[Any]] = {}
    groups: dict[tuple[str, ...], list[str]] = {}  # what figures rest on -> their words
    for source, words in columns.items():
        metric = metric_of(source)
        if not has_interval(frame, metric):
            values = frame[source]
            if source in percent:
                values = values.map(
                    lambda v, s=source: "" if pd.isna(v) else f"{v:.0%}{show.over_mark(s, v)}"
                )
            out[words] = values.to_list()
            continue
        intervals = [of(row, metric) for _, row in frame.iterrows()]
        shown = header(words, "ratio of medians" if source in ratios else "median")
        out[shown] = [
            text(i, source in percent) + show.over_mark(source, i.median) for i in intervals
        ]
        groups.setdefault(tuple(count(i) for i in intervals), []).append(shown)
    order = list(out)
    if "expensive" in frame and frame["expensive"].fillna(False).astype(bool).any():
        flags = frame["expensive"].fillna(False).astype(bool)
        out[EXPENSIVE] = [EXPENSIVE_NOTE if e else "" for e in flags]
        order.append(EXPENSIVE)
    for i, (rests, figures) in enumerate(groups.items()):
        name = COUNT if i == 0 else "n of " + "; ".join(_short(f) for f in figures)
        out[name] = list(rests)
        order.insert(order.index(figures[-1]) + 1, name)
    return pd.DataFrame(out, index=range(len(frame)))[order]


def _short(shown: str) -> str:
    """A figure's header without its units and ``median [95% interval]``."""
    return re.sub(r" \([^)]*\)", "", shown.split(", median [")[0].split(", ratio of")[0])
