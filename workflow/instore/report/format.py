"""The format section's figures and tables: TTree against RNTuple (the same events), cache off
and on, per protocol and engine.

``cache_mb`` means the TTreeCache for a TTree and RNTuple's cluster cache for an RNTuple (0 off,
anything else on: the cluster cache has no size); the uproot engine has no client cache.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from instore.report import show
from instore.report.plots import LIMIT_STYLE, iqr, panels
from instore.report.sections import _has
from instore.report.view import SiteView
from instore.summary.recommend import format_name

SECTION = "format"
HOW = "setup"  # the hue: format and cache state, e.g. "RNTuple, cache on"


def cache_state(cache_mb: Any, engine: str) -> str:
    """``cache off`` / ``cache on`` as the reader saw it (uproot has no client cache)."""
    if engine == "uproot":
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


def _root_rows(view: SiteView) -> pd.DataFrame:
    """The root engine's rows (both caches are measured there); all rows if it has none."""
    rows = labelled(view.rows(SECTION))
    root = rows[rows["engine"] == "root"]
    return root if len(root) else rows


def format_wall(view: SiteView) -> None:
    """Wall time and read calls per protocol, TTree against RNTuple, cache off and on."""
    if not _has(view, SECTION):
        return
    rows = _root_rows(view)
    order = _order(rows)
    fig, axes = panels(2, width=6)
    for ax, metric, label in ((axes[0], "wall_s", "wall time (s)"),
                              (axes[1], "read_calls", "read calls per job")):  # fmt: skip
        _bars(ax, rows, metric, label, order)
    axes[1].set_yscale("log")
    _show_with_legend_below(
        fig,
        axes[0],
        len(order),
        "format_wall",
        "Wall time and read calls per protocol, TTree against RNTuple, cache off and on "
        "(TTreeCache for TTree, the cluster cache for RNTuple; ROOT engine; median, bars: "
        "interquartile range).",
    )


def _bars(
    ax: Any,
    data: pd.DataFrame,
    metric: str,
    ylabel: str,
    order: list[str] | None = None,
    hue: str = HOW,
    median: bool = True,
) -> None:
    """Bars of ``metric`` per protocol and ``hue`` on ``ax`` (median and interquartile range,
    or seaborn's defaults), labelled; the axes' own legend is dropped for the figure's below."""
    import seaborn as sns

    stats = {"estimator": "median", "errorbar": iqr()} if median else {}
    sns.barplot(data=data, x="protocol", y=metric, hue=hue, hue_order=order, ax=ax, legend=True,
                **stats)  # fmt: skip
    if ax.get_legend():
        ax.get_legend().remove()
    ax.set(xlabel="protocol", ylabel=ylabel)


def _show_with_legend_below(fig: Any, ax: Any, n: int, key: str, caption: str) -> None:
    """Show ``fig`` with the legend of ``ax`` (``n`` entries) under its panels."""
    handles, labels = ax.get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=min(n, 4), bbox_to_anchor=(0.5, 0.0),
               frameon=False)  # fmt: skip
    show.figure(fig, key, caption)


def format_throughput(view: SiteView) -> None:
    """MB/s per protocol and setup against the site's calibrated MB/s for that protocol."""
    if not _has(view, SECTION):
        return
    rows = _root_rows(view)
    order = _order(rows)
    fig, axes = panels(1, width=8)
    ax = axes[0]
    _bars(ax, rows, "mb_per_s", "MB/s", order)
    protocols = [t.get_text() for t in ax.get_xticklabels()]
    _limit_marks(ax, [view.limits.throughput(p) for p in protocols])
    _show_with_legend_below(
        fig,
        ax,
        len(order) + 1,
        "format_throughput",
        "Throughput per protocol, TTree against RNTuple, cache off and on, against the site's "
        "calibrated MB/s for each protocol (dashed).",
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


def speedup(points: pd.DataFrame) -> pd.DataFrame:
    """TTree wall over RNTuple wall per protocol, engine and cache state (> 1: RNTuple faster),
    from the point medians; RNTuple layouts other than the default shown on their own."""
    pts = labelled(points)
    keys = ["protocol", "engine", "cache_state"]
    tree = pts[pts["format"] == "TTree"].groupby(keys)["wall_s_median"].min()
    out = []
    for layout, part in pts[pts["format"] == "RNTuple"].groupby("layout"):
        ratio = (tree / part.groupby(keys)["wall_s_median"].min()).dropna()
        out.append(ratio.rename("ttree_over_rntuple").reset_index().assign(rntuple=layout))
    if not out:
        return pd.DataFrame(columns=[*keys, "ttree_over_rntuple", "rntuple"])
    return pd.concat(out, ignore_index=True)


def format_ratio(view: SiteView) -> None:
    """TTree against RNTuple per protocol: how many times faster RNTuple reads (> 1)."""
    if not _has(view, SECTION):
        return
    ratio = speedup(view.points(SECTION))
    if ratio.empty:
        show.note("TTree and RNTuple were not both measured on this site: no ratio to show.")
        return
    ratio = ratio.assign(reader=ratio["engine"] + ", " + ratio["cache_state"])
    if ratio["rntuple"].nunique() > 1:
        ratio["reader"] += " (" + ratio["rntuple"] + ")"
    fig, axes = panels(1, width=8)
    _bars(axes[0], ratio, "ttree_over_rntuple", "TTree wall / RNTuple wall", hue="reader",
          median=False)  # fmt: skip
    axes[0].axhline(1.0, color="black", linewidth=1)
    _show_with_legend_below(
        fig,
        axes[0],
        ratio["reader"].nunique(),
        "format_ratio",
        "TTree against RNTuple per protocol: TTree's wall time over RNTuple's at the same cache "
        "state and engine (above 1: RNTuple is faster).",
    )


def format_table(view: SiteView) -> None:
    """Per point medians, with format and cache state spelled out."""
    if not _has(view, SECTION):
        return
    pts = labelled(view.points(SECTION))
    cols = {"format": "format", "layout": "layout", "cache_state": "cache", "protocol": "protocol",
            "engine": "engine", "wall_s_median": "wall (s)", "read_calls_median": "read calls",
            "bytes_read_median": "bytes read", "mb_per_s_median": "MB/s",
            "mb_per_s_of_limit": "MB/s / limit", "cpu_efficiency_median": "CPU eff.",
            "jobs_ok": "jobs", "jobs_failed": "failed"}  # fmt: skip
    table = pts[list(cols)].rename(columns=cols).sort_values(["protocol", "engine", "format"])
    show.table(table, "Per point medians (cache: TTreeCache for TTree, cluster cache for RNTuple)",
               "format_table", ("CPU eff.", "MB/s / limit"))  # fmt: skip


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
