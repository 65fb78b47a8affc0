"""The cross-site page and the explorer: all sites' results side by side.

The comparison is the HEPiX storage group's table: the same work (one access pattern, one
file) run on each storage setup, one row per setup, so setups differ only in the storage. It
reads the sites' summaries (``instore summarize``), so every number is the one the site's own
report shows; only the explorer reads the job rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from instore.errors import InstoreError
from instore.report import show
from instore.report.plots import iqr, panels
from instore.summary.command import summary_path
from instore.summary.load import read_study
from instore.summary.stats import cache_label, with_derived

SETUP_COLUMNS = {
    "site": "site", "site_profile": "storage", "protocol": "protocol", "jobs_ok": "jobs", "jobs_failed": "failed",
    "cpu_efficiency_median": "CPU eff.", "event_rate_hz_median": "events/s",
    "mb_per_s_median": "MB/s", "read_calls_median": "read calls", "wall_s_median": "wall (s)",
    "open_s_median": "open (s)", "retries": "retries",
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
    part = stats[(stats["section"] == "protocols") & (stats["engine"] == "root")]
    return part if len(part) else stats[stats["section"] == "protocols"]


def setups_table(stats: pd.DataFrame) -> pd.DataFrame:
    """One row per site and protocol on the same work, best CPU efficiency first."""
    work = same_work(stats)
    if "site_profile" not in work:
        work = work.assign(site_profile=None)
    work = work.assign(site_profile=work["site_profile"].fillna("?"))
    measured = work[work["jobs_ok"] > 0]
    grouped = measured.groupby(KEYS, as_index=False).median(numeric_only=True)
    counts = work.groupby(KEYS, as_index=False)[COUNTS].sum()
    grouped = grouped.drop(columns=COUNTS).merge(counts, on=KEYS)
    table = grouped[list(SETUP_COLUMNS)].rename(columns=SETUP_COLUMNS)
    return table.sort_values("CPU eff.", ascending=False).reset_index(drop=True)


def setups(stats: pd.DataFrame) -> None:
    show.heading(f"Storage setups compared: {', '.join(sorted(stats['site'].unique()))}", 1)
    if same_work(stats).empty:
        show.note("No site has protocol records yet, so there is nothing to compare.")
        return
    show.table(setups_table(stats), "Storage setups on the same work (protocols section, ROOT engine)",
               percent=("CPU eff.",))  # fmt: skip


def _bars(ax: object, work: pd.DataFrame, metric: str) -> list[str]:
    """Median bars per protocol, one per site, with the interquartile range; returns sites."""
    cols = [f"{metric}_median", f"{metric}_q25", f"{metric}_q75"]
    table = work.groupby(["protocol", "site"])[cols].median()
    protocols, sites = sorted(work["protocol"].unique()), sorted(work["site"].unique())
    width = 0.8 / len(sites)
    for i, site in enumerate(sites):
        vals = table.reindex([(p, site) for p in protocols]).to_numpy()
        med, low, high = vals[:, 0], vals[:, 1], vals[:, 2]
        x = np.arange(len(protocols)) + (i - (len(sites) - 1) / 2) * width
        ax.bar(x, med, width, yerr=[med - low, high - med], capsize=3, label=site)
    ax.set_xticks(np.arange(len(protocols)), protocols)
    return sites


def setups_figure(stats: pd.DataFrame) -> None:
    """CPU efficiency and event rate per protocol and site; the legend sits under the panels,
    never over a bar."""
    work = same_work(stats)
    work = work[work["jobs_ok"] > 0]
    if work.empty:
        return
    fig, axes = panels(2, width=6)
    for ax, metric, label in (
        (axes[0], "cpu_efficiency", "CPU efficiency"),
        (axes[1], "event_rate_hz", "events/s per job"),
    ):
        sites = _bars(ax, work, metric)
        ax.set(xlabel="protocol", ylabel=label)
    axes[0].set_ylim(0, 1.05)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, title="site", loc="upper center", ncol=min(len(sites), 4),
               bbox_to_anchor=(0.5, 0.0), frameon=False)  # fmt: skip
    show.figure(
        fig, "compare", "The same work on every site: CPU efficiency and event rate per protocol "
        "(median over points, bars: interquartile range)."
    )  # fmt: skip


def jobfill_compare(stats: pd.DataFrame) -> None:
    part = stats[stats["section"] == "jobfill"]
    if part.empty:
        return
    table = part.pivot_table(
        index=["cpu_us", "fill"], columns="site", values="cpu_efficiency_median", aggfunc="min"
    )
    table.columns.name = None
    show.table(table.reset_index(), "Worst per-job CPU efficiency per CPU per event (us) and jobs per node, by site",
               percent=tuple(table.columns))  # fmt: skip


def _by_site(stats: pd.DataFrame, section: str, index: list[str]) -> pd.DataFrame | None:
    """The section's median CPU efficiency per ``index``, one column per site."""
    part = stats[stats["section"] == section]
    if part.empty:
        return None
    part = part.assign(**{c: part[c].fillna("") for c in index})  # a key left unset is blank
    table = part.pivot_table(index=index, columns="site", values="cpu_efficiency_median",
                             aggfunc="median")  # fmt: skip
    table.columns.name = None
    return table


def replay_compare(stats: pd.DataFrame) -> None:
    """Each recorded analysis's predicted CPU efficiency per protocol, by site."""
    table = _by_site(stats, "replay", ["trace", "protocol", "cache_state"])
    if table is not None:
        show.table(table.reset_index(), "A recorded analysis's predicted CPU efficiency, by "
                   "site", "replay_compare", percent=tuple(table.columns))  # fmt: skip


def load_compare(stats: pd.DataFrame) -> None:
    """The clients' median predicted CPU efficiency per protocol and load, by site."""
    table = _by_site(stats, "load", ["protocol", "fill"])
    if table is not None:
        show.table(table.reset_index().rename(columns={"fill": "clients"}),
                   "Many clients at once: the clients' median predicted CPU efficiency, by site "
                   "(each site's load page names what saturated)", "load_compare",
                   percent=tuple(table.columns))  # fmt: skip


def best_and_worst(stats: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """A site's best and worst setup on the same work (by median CPU efficiency)."""
    table = setups_table(stats)
    table = table.dropna(subset=["CPU eff."])
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


def format_table(stats: pd.DataFrame) -> pd.DataFrame:
    """TTree against RNTuple per site and protocol: each format's best median wall time (over
    its cache settings; ROOT engine where measured) and how many times faster RNTuple is."""
    from instore.summary.recommend import format_name

    part = stats[(stats["section"] == "format") & (stats["jobs_ok"] > 0)]
    root = part[part["engine"] == "root"]
    part = root if len(root) else part
    part = part.assign(format=part["layout"].map(format_name))
    wall = part.pivot_table(index=["site", "protocol"], columns="format", values="wall_s_median",
                            aggfunc="min")  # fmt: skip
    if not {"TTree", "RNTuple"} <= set(wall.columns):
        return pd.DataFrame(columns=["site", "protocol", "TTree wall (s)", "RNTuple wall (s)",
                                     "RNTuple speed-up"])  # fmt: skip
    table = pd.DataFrame(
        {
            "TTree wall (s)": wall["TTree"],
            "RNTuple wall (s)": wall["RNTuple"],
            "RNTuple speed-up": wall["TTree"] / wall["RNTuple"],
        }
    )
    return table.reset_index()


def format_compare(stats: pd.DataFrame) -> None:
    """The format table across sites (nothing when no site ran the format section)."""
    table = format_table(stats)
    if table.empty:
        return
    show.table(table, "TTree against RNTuple per site and protocol (best cache setting of each, "
               "ROOT engine; speed-up above 1: RNTuple is faster)", "format_compare")  # fmt: skip
