"""The format section's figures and tables: TTree against RNTuple (the same events), cache off
and on, per protocol and engine.

``cache_mb`` means the TTreeCache for a TTree and RNTuple's cluster cache for an RNTuple (0 off,
anything else on: the cluster cache has no size); the uproot engine has no client cache.
Each figure is a point's median with its 95% interval (error bars; ``median [low, high]`` in the
table); TTree against RNTuple is a ratio of two points' medians with its own interval.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from instore.payload.specs import has_client_cache
from instore.report import show
from instore.report.plots import LIMIT_STYLE, interval_bars, panels
from instore.report.sections import page_of, statistics_table
from instore.report.view import SiteView
from instore.summary.interval import ratio_interval
from instore.summary.sections.format import NAME as SECTION
from instore.summary.sections.format import format_name

HOW = "setup"  # the hue: format and cache state, e.g. "RNTuple, cache on"


def cache_state(cache_mb: Any, engine: str) -> str:
    """``cache off`` / ``cache on`` as the reader saw it (uproot has no client cache)."""
    if not has_client_cache(engine):
        return "no client cache"
    return "cache off" if cache_mb == 0 else "cache on"


def labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows or points with ``format`` (TTree/RNTuple), ``cache state`` and the ``setup`` hue."""
    fmt = frame["layout"].map(format_name)
    state = [cache_state(c, e) for c, e in zip(frame["cache_mb"], frame["engine"], strict=True)]
    layout = frame["layout"].map(lambda x: "" if x in ("ordered", "rntuple") else f" ({x})")
    setup = [f"{f}{lay}, {s}" for f, lay, s in zip(fmt, layout, state, strict=True)]
    return frame.assign(format=fmt, cache_state=state, setup=setup)


def _order(frame: pd.DataFrame) -> list[str]:
    """Setups TTree first, cache off before on, so colours keep their meaning across pages."""
    keys = frame[["format", "layout", "cache_state", HOW]].drop_duplicates()
    keys = keys.assign(tree=keys["format"] != "TTree", on=keys["cache_state"] == "cache on")
    return list(keys.sort_values(["tree", "layout", "on"])[HOW])


def _root_points(view: SiteView) -> tuple[pd.DataFrame, list[str]]:
    """The points of the engines with a client cache (root: both caches are measured there;
    all points if there are none) and their setups' order."""
    pts = labelled(view.points(SECTION))
    root = pts[pts["engine"].map(has_client_cache)]
    pts = root if len(root) else pts
    return pts, _order(pts)


@page_of(SECTION, _root_points)
def format_wall(view: SiteView, pts: pd.DataFrame, order: list[str]) -> None:
    """Wall time and read calls per protocol, TTree against RNTuple, cache off and on."""
    fig, axes = panels(2, width=6)
    for ax, metric, label in ((axes[0], "wall_s", "wall time (s)"),
                              (axes[1], "read_calls", "read calls per job")):  # fmt: skip
        _bars(ax, pts, metric, label, order)
    axes[1].set_yscale("log")
    _show_with_legend_below(
        fig,
        axes[0],
        len(order),
        "format_wall",
        "Wall time and read calls per protocol, TTree against RNTuple, cache off and on "
        "(TTreeCache for TTree, the cluster cache for RNTuple; ROOT engine; median per point, "
        "bars: the wall time's 95% interval).",
    )


def _bars(
    ax: Any, points: pd.DataFrame, metric: str, ylabel: str, order: list[str], hue: str = HOW
) -> None:
    """Bars of ``metric`` per protocol and ``hue`` on ``ax``: each point's median with its
    95% interval, labelled (the legend goes under the figure)."""
    protocols = sorted(points["protocol"].unique())
    interval_bars(ax, points, "protocol", metric, hue, order=protocols, hue_order=order)
    ax.set(xlabel="protocol", ylabel=ylabel)


def _show_with_legend_below(fig: Any, ax: Any, n: int, key: str, caption: str) -> None:
    """Show ``fig`` with the legend of ``ax`` (``n`` entries) under its panels."""
    handles, labels = ax.get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=min(n, 4), bbox_to_anchor=(0.5, 0.0),
               frameon=False)  # fmt: skip
    show.figure(fig, key, caption)


@page_of(SECTION, _root_points)
def format_throughput(view: SiteView, pts: pd.DataFrame, order: list[str]) -> None:
    """MB/s per protocol and setup against the site's calibrated MB/s for that protocol."""
    fig, axes = panels(1, width=8)
    ax = axes[0]
    _bars(ax, pts, "mb_per_s", "MB/s", order)
    protocols = [t.get_text() for t in ax.get_xticklabels()]
    _limit_marks(ax, [view.limits.throughput(p) for p in protocols])
    _show_with_legend_below(
        fig,
        ax,
        len(order) + 1,
        "format_throughput",
        "Throughput per protocol, TTree against RNTuple, cache off and on (median per point, "
        "bars: 95% interval), against the site's calibrated MB/s for each protocol (dashed).",
    )


def _limit_marks(ax: Any, limits: list[float | None]) -> None:
    """One dashed mark per protocol at its calibrated MB/s (each protocol has its own limit)."""
    marked = False
    for i, limit in enumerate(limits):
        if limit:
            ax.hlines(limit, i - 0.45, i + 0.45, colors=LIMIT_STYLE["color"], linestyles="--",
                      label=None if marked else "calibrated MB/s")  # fmt: skip
            marked = True
    if not marked:
        ax.text(0.99, 0.98, "no calibrated limit", transform=ax.transAxes, ha="right", va="top",
                fontsize=8, color="grey")  # fmt: skip


KEYS = ["protocol", "engine", "cache_state"]


def _fastest(points: pd.DataFrame) -> pd.DataFrame:
    """Per protocol, engine and cache state the point with the shortest median wall."""
    return points.sort_values("wall_s_median").drop_duplicates(KEYS).set_index(KEYS)


def _runs(point: pd.Series) -> Any:
    """A point's wall times per repetition (its median alone in a summary without them)."""
    runs = point.get("wall_s_runs")
    return runs if runs is not None else [[point["wall_s_median"]]]


def speedup(points: pd.DataFrame) -> pd.DataFrame:
    """TTree wall over RNTuple wall per protocol, engine and cache state (> 1: RNTuple faster),
    from the fastest point of each, with the ratio's 95% interval (``_lo``, ``_hi``); RNTuple
    layouts other than the default shown on their own."""
    pts = labelled(points).dropna(subset=["wall_s_median"])
    tree = _fastest(pts[pts["format"] == "TTree"])
    out = []
    for layout, part in pts[pts["format"] == "RNTuple"].groupby("layout"):
        rnt = _fastest(part)
        for key in tree.index.intersection(rnt.index):
            ratio = ratio_interval(_runs(tree.loc[key]), _runs(rnt.loc[key]))
            out.append({**dict(zip(KEYS, key, strict=True)), "ttree_over_rntuple": ratio.value,
                        "ttree_over_rntuple_lo": ratio.lo, "ttree_over_rntuple_hi": ratio.hi,
                        "rntuple": layout})  # fmt: skip
    columns = [*KEYS, "ttree_over_rntuple", "ttree_over_rntuple_lo", "ttree_over_rntuple_hi"]
    return pd.DataFrame(out, columns=[*columns, "rntuple"])


@page_of(SECTION)
def format_ratio(view: SiteView) -> None:
    """TTree against RNTuple per protocol: how many times faster RNTuple reads (> 1)."""
    ratio = speedup(view.points(SECTION))
    if ratio.empty:
        show.note("TTree and RNTuple were not both measured on this site: no ratio to show.")
        return
    ratio = ratio.assign(reader=ratio["engine"] + ", " + ratio["cache_state"])
    if ratio["rntuple"].nunique() > 1:
        ratio["reader"] += " (" + ratio["rntuple"] + ")"
    fig, axes = panels(1, width=8)
    readers = list(dict.fromkeys(ratio["reader"]))
    _bars(axes[0], ratio, "ttree_over_rntuple", "TTree wall / RNTuple wall", readers, "reader")
    axes[0].axhline(1.0, color="black", linewidth=1)
    _show_with_legend_below(
        fig,
        axes[0],
        ratio["reader"].nunique(),
        "format_ratio",
        "TTree against RNTuple per protocol: TTree's wall time over RNTuple's at the same cache "
        "state and engine (above 1: RNTuple is faster; bars: the ratio's 95% interval).",
    )


@page_of(SECTION)
def format_table(view: SiteView) -> None:
    """Per point medians, with format and cache state spelled out."""
    pts = labelled(view.points(SECTION)).sort_values(["protocol", "engine", "format"])
    table = statistics_table(pts, SECTION)
    show.table(table, "Per point: medians with their 95% intervals (cache: TTreeCache for TTree, "
               "cluster cache for RNTuple)", "format_table")  # fmt: skip


def format_failures(view: SiteView) -> None:
    """Points whose jobs failed, with the reason recorded (a setup the site cannot serve is
    shown as not available, with why, not left out)."""
    if SECTION not in view.sections:
        return
    rows = view.rows(SECTION, ok_only=False)
    failed = rows[rows["status"] != "ok"] if len(rows) else rows
    if failed.empty:
        return
    failed = labelled(failed).assign(reason=failed["error"].fillna("").map(_first_line))
    table = failed.groupby(["setup", "protocol", "engine", "reason"]).size().rename("jobs")
    show.table(table.reset_index(), "Not available: failed jobs and their recorded reason")


def _first_line(text: str) -> str:
    return (str(text).strip().splitlines() or ["(no reason recorded)"])[0][:200]
