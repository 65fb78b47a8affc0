"""One function per figure or table of the study sections; the notebooks call these.

Every value shown comes from the site's Parquet rows or its point summary; plots show the
median with the interquartile range, the same statistics the tables print.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from instore.report import show
from instore.report.conditions import conditions_html
from instore.report.plots import iqr, limit_line, panels
from instore.report.view import SiteView
from instore.study import SECTIONS

TITLES = {
    "layout": "File layout",
    "cache": "TTreeCache size",
    "protocols": "Protocols",
    "readahead": "Readahead and buffer size",
    "jobfill": "Jobs per node",
    "format": "File format: TTree and RNTuple",
    "caching": "Site cache and round-trip time",
    "scale": "File size: NanoAOD-like files from 16 MB to 1 GB",
    "replay": "Real analyses, recorded once and replayed here",
    "load": "Many clients at once: which resource gives out first",
    "scheduler": "The disk's I/O scheduler under load",
    "filesystem": "The disk's file system under load: ext4 and xfs",
}


def _has(view: SiteView, section: str) -> bool:
    """True when the section has successful rows; otherwise say so on the page."""
    if section in view.sections and len(view.points(section)):
        return True
    offered = view.conditions().get("protocols")
    why = (
        f" (it offers {', '.join(offered)}; points over other protocols are skipped)"
        if offered
        else ""
    )
    show.note(f"No successful runs were recorded for {section} on {view.site}{why}.")
    return False


def _cache_order(rows: pd.DataFrame) -> list[str]:
    """Cache labels from smallest to largest effective cache."""
    size = rows.groupby("cache")["cache_bytes_effective"].median().sort_values()
    return list(size.index)


def points_table(
    view: SiteView, section: str, columns: dict[str, str], percent: tuple[str, ...] = ()
) -> None:
    """The section's per-point medians under readable column names."""
    if not _has(view, section):
        return
    pts = view.points(section)
    show.table(pts[list(columns)].rename(columns=columns), "Per point medians", percent=percent)


def header(view: SiteView, section: str) -> None:
    show.heading(f"{view.site}: {TITLES.get(section, section)}", 1)
    cond = view.conditions()
    described = str(cond.get("description") or view.site).rstrip(". ")
    show.note(f"{described}. {view.limits.describe()}.")


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
    if not _has(view, "layout"):
        return
    rows = view.rows("layout")
    fig, axes = panels(2)
    for ax, metric, label in (
        (axes[0], "wall_s", "wall time (s)"),
        (axes[1], "disk_s", "ROOT disk time (s)"),
    ):
        sns_bar(ax, rows, "layout", metric, "cache")
        ax.set(ylabel=label)
    limit_line(axes[0], _fastest_read_s(view, rows), "whole file at calibrated MB/s")
    show.figure(
        fig,
        "layout_wall",
        "Wall and disk time per layout, cache off and on (median, bars: interquartile range).",
    )


def layout_table(view: SiteView) -> None:
    cols = {"layout": "layout", "cache": "cache", "protocol": "protocol", "wall_s_median": "wall (s)",
            "read_calls_median": "read calls", "cpu_efficiency_median": "CPU eff.",
            "jobs_ok": "jobs", "jobs_failed": "failed"}  # fmt: skip
    points_table(view, "layout", cols, ("CPU eff.",))


def sns_bar(ax: object, rows: pd.DataFrame, x: str, y: str, hue: str | None) -> None:
    import seaborn as sns

    sns.barplot(data=rows, x=x, y=y, hue=hue, estimator="median", errorbar=iqr(), ax=ax)


# --- cache --------------------------------------------------------------------------------


def cache_reads(view: SiteView) -> None:
    """Read calls, bytes read and read rate against TTreeCache size (the seeds' figure)."""
    import seaborn as sns

    if not _has(view, "cache"):
        return
    rows = view.rows("cache")
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
        fig, "cache_reads", "Read calls, bytes and read rate against TTreeCache size, per layout."
    )


def cache_table(view: SiteView) -> None:
    cols = {"layout": "layout", "protocol": "protocol", "cache": "cache",
            "cache_bytes_effective_median": "cache bytes", "read_calls_median": "read calls",
            "bytes_read_median": "bytes read", "wall_s_median": "wall (s)",
            "read_rate_of_limit": "read rate / limit", "cpu_efficiency_median": "CPU eff."}  # fmt: skip
    points_table(view, "cache", cols, ("CPU eff.", "read rate / limit"))


# --- protocols ----------------------------------------------------------------------------


def protocol_table(view: SiteView) -> None:
    """CPU efficiency per protocol and engine, the seeds' dcap/xroot table."""
    if not _has(view, "protocols"):
        return
    pts = view.points("protocols")
    eff = pts.pivot_table(
        index="protocol", columns="engine", values="cpu_efficiency_median", aggfunc="median"
    )
    mbps = pts.groupby("protocol")[["mb_per_s_median", "mb_per_s_of_limit"]].median()
    table = eff.add_prefix("CPU eff. ").join(
        mbps.rename(columns={"mb_per_s_median": "MB/s", "mb_per_s_of_limit": "MB/s / limit"})
    )
    pct = (*tuple(c for c in table.columns if c.startswith("CPU eff.")), "MB/s / limit")
    show.table(
        table.reset_index(), "CPU efficiency per protocol (median over jobs)", "protocol_table", pct
    )


def protocol_efficiency(view: SiteView) -> None:
    if not _has(view, "protocols"):
        return
    rows = view.rows("protocols")
    fig, axes = panels(2)
    sns_bar(axes[0], rows, "protocol", "cpu_efficiency", "engine")
    axes[0].set(ylabel="CPU efficiency", ylim=(0, 1.05))
    sns_bar(axes[1], rows, "protocol", "mb_per_s", "engine")
    axes[1].set(ylabel="MB/s")
    limits = {p: view.limits.throughput(p) for p in rows["protocol"].unique()}
    known = [v for v in limits.values() if v]
    limit_line(axes[1], max(known) if known else None, "calibrated MB/s")
    show.figure(
        fig, "protocol_efficiency", "CPU efficiency and throughput per protocol and engine."
    )


# --- readahead ----------------------------------------------------------------------------


def readahead(view: SiteView) -> None:
    """Throughput, client bytes wasted and the disk's amplification against readahead size,
    full vs sparse reads: the client reads baskets exactly, the disk's readahead may not."""
    import seaborn as sns

    if not _has(view, "readahead"):
        return
    rows = view.rows("readahead").dropna(subset=["readahead_kb"])
    rows = rows.assign(reads=rows["branches"].map(lambda b: "full" if b == "all" else f"sparse ({b})"),
                       block=rows["block_readahead_kb"].map(lambda v: "n/a" if pd.isna(v) else f"{v:g} KB"))  # fmt: skip
    rows["kb_wasted"] = rows["bytes_wasted"] / 1e3
    shown = [("mb_per_s", "MB/s"), ("kb_wasted", "KB the client read, not needed")]
    if rows["disk_amplification"].notna().any():
        shown.append(("disk_amplification", "disk bytes / bytes needed"))
    fig, axes = panels(len(shown))
    for ax, (metric, label) in zip(axes, shown, strict=True):
        sns.lineplot(data=rows, x="readahead_kb", y=metric, hue="reads", style="block", estimator="median",
                     errorbar=iqr(), marker="o", ax=ax, legend=ax is axes[-1])  # fmt: skip
        ax.set(xscale="log", xlabel="readahead (KB)", ylabel=label)
    limit_line(axes[0], view.limits.throughput("posix"), "calibrated MB/s")
    show.figure(
        fig,
        "readahead",
        "Throughput, bytes wasted by the client and what the disk read per byte needed, against "
        "readahead size, full and sparse reads.",
    )


def readahead_table(view: SiteView) -> None:
    cols = {"branches": "branches", "readahead_kb": "readahead KB", "block_readahead_kb": "block KB",
            "mb_per_s_median": "MB/s", "mb_per_s_of_limit": "MB/s / limit", "wall_s_median": "wall (s)",
            "bytes_wasted_median": "bytes wasted", "read_amplification_median": "client ampl.",
            "disk_amplification_median": "disk ampl."}  # fmt: skip
    points_table(view, "readahead", cols, ("MB/s / limit",))


# --- jobfill ------------------------------------------------------------------------------


def jobfill_table(view: SiteView) -> None:
    """Per-job CPU efficiency and aggregate event rate per fill (the seeds' 1/2/8 jobs table)."""
    if not _has(view, "jobfill"):
        return
    pts = view.points("jobfill")
    keys = ["fill", "cpu_us", "cache", "layout", "protocol", "fixed_time_s"]
    cols = {"cpu_efficiency_median": "CPU eff. per job", "event_rate_hz_median": "events/s per job",
            "aggregate_event_rate_hz": "events/s all jobs", "event_rate_of_limit": "per job / limit",
            "wall_s_median": "wall (s)"}  # fmt: skip
    table = pts[keys + list(cols)].rename(columns=cols)
    show.table(table, "Jobs per node: efficiency per job, aggregate event rate", "jobfill_table",
               ("CPU eff. per job", "per job / limit"))  # fmt: skip


def _with_workload(frame: pd.DataFrame) -> pd.DataFrame:
    """A ``workload`` column naming what each job does: protocol and CPU per event."""
    labels = [
        f"{p}, {c:g} us CPU/event" for p, c in zip(frame["protocol"], frame["cpu_us"], strict=True)
    ]
    return frame.assign(workload=labels)


def jobfill(view: SiteView) -> None:
    import seaborn as sns

    if not _has(view, "jobfill"):
        return
    rows = _with_workload(view.rows("jobfill"))
    pts = _with_workload(view.points("jobfill"))
    fig, axes = panels(2)
    sns.boxplot(data=rows, x="fill", y="cpu_efficiency", hue="workload", ax=axes[0])
    axes[0].set(xlabel="concurrent jobs per node", ylabel="CPU efficiency per job", ylim=(0, 1.05))
    sns.lineplot(
        data=pts,
        x="fill",
        y="aggregate_event_rate_hz",
        hue="workload",
        style="cache",
        marker="o",
        ax=axes[1],
    )
    axes[1].set(xlabel="concurrent jobs per node", ylabel="events/s, all jobs")
    limit = pts["limit_event_rate_hz"].median()
    limit_line(axes[1], None if pd.isna(limit) else float(limit), "calibrated limit")
    show.figure(
        fig, "jobfill", "CPU efficiency per job and aggregate event rate against jobs per node."
    )


# --- caching ------------------------------------------------------------------------------


def _caching_points(view: SiteView) -> pd.DataFrame:
    """The caching section's point medians with the access method and read kind named."""
    from instore.summary.recommend import access_method

    pts = view.points("caching").dropna(subset=["rtt_ms"])
    methods = [
        access_method(p, c) for p, c in zip(pts["protocol"], pts["cache_state"], strict=True)
    ]
    reads = pts["branches"].map(lambda b: "full" if b == "all" else "sparse")
    return pts.assign(method=methods, reads=reads)


def caching(view: SiteView) -> None:
    """CPU efficiency and wall time against RTT per access method, full and sparse reads; the
    dotted lines mark where a warm XCache starts to beat direct reads."""
    import seaborn as sns

    from instore.summary.recommend import EFFICIENCY_FLOOR, break_even_ms, caching_curves

    if not _has(view, "caching"):
        return
    pts = _caching_points(view)
    curves = caching_curves(view.stats)
    fig, axes = panels(2)
    for ax, (metric, label) in zip(axes, (("cpu_efficiency_median", "CPU efficiency"),
                                          ("wall_s_median", "wall time (s)")), strict=True):  # fmt: skip
        sns.lineplot(data=pts, x="rtt_ms", y=metric, hue="method", style="reads", marker="o",
                     ax=ax, legend=ax is axes[-1])  # fmt: skip
        ax.set(xscale="log", xlabel="round-trip time (ms)", ylabel=label)
        rtts = sorted(pts["rtt_ms"].dropna().unique())
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
    if axes[-1].get_legend():
        axes[-1].get_legend().remove()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=4, bbox_to_anchor=(0.5, 0.0),
               fontsize=8, frameon=False)  # below the panels: it covers no line # fmt: skip
    show.figure(
        fig,
        "caching",
        "CPU efficiency and wall time against RTT per access method (median); dashed red: the "
        f"{EFFICIENCY_FLOOR:.0%} efficiency floor; grey: where a warm XCache beats direct reads.",
    )


def caching_table(view: SiteView) -> None:
    """Per point: the RTT asked and measured, and what crossed the link against what the
    jobs read (a warm cache's point moves next to nothing)."""
    if not _has(view, "caching"):
        return
    pts = _caching_points(view)
    cols = {"reads": "reads", "method": "method", "rtt_ms": "RTT (ms)",
            "rtt_ms_measured_median": "RTT measured", "wall_s_median": "wall (s)",
            "cpu_efficiency_median": "CPU eff.", "bytes_read_median": "bytes read per job",
            "link_bytes_read_median": "bytes over the link", "jobs_ok": "jobs"}  # fmt: skip
    table = pts[list(cols)].rename(columns=cols).sort_values(["reads", "method", "RTT (ms)"])
    show.table(table, "Access methods across RTTs (median per point)", percent=("CPU eff.",))


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
        f'<li><a href="{s}.html">{html.escape(TITLES[s])}</a></li>'
        for s in SECTIONS
        if s in view.sections
    )
    show._display(f"<ul>{items}</ul>")


def overview_table(view: SiteView) -> None:
    """Runs per section: points, jobs, failures, and the range of CPU efficiency seen."""
    stats = view.stats
    table = stats.groupby("section").agg(
        points=("jobs_ok", "size"), jobs_ok=("jobs_ok", "sum"), jobs_failed=("jobs_failed", "sum"),
        retries=("retries", "sum"),
        eff_min=("cpu_efficiency_median", "min"), eff_max=("cpu_efficiency_median", "max"),
    )  # fmt: skip
    show.table(table.reset_index(), "Runs per section", percent=("eff_min", "eff_max"))


def conditions_table(view: SiteView) -> None:
    """The conditions and calibrated limits the results were measured under: a short table,
    the full record in a collapsed block."""
    show._display(
        f"<p><b>Conditions recorded with the runs</b></p>{conditions_html(view.conditions())}"
    )
