"""The before-and-after page of a site's report, when the study file names a ``baseline``: this
run's points against the baseline's, as ``instore compare BASELINE RESULTS --site SITE`` gives
them, in a table and a plot of each ratio with its 95% interval as error bars.

A report is not failed by a baseline it cannot compare with (another site, no point in common,
single measurements): the page says why, so the rest of the report still renders.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullLocator

from instore.errors import InstoreError
from instore.report import show
from instore.report.plots import panels
from instore.summary import baseline as bl
from instore.summary.results import DEFAULT_NOISE, compare_dirs, sites_of

TITLE = "Before and after: this run against the baseline"
MOST = 30  # points drawn in the plot: the largest changes (the table has every point)
COLOURS = {"faster": "tab:green", "slower": "tab:red", "unchanged": "tab:grey",
           bl.ONE_MEASUREMENT: "black"}  # fmt: skip


@dataclass
class BaselinePage:
    """The comparison a page shows, or why there is none."""

    site: str
    results: Path
    baseline: Path
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None

    @property
    def both(self) -> pd.DataFrame:
        if self.table.empty:
            return self.table
        return self.table[self.table["present"] == bl.BOTH].reset_index(drop=True)


def load(site: str, results: str | Path, baseline: str | Path) -> BaselinePage:
    """Compare the site's results with the baseline's (A: the baseline, B: this run). A
    baseline that is not a results directory fails the page: the study file names it wrong."""
    page = BaselinePage(site, Path(results), Path(baseline))
    sites_of(page.baseline)  # not a results directory: an error with its fix
    try:
        page.table, page.notes = compare_dirs(page.baseline, page.results, site)
    except InstoreError as err:
        page.problem = str(err)
    return page


def header(page: BaselinePage) -> None:
    show.heading(f"{page.site}: {TITLE}", 1)
    show.note(
        f"A (before) is the baseline {page.baseline}; B (after) is this run. Each figure is B's "
        "median over A's for a point both measured (same section and knobs), with the 95% "
        "bootstrap interval of that ratio from each run's repetitions and jobs. A change is "
        "named faster or slower only when its interval excludes 1 and it exceeds the larger of "
        f"{DEFAULT_NOISE:.0%} (what a quiet machine varies by) and the machine noise recorded "
        "with the point; for CPU efficiency and events/s higher is faster."
    )
    if page.problem:
        show.note(f"No comparison: {page.problem}.")


def table(page: BaselinePage) -> None:
    """Every point in common, largest change first; then what did not match."""
    if page.problem:
        return
    shown = bl.readable(page.both).drop(columns="site")
    show.table(shown, "Points both runs measured, largest change first", key="baseline_table")
    single = bl.without_interval(page.table)
    if len(single):
        show.note(
            f"{len(single)} point(s) rest on a single measurement in a run: no interval, no "
            f"verdict ({bl.REPETITIONS_FIX})."
        )


def unmatched(page: BaselinePage) -> None:
    """The points and axis values only one run has: listed, never dropped."""
    if page.problem:
        return
    rest = page.table[page.table["present"] != bl.BOTH]
    if len(rest):
        listed = rest[["section", "point", "present"]].replace(
            {bl.ONLY_A: "only in the baseline", bl.ONLY_B: "only in this run"}
        )
        show.table(listed, "Points not compared: measured by one run only", key="baseline_only")
    if page.notes:
        show.note("Did not match: " + "; ".join(page.notes) + " (A: the baseline, B: this run).")
    if rest.empty and not page.notes:
        show.note("Every point of either run was measured by the other.")


def plot(page: BaselinePage) -> None:
    """Each figure's ratio after/before per point, with its interval as error bars, and the
    noise band around 1 in which no change is named."""
    both = page.both
    if page.problem or both.empty:
        return
    size = np.zeros(len(both))
    for f in bl.COMPARED:
        size = np.fmax(size, np.abs(np.log(both[f"{f.metric}_after_before"].astype(float))))
    shown = both.assign(_size=size).nlargest(MOST, "_size").iloc[::-1]
    labels = [f"{s}: {p}" for s, p in zip(shown["section"], shown["point"], strict=True)]
    fig, axes = panels(len(bl.COMPARED), width=4.2, height=1.2 + 0.32 * len(shown))
    y = np.arange(len(shown))
    for ax, f in zip(axes, bl.COMPARED, strict=True):
        m = f.metric
        value = shown[f"{m}_after_before"].to_numpy(dtype=float)
        lo = np.nan_to_num(value - shown[f"{m}_lo"].to_numpy(dtype=float))
        hi = np.nan_to_num(shown[f"{m}_hi"].to_numpy(dtype=float) - value)
        for verdict, colour in COLOURS.items():
            on = (shown[f"{m}_change"] == verdict).to_numpy()
            ax.errorbar(value[on], y[on], xerr=[lo[on], hi[on]], fmt="o", ms=4, color=colour,
                        capsize=3, label=verdict)  # fmt: skip
        noise = float(shown["noise"].max())
        if noise > 0:
            ax.axvspan(1 - noise, 1 + noise, color="grey", alpha=0.15, lw=0)
        ax.axvline(1, color="black", lw=0.8)
        ax.set_xscale("log")  # 0.8 and 1.25 are the same change, either way
        left, right = ax.get_xlim()  # a few ticks spaced evenly on the log scale, and 1
        inner = np.geomspace(left, right, 5)[1:-1]
        ax.set_xticks(sorted({1.0, *(float(f"{v:.2g}") for v in inner)}))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_title(f"{f.words}: after/before", fontsize=10)
        ax.set_yticks(y, labels if ax is axes[0] else [""] * len(y), fontsize=8)
    more = f" (the {MOST} largest changes of {len(both)})" if len(both) > MOST else ""
    show.figure(
        fig, "baseline", f"Ratio after/before per point with its 95% interval{more}: green "
        "faster, red slower, grey unchanged, black a single measurement (no interval); the "
        "shaded band is the machine noise."
    )  # fmt: skip


def link(baseline: str | None) -> None:
    """On the site's overview: a link to the page, when the study names a baseline."""
    if not baseline or (isinstance(baseline, float) and math.isnan(baseline)):
        return
    show._display(
        f'<p><a href="baseline.html">{html.escape(TITLE)}</a> ({html.escape(str(baseline))})</p>'
    )
