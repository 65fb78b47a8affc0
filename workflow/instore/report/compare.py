"""The cross-site page and the explorer: all sites' results side by side.

The comparison is the HEPiX storage group's table: the same work (one access pattern, one
file) run on each storage setup, one row per setup, so setups differ only in the storage. It
reads the sites' summaries (``instore summarize``), so every number is the one the site's own
report shows, with its 95% interval; only the explorer reads the job rows (and shows their
interquartile range: it explores jobs, not points).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from instore.errors import InstoreError
from instore.payload.specs import compared_points
from instore.report import intervals, show
from instore.report.plots import interval_bars, iqr, panels
from instore.summary.command import summary_path
from instore.summary.interval import ratio_interval
from instore.summary.load import read_study
from instore.summary.sections.format import NAME as FORMAT
from instore.summary.sections.jobfill import NAME as JOBFILL
from instore.summary.sections.load import NAME as LOAD
from instore.summary.sections.protocols import NAME as PROTOCOLS
from instore.summary.sections.replay import NAME as REPLAY
from instore.summary.stats import INTERVAL_METRICS, cache_label, with_derived

SETUP_COLUMNS = {
    "site": "site", "site_profile": "storage", "protocol": "protocol",
    "cpu_efficiency_median": "CPU efficiency", "event_rate_hz_median": "events/s per job",
    "mb_per_s_median": "MB/s per job", "wall_s_median": "wall time (s)",
    "read_calls_median": "read calls (median)", "open_s_median": "open time (s, median)",
    "jobs_ok": "jobs", "jobs_failed": "failed", "retries": "retries",
}  # fmt: skip
COUNTS = ["jobs_ok", "jobs_failed", "retries"]
KEYS = ["site", "site_profile", "protocol"]


def _site_names(root: Path, sites: list[str] | None, pattern: str) -> list[str]:
    """The named sites, or every site directory holding ``pattern``."""
    return sorted(set(sites or (p.parent.name for p in root.glob(pattern))))


def load_all(results: str | Path, sites: list[str] | None = None) -> pd.DataFrame:
    """Every job row of the named sites (default: every site directory with records)."""
    root = Path(results)
    names = _site_names(root, sites, "*/*.parquet")
    rows = with_derived(read_study(root, names))
    rows["cache"] = rows["cache_mb"].map(cache_label)
    return rows


def load_summaries(results: str | Path, sites: list[str] | None = None) -> pd.DataFrame:
    """The point summaries of the named sites (default: every site that has one)."""
    root = Path(results)
    names = _site_names(root, sites, "*/summary.parquet")
    missing = [s for s in names if not summary_path(root, s).is_file()]
    if missing or not names:
        raise InstoreError(
            f"{root}: no summary for site(s) {', '.join(missing) or '(none found)'}",
            "run instore summarize --site SITE for each site",
        )
    frames = [pd.read_parquet(summary_path(root, s)) for s in names]
    return pd.concat(frames, ignore_index=True)


def same_work(stats: pd.DataFrame) -> pd.DataFrame:
    """The protocols section's ROOT-engine points: the one workload every site ran."""
    return compared_points(stats[stats["section"] == PROTOCOLS])


def setups_points(stats: pd.DataFrame) -> pd.DataFrame:
    """One row per site and protocol on the same work, best CPU efficiency first: each figure
    the median of its points' measurements with its 95% interval, the counts summed."""
    work = same_work(stats)
    if "site_profile" not in work:
        work = work.assign(site_profile=None)
    work = work.assign(site_profile=work["site_profile"].fillna("?"))
    out = []
    for key, group in work.groupby(KEYS):
        measured = group[group["jobs_ok"] > 0]
        if measured.empty:
            continue
        row = {**dict(zip(KEYS, key, strict=True)), **group[COUNTS].sum().to_dict()}
        for metric in INTERVAL_METRICS:
            row.update(intervals.pooled(measured, metric))
        row.update(measured[["read_calls_median", "open_s_median"]].median().to_dict())
        out.append(row)
    table = pd.DataFrame(out)
    if table.empty:
        return pd.DataFrame(columns=[*KEYS, "cpu_efficiency_median"])
    return table.sort_values("cpu_efficiency_median", ascending=False).reset_index(drop=True)


def setups_table(stats: pd.DataFrame) -> pd.DataFrame:
    """``setups_points`` in words, each figure ``median [low, high]``."""
    return intervals.table(setups_points(stats), SETUP_COLUMNS, ("cpu_efficiency_median",))


def setups(stats: pd.DataFrame) -> None:
    show.heading(f"Storage setups compared: {', '.join(sorted(stats['site'].unique()))}", 1)
    if same_work(stats).empty:
        show.note("No site has protocol records yet, so there is nothing to compare.")
        return
    intervals.note()
    show.table(setups_table(stats), "Storage setups on the same work (protocols section, ROOT "
               "engine; median with its 95% interval)")  # fmt: skip


def setups_figure(stats: pd.DataFrame) -> None:
    """CPU efficiency and event rate per protocol and site; the legend sits under the panels,
    never over a bar."""
    work = setups_points(stats)
    if work.empty:
        return
    protocols, sites = sorted(work["protocol"].unique()), sorted(work["site"].unique())
    fig, axes = panels(2, width=6)
    for ax, metric, label in (
        (axes[0], "cpu_efficiency", "CPU efficiency"),
        (axes[1], "event_rate_hz", "events/s per job"),
    ):
        interval_bars(ax, work, "protocol", metric, "site", order=protocols, hue_order=sites)
        ax.set(xlabel="protocol", ylabel=label)
    axes[0].set_ylim(0, 1.05)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, title="site", loc="upper center", ncol=min(len(sites), 4),
               bbox_to_anchor=(0.5, 0.0), frameon=False)  # fmt: skip
    show.figure(
        fig, "compare", "The same work on every site: CPU efficiency and event rate per protocol "
        "(median, bars: 95% interval)."
    )  # fmt: skip


def _by_site(
    stats: pd.DataFrame, section: str, index: list[str], worst: bool = False
) -> pd.DataFrame | None:
    """The section's CPU efficiency per ``index``, one column per site, each cell ``median
    [low, high]``: of the cell's points together, or (``worst``) of its lowest point."""
    part = stats[(stats["section"] == section) & (stats["jobs_ok"] > 0)]
    if part.empty:
        return None
    part = part.assign(**{c: part[c].fillna("") for c in index})  # a key left unset is blank
    cells = []
    for key, group in part.groupby([*index, "site"]):
        if worst:
            group = group.nsmallest(1, "cpu_efficiency_median")
        figure = pd.Series(intervals.pooled(group, "cpu_efficiency"))
        text = intervals.text(intervals.of(figure, "cpu_efficiency"), percent=True)
        cells.append({**dict(zip([*index, "site"], key, strict=True)), "cell": text})
    table = pd.DataFrame(cells).pivot(index=index, columns="site", values="cell").fillna("")
    table.columns.name = None
    return table.reset_index()


def jobfill_compare(stats: pd.DataFrame) -> None:
    table = _by_site(stats, JOBFILL, ["cpu_us", "fill"], worst=True)
    if table is not None:
        table = table.rename(columns={"cpu_us": "CPU per event (us)", "fill": "jobs per node"})
        show.table(table, "Worst per-job CPU efficiency (the lowest point's median, 95% "
                   "interval) per CPU per event and jobs per node, by site")  # fmt: skip


def replay_compare(stats: pd.DataFrame) -> None:
    """Each recorded analysis's predicted CPU efficiency per protocol, by site."""
    table = _by_site(stats, REPLAY, ["trace", "protocol", "cache_state"])
    if table is not None:
        show.table(table.rename(columns={"cache_state": "XCache"}), "A recorded analysis's "
                   "predicted CPU efficiency (median, 95% interval), by site", "replay_compare")  # fmt: skip


def load_compare(stats: pd.DataFrame) -> None:
    """The clients' median predicted CPU efficiency per protocol and load, by site."""
    table = _by_site(stats, LOAD, ["protocol", "fill"])
    if table is not None:
        show.table(table.rename(columns={"fill": "clients"}), "Many clients at once: the "
                   "clients' median predicted CPU efficiency (95% interval over runs and "
                   "clients), by site (each site's load page names what saturated)",
                   "load_compare")  # fmt: skip


def best_and_worst(stats: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """A site's best and worst setup on the same work (by median CPU efficiency), as rows of
    ``setups_points``."""
    table = setups_points(stats)
    table = table.dropna(subset=["cpu_efficiency_median"])
    if table.empty:
        return None
    return table.iloc[0], table.iloc[-1]


def explorer(rows: pd.DataFrame) -> object:
    """Widgets over site, section and knobs; the plot follows the selection."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    import seaborn as sns

    numeric = [
        "wall_s",
        "cpu_efficiency",
        "event_rate_hz",
        "mb_per_s",
        "read_calls",
        "bytes_read",
        "read_amplification",
    ]
    knobs = ["layout", "protocol", "engine", "cache", "readahead_kb", "branches", "fill"]
    site = w.SelectMultiple(
        options=sorted(rows["site"].unique()),
        value=tuple(sorted(rows["site"].unique())),
        description="site",
    )
    section = w.Dropdown(options=sorted(rows["section"].unique()), description="section")
    x = w.Dropdown(options=knobs, value="protocol", description="x")
    y = w.Dropdown(options=numeric, value="cpu_efficiency", description="y")
    hue = w.Dropdown(options=["site", *knobs], value="site", description="hue")

    def draw(site: tuple[str, ...], section: str, x: str, y: str, hue: str) -> object | None:
        """Plot the selection; the figure is also the widget's ``result`` (None: nothing)."""
        part = rows[
            rows["site"].isin(site) & (rows["section"] == section) & (rows["status"] == "ok")
        ]
        if part.empty:
            print("no successful rows for this selection")
            return None
        fig, ax = plt.subplots(figsize=(8, 4))
        sns.barplot(
            data=part.astype({x: str}), x=x, y=y, hue=hue, estimator="median", errorbar=iqr(), ax=ax
        )
        plt.show()
        return fig

    return w.interactive(draw, site=site, section=section, x=x, y=y, hue=hue)


def _fastest(part: pd.DataFrame) -> pd.DataFrame:
    """Per site and protocol the point with the shortest median wall."""
    return part.sort_values("wall_s_median").drop_duplicates(["site", "protocol"])


def format_table(stats: pd.DataFrame) -> pd.DataFrame:
    """TTree against RNTuple per site and protocol: each format's best median wall time (over
    its cache settings; ROOT engine where measured) with its interval, and how many times
    faster RNTuple is (``speedup``, with the ratio's interval)."""
    from instore.summary.sections.format import format_name

    part = compared_points(stats[(stats["section"] == FORMAT) & (stats["jobs_ok"] > 0)])
    part = part.assign(format=part["layout"].map(format_name)).dropna(subset=["wall_s_median"])
    keys = ["site", "protocol"]
    tree = _fastest(part[part["format"] == "TTree"]).set_index(keys)
    rnt = _fastest(part[part["format"] == "RNTuple"]).set_index(keys)
    out = []
    for key in tree.index.intersection(rnt.index):
        row: dict[str, object] = dict(zip(keys, key, strict=True))
        for name, point in (("ttree", tree.loc[key]), ("rntuple", rnt.loc[key])):
            for suffix in ("median", "lo", "hi", "n", "basis"):
                row[f"{name}_wall_s_{suffix}"] = point.get(f"wall_s_{suffix}")
        ratio = ratio_interval(intervals.runs(tree.loc[key], "wall_s"),
                               intervals.runs(rnt.loc[key], "wall_s"))  # fmt: skip
        row.update(speedup=ratio.value, speedup_lo=ratio.lo, speedup_hi=ratio.hi,
                   speedup_n=ratio.n_a + ratio.n_b)  # fmt: skip
        row["speedup_basis"] = row["ttree_wall_s_basis"] if ratio.has_interval else None
        out.append(row)
    if not out:
        return pd.DataFrame(columns=[*keys, "ttree_wall_s_median", "rntuple_wall_s_median",
                                     "speedup"])  # fmt: skip
    return pd.DataFrame(out)


def format_compare(stats: pd.DataFrame) -> None:
    """The format table across sites (nothing when no site ran the format section)."""
    table = format_table(stats)
    if table.empty:
        return
    cols = {"site": "site", "protocol": "protocol", "ttree_wall_s_median": "TTree wall time (s)",
            "rntuple_wall_s_median": "RNTuple wall time (s)",
            "speedup": "RNTuple speed-up (TTree wall / RNTuple wall)"}  # fmt: skip
    show.table(intervals.table(table, cols, ratios=("speedup",)), "TTree against RNTuple per "
               "site and protocol (best cache setting of each, ROOT engine; speed-up above 1: "
               "RNTuple is faster)", "format_compare")  # fmt: skip
