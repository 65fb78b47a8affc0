"""One function per figure or table of the study sections; a section's page draws them
(``report.page.PARTS``), in the order its module declares.

Every value shown comes from the site's Parquet rows or its point summary; a figure of a point
(wall, CPU efficiency, MB/s, events/s) is its median with its 95% bootstrap interval, drawn as
error bars and printed as ``median [low, high]`` (``instore.report.intervals``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from instore.access import POSIX
from instore.predict.profile import FILE_NAME as PROFILE_FILE
from instore.report import intervals, show
from instore.report.conditions import conditions_html
from instore.report.plots import (
    interval_bars,
    interval_lines,
    iqr,
    limit_line,
    panels,
)
from instore.report.view import SiteView
from instore.report.whatif import PAGE as WHATIF_PAGE
from instore.summary.load import read_skipped
from instore.summary.sections import REGISTRY, statistics, title
from instore.summary.sections.cache import NAME as CACHE
from instore.summary.sections.layout import NAME as LAYOUT
from instore.summary.sections.protocols import NAME as PROTOCOLS
from instore.summary.sections.readahead import NAME as READAHEAD


def has_runs(view: SiteView, section: str) -> bool:
    """True when the section has successful rows; otherwise say so on the page, once."""
    if section in view.sections and len(view.points(section)):
        return True
    if section not in view.told_empty:
        view.told_empty.add(section)
        show.note(no_runs_note(view, section))
    return False


def page_of(
    section: str, prepare: Callable[[SiteView], tuple[Any, ...]] = lambda view: ()
) -> Callable[[Callable[..., None]], Callable[[SiteView], None]]:
    """A page's part that draws only when the section has successful rows (otherwise the page
    says why): the decorated function is called with the view and what ``prepare`` makes of
    it, and is called by the page with the view alone."""

    def wrap(draw: Callable[..., None]) -> Callable[[SiteView], None]:
        @functools.wraps(draw)
        def part(view: SiteView) -> None:
            if has_runs(view, section):
                draw(view, *prepare(view))

        return part

    return wrap


def no_runs_note(view: SiteView, section: str) -> str:
    """Why a section page has nothing to show, without guessing which reason it was: the
    sweep's log names each skipped point's reason (the report has only the records)."""
    measured = section in view.sections and len(view.rows(section, ok_only=False))
    why = skipped_here(view, section)
    if why and not measured:
        return f"No point of {section} ran on {view.site}: {why}."
    what = "every measured job failed" if measured else "none of its points was measured here"
    offered = view.conditions().get("protocols")
    protocols = f" (this site offers {', '.join(offered)})" if offered else ""
    return (
        f"No successful runs were recorded for {section} on {view.site}: {what}. A point is "
        "skipped when the site lacks what its section needs (the study file's `needs:`: an "
        "XCache, a link or disk the study may set), when the site is one of the profile's own "
        "and the section's `budget_sites:` leaves it out, when it needs a protocol the site "
        f"does not offer{protocols}, or when its engine cannot read it; the sweep's log "
        f"(logs/{view.site}/sweep.log after `make study`) names each reason."
    )


def _cache_order(rows: pd.DataFrame) -> list[str]:
    """Cache labels from smallest to largest effective cache."""
    size = rows.groupby("cache")["cache_bytes_effective"].median().sort_values()
    return list(size.index)


def statistics_table(
    points: pd.DataFrame,
    section: str,
    *,
    leave_out: tuple[str, ...] = (),
    before: dict[str, str] | None = None,
) -> pd.DataFrame:
    """``points`` under the statistics the registry gives the section (``before``: the page's
    own setup columns first; ``leave_out``: columns that say nothing here)."""
    stats = statistics(section)
    columns = {**(before or {}), **stats.shown(points, leave_out)}
    return intervals.table(points, columns, stats.percent)


def points_table(view: SiteView, section: str) -> None:
    """The section's per-point medians (with their intervals) under words."""
    if not has_runs(view, section):
        return
    show.table(statistics_table(view.points(section), section),
               "Per point: medians with their 95% intervals")  # fmt: skip


def header(view: SiteView, section: str) -> None:
    show.heading(f"{view.site}: {title(section)}", 1)
    cond = view.conditions()
    described = str(cond.get("description") or view.site).rstrip(". ")
    show.note(f"{described}. {view.limits.describe()}.")
    if section != "overview":
        substituted = substitution_note(view, section)
        if substituted:
            show.note(substituted)
        why = skipped_here(view, section)
        if why and section in view.sections and len(view.rows(section, ok_only=False)):
            show.note(f"Not measured on {view.site}: {why}.")
        intervals.note()


def skipped_here(view: SiteView, section: str) -> str:
    """Why points of the section did not run on the site, as its last sweep planned them
    (results/<site>/skipped.json; "": none skipped, or no sweep said)."""
    reasons = read_skipped(view.results, view.site).get(section, {})
    return "; ".join(f"{n} point{'s' if n > 1 else ''}: {r}" for r, n in reasons.items())


def substitution_note(view: SiteView, section: str) -> str | None:
    """What the section ran over in place of its grid's protocols, where the site offers none
    of them (records' ``substitutes``; None: it ran over its own)."""
    rows = view.rows(section, ok_only=False) if section in view.sections else pd.DataFrame()
    if rows.empty or "substitutes" not in rows.columns:
        return None
    instead = rows.dropna(subset=["substitutes"])
    if instead.empty:
        return None
    counts = instead.groupby(["substitutes", "protocol"])["point_key"].nunique()
    said = [f"over {protocol} in place of {grid} ({n} points)"
            for (grid, protocol), n in counts.items()]  # fmt: skip
    return (f"On {view.site} this section ran {'; '.join(said)}: the site offers none of the "
            "protocols its grid names, so it runs over its most direct one.")  # fmt: skip


# --- layout -------------------------------------------------------------------------------


def access_map(
    view: SiteView, data: str | Path, layouts: tuple[str, ...] = ("unordered", "ordered")
) -> None:
    """File offset against read order for the generated files (the seeds' access map)."""
    from instore.inspect.basketmap import basket_map, open_tree, read_order

    files = {lay: Path(data) / f"{lay}-r0.root" for lay in layouts}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        show.note(f"Access map skipped: {', '.join(missing)} not found.")
        return
    fig, axes = panels(len(files))
    for ax, (lay, path) in zip(axes, files.items(), strict=True):
        handle, tree = open_tree(str(path))
        with handle:
            order = read_order(basket_map(tree))
        ax.scatter(range(len(order)), order["offset"] / 1e6, s=2, rasterized=True)
        ax.set(title=lay, xlabel="read order (basket)", ylabel="file offset (MB)")
    show.figure(
        fig,
        "access_map",
        "Access map: where each basket sits against the order an entry-ordered job needs it.",
    )


def _fastest_read_s(view: SiteView, rows: pd.DataFrame) -> float | None:
    """The wall time the needed bytes take at the site's calibrated throughput."""
    rate = view.limits.throughput(str(rows["protocol"].mode().iloc[0]))
    return float(rows["bytes_needed"].median()) / (rate * 1e6) if rate else None


def layout_wall(view: SiteView) -> None:
    """Wall time and ROOT's disk time per layout, TTreeCache off and on."""
    if not has_runs(view, LAYOUT):
        return
    pts = _hue(view.points(LAYOUT), "cache", "protocol")
    fig, axes = panels(2)
    for ax, metric, label in (
        (axes[0], "wall_s", "wall time (s)"),
        (axes[1], "disk_s", "ROOT disk time (s)"),
    ):
        interval_bars(ax, pts, "layout", metric, "hue")
        ax.set(ylabel=label)
        ax.legend(title="cache", fontsize=8)
    limit_line(axes[0], _fastest_read_s(view, view.rows(LAYOUT)), "whole file at calibrated MB/s")
    show.figure(
        fig,
        "layout_wall",
        "Wall and disk time per layout, cache off and on (median per point; bars: the wall "
        "time's 95% interval).",
    )


def _hue(points: pd.DataFrame, hue: str, *more: str) -> pd.DataFrame:
    """``points`` with a ``hue`` column: ``hue``'s value, and each of ``more`` that varies."""
    varying = [c for c in more if points[c].nunique() > 1]
    labels = points[[hue, *varying]].astype(str).agg(", ".join, axis=1)
    return points.assign(hue=labels)


def layout_table(view: SiteView) -> None:
    points_table(view, LAYOUT)


# --- cache --------------------------------------------------------------------------------


def cache_reads(view: SiteView) -> None:
    """Read calls, bytes read and read rate against TTreeCache size (the seeds' figure)."""
    import seaborn as sns

    if not has_runs(view, CACHE):
        return
    rows = view.rows(CACHE)
    order = _cache_order(rows)
    dodge = 0.2 if rows["layout"].nunique() > 1 else False  # seaborn divides by levels - 1
    fig, axes = panels(3)
    specs = (
        ("read_calls", "read calls per job"),
        ("bytes_read", "bytes read"),
        ("read_rate_hz", "read calls / s"),
    )
    for ax, (metric, label) in zip(axes, specs, strict=True):
        sns.pointplot(data=rows, x="cache", y=metric, hue="layout", order=order, estimator="median",
                      errorbar=iqr(), ax=ax, dodge=dodge)  # fmt: skip
        ax.set(xlabel="TTreeCache", ylabel=label)
    axes[0].set_yscale("log")
    limit_line(axes[2], view.limits.read_iops, "calibrated IOPS")
    show.figure(
        fig, "cache_reads", "Read calls, bytes and read rate against TTreeCache size, per layout "
        "(median of the jobs; bars: their interquartile range)."
    )  # fmt: skip


def cache_table(view: SiteView) -> None:
    points_table(view, CACHE)


# --- protocols ----------------------------------------------------------------------------


def protocol_table(view: SiteView) -> None:
    """CPU efficiency per protocol and engine, the seeds' dcap/xroot table."""
    if not has_runs(view, PROTOCOLS):
        return
    pts = view.points(PROTOCOLS).sort_values(["protocol", "engine"])
    one_layout = ("layout",) if pts["layout"].nunique() == 1 else ()
    table = statistics_table(pts, PROTOCOLS, leave_out=one_layout)
    show.table(table, "CPU efficiency and throughput per protocol and engine (median per point, "
               "95% interval)", "protocol_table")  # fmt: skip


def protocol_efficiency(view: SiteView) -> None:
    if not has_runs(view, PROTOCOLS):
        return
    pts = _hue(view.points(PROTOCOLS), "engine", "layout")
    fig, axes = panels(2)
    interval_bars(axes[0], pts, "protocol", "cpu_efficiency", "hue")
    axes[0].set(ylabel="CPU efficiency", ylim=(0, 1.05))
    interval_bars(axes[1], pts, "protocol", "mb_per_s", "hue")
    axes[1].set(ylabel="MB/s")
    axes[0].legend(title="engine", fontsize=8)
    limits = {p: view.limits.throughput(p) for p in pts["protocol"].unique()}
    known = [v for v in limits.values() if v]
    limit_line(axes[1], max(known) if known else None, "calibrated MB/s")
    show.figure(fig, "protocol_efficiency", "CPU efficiency and throughput per protocol and "
                "engine (median per point; bars: 95% interval).")  # fmt: skip


# --- readahead ----------------------------------------------------------------------------


def readahead(view: SiteView) -> None:
    """Throughput, client bytes wasted and the disk's amplification against readahead size,
    full vs sparse reads: the client reads baskets exactly, the disk's readahead may not."""
    if not has_runs(view, READAHEAD):
        return
    pts = view.points(READAHEAD).dropna(subset=["readahead_kb"])
    pts = pts.assign(reads=pts["branches"].map(lambda b: "full" if b == "all" else f"sparse ({b})"),
                     block=pts["block_readahead_kb"].map(lambda v: "block n/a" if pd.isna(v) else f"block {v:g} KB"))  # fmt: skip
    shown = [("mb_per_s", "MB/s", 1.0), ("bytes_wasted", "KB the client read, not needed", 1e-3)]
    if pts["disk_amplification_median"].notna().any():
        shown.append(("disk_amplification", "disk bytes / bytes needed", 1.0))
    style = "block" if pts["block"].nunique() > 1 else None
    fig, axes = panels(len(shown))
    for ax, (metric, label, scale) in zip(axes, shown, strict=True):
        interval_lines(ax, pts, "readahead_kb", metric, "reads", style=style, scale=scale)
        ax.set(xscale="log", xlabel="readahead (KB)", ylabel=label)
    axes[-1].legend(fontsize=8)
    limit_line(axes[0], view.limits.throughput(POSIX), "calibrated MB/s")
    show.figure(
        fig,
        "readahead",
        "Throughput, bytes wasted by the client and what the disk read per byte needed, against "
        "readahead size, full and sparse reads (median per point; bars: the throughput's 95% "
        "interval).",
    )


def readahead_table(view: SiteView) -> None:
    points_table(view, READAHEAD)


# --- overview -----------------------------------------------------------------------------


def recommendations(view: SiteView) -> None:
    """The site's advice, each linked to its supporting figure."""
    import html

    recs = view.recommendations()
    if not recs:
        show.note("The results support no recommendation yet (too few successful points).")
        return
    items = "".join(
        f'<li>{html.escape(r["text"])} <a href="{html.escape(r["figure"])}">(evidence: {html.escape(r["section"])})</a></li>'
        for r in recs
    )
    show._display(f'<ol class="instore-recommendations">{items}</ol>')


def section_links(view: SiteView) -> None:
    import html

    items = "".join(
        f'<li><a href="{s.name}.html">{html.escape(s.title)}</a></li>'
        for s in REGISTRY.values()
        if s.name in view.sections
    )
    if (view.results / view.site / PROFILE_FILE).is_file():  # the pipeline's What-if page
        items += (f'<li><a href="{WHATIF_PAGE}.html">What if: each recorded analysis predicted '
                  "here with the site's fitted profile</a></li>")  # fmt: skip
    show._display(f"<ul>{items}</ul>")


def overview_table(view: SiteView) -> None:
    """Runs per section: points, jobs, failures, and the range of CPU efficiency seen."""
    stats = view.stats
    table = stats.groupby("section").agg(**{
        "points": ("jobs_ok", "size"), "jobs ok": ("jobs_ok", "sum"),
        "jobs failed": ("jobs_failed", "sum"), "retries": ("retries", "sum"),
        "lowest CPU efficiency of a point (median)": ("cpu_efficiency_median", "min"),
        "highest CPU efficiency of a point (median)": ("cpu_efficiency_median", "max"),
    })  # fmt: skip
    show.table(table.reset_index(), "Runs per section (each point's median CPU efficiency, its "
               "interval on the section's page)", percent=tuple(table.columns[-2:]))  # fmt: skip


def conditions_table(view: SiteView) -> None:
    """The conditions and calibrated limits the results were measured under: a short table,
    the full record in a collapsed block."""
    show._display(
        "<p><b>Conditions recorded with the runs</b></p>"
        + conditions_html(*view.conditions_by_section())
    )
