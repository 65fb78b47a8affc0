"""The caching section's figure and table: direct xrootd, stage-in and an XCache (cold and
warm) across RTTs, for full and sparse reads; each point's median with its 95% interval."""

from __future__ import annotations

import pandas as pd

from instore.report import show
from instore.report.plots import interval_lines, panels
from instore.report.sections import has_runs, statistics_table
from instore.report.view import SiteView
from instore.summary.sections.caching import NAME as SECTION


def _caching_points(view: SiteView) -> pd.DataFrame:
    """The caching section's point medians at the RTT they ran at (a real site's own), with
    the access method and read kind named."""
    from instore.summary.sections.caching import by_method

    return by_method(view.points(SECTION))


def caching(view: SiteView) -> None:
    """CPU efficiency and wall time against RTT per access method, full and sparse reads; the
    dotted lines mark where a warm XCache starts to beat direct reads."""
    from instore.summary.advice import EFFICIENCY_FLOOR
    from instore.summary.sections.caching import break_even_ms, caching_curves

    if not has_runs(view, SECTION):
        return
    pts = _caching_points(view)
    curves = caching_curves(view.stats)
    fig, axes = panels(2)
    rtts = sorted(pts["rtt_ms"].dropna().unique())
    for ax, metric, label in ((axes[0], "cpu_efficiency", "CPU efficiency"),
                              (axes[1], "wall_s", "wall time (s)")):  # fmt: skip
        interval_lines(ax, pts, "rtt_ms", metric, "method", style="reads")
        ax.set(xscale="log", xlabel="round-trip time (ms)", ylabel=label)
        ax.set_xticks(rtts, [f"{r:g}" for r in rtts])  # the RTTs measured, not 2x10^1
        ax.minorticks_off()
        for reads, dash in (("full", ":"), ("sparse", "-.")):
            rtt = break_even_ms(curves[curves["reads"] == reads], "XCache warm", "direct xrootd")
            if rtt is not None:
                ax.axvline(rtt, color="grey", linestyle=dash, linewidth=1,
                           label=f"warm XCache beats direct ({reads})")  # fmt: skip
    axes[0].axhline(EFFICIENCY_FLOOR, color="crimson", linestyle="--", linewidth=1)
    axes[0].set(ylim=(0, 1.05))
    handles, labels = axes[-1].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=4, bbox_to_anchor=(0.5, 0.0),
               fontsize=8, frameon=False)  # below the panels: it covers no line # fmt: skip
    show.figure(
        fig,
        "caching",
        f"CPU efficiency and wall time per access method {_where(pts)} (median per point; bars: "
        f"95% interval); dashed red: the {EFFICIENCY_FLOOR:.0%} efficiency floor; grey: where a "
        "warm XCache beats direct reads.",
    )


def caching_table(view: SiteView) -> None:
    """Per point: the RTT asked and measured, and what crossed the link against what the
    jobs read (a warm cache's point moves next to nothing)."""
    if not has_runs(view, SECTION):
        return
    pts = _caching_points(view).sort_values(["reads", "method", "rtt_ms"])
    table = statistics_table(pts, SECTION)
    show.table(table, f"Access methods {_where(pts)} (median per point, 95% interval)")


def _where(points: pd.DataFrame) -> str:
    """``across RTTs``, or at the one RTT a real site's points ran at (its own, as probed)."""
    rtts = points["rtt_ms"].dropna().unique()
    return f"at the site's own RTT ({rtts[0]:.3g} ms)" if len(rtts) == 1 else "across RTTs"
