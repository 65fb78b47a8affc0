"""The cross-site page and the explorer: all sites' records side by side.

The comparison is the HEPiX storage group's table: the same work (one access pattern, one
file) run on each storage setup, one row per setup, so setups differ only in the storage.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from instore.report import show
from instore.report.plots import iqr, panels
from instore.summary.load import read_study
from instore.summary.stats import cache_label, point_stats, with_derived

SETUP_COLUMNS = {
    "site": "site", "site_profile": "storage", "protocol": "protocol", "jobs_ok": "jobs", "jobs_failed": "failed",
    "cpu_efficiency_median": "CPU eff.", "event_rate_hz_median": "events/s",
    "mb_per_s_median": "MB/s", "read_calls_median": "read calls", "wall_s_median": "wall (s)",
    "open_s_median": "open (s)", "retries": "retries",
}  # fmt: skip
COUNTS = ["jobs_ok", "jobs_failed", "retries"]


def load_all(results: str | Path, sites: list[str] | None = None) -> pd.DataFrame:
    """Every job row of the named sites (default: every site directory with records)."""
    root = Path(results)
    names = sites or sorted(p.parent.name for p in root.glob("*/*.parquet") if p.stem != "summary")
    rows = with_derived(read_study(root, sorted(set(names))))
    rows["cache"] = rows["cache_mb"].map(cache_label)
    return rows


def same_work(rows: pd.DataFrame) -> pd.DataFrame:
    """The protocols section's ROOT-engine rows: the one workload every site ran."""
    part = rows[(rows["section"] == "protocols") & (rows["engine"] == "root")]
    return part if len(part) else rows[rows["section"] == "protocols"]


def setups_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per site and protocol on the same work, best CPU efficiency first."""
    work = same_work(rows)
    stats = point_stats(work)
    profiles = work.groupby("site")["site_profile"].first()
    stats["site_profile"] = stats["site"].map(profiles)
    keys = ["site", "site_profile", "protocol"]
    measured = stats[stats["jobs_ok"] > 0]
    grouped = measured.groupby(keys, as_index=False).median(numeric_only=True)
    counts = stats.groupby(keys, as_index=False)[COUNTS].sum()
    grouped = grouped.drop(columns=COUNTS).merge(counts, on=keys)
    table = grouped[list(SETUP_COLUMNS)].rename(columns=SETUP_COLUMNS)
    return table.sort_values("CPU eff.", ascending=False).reset_index(drop=True)


def setups(rows: pd.DataFrame) -> None:
    show.heading(f"Storage setups compared: {', '.join(sorted(rows['site'].unique()))}", 1)
    if same_work(rows).empty:
        show.note("No site has protocol records yet, so there is nothing to compare.")
        return
    show.table(setups_table(rows), "Storage setups on the same work (protocols section, ROOT engine)",
               percent=("CPU eff.",))  # fmt: skip


def setups_figure(rows: pd.DataFrame) -> None:
    import seaborn as sns

    work = same_work(rows)
    work = work[work["status"] == "ok"]
    if work.empty:
        return
    fig, axes = panels(2, width=6)
    for ax, metric, label in (
        (axes[0], "cpu_efficiency", "CPU efficiency"),
        (axes[1], "event_rate_hz", "events/s per job"),
    ):
        sns.barplot(
            data=work, x="protocol", y=metric, hue="site", estimator="median", errorbar=iqr(), ax=ax
        )
        ax.set(ylabel=label)
    show.figure(
        fig, "compare", "The same work on every site: CPU efficiency and event rate per protocol."
    )


def jobfill_compare(rows: pd.DataFrame) -> None:
    part = rows[rows["section"] == "jobfill"]
    if part.empty:
        return
    stats = point_stats(part)
    table = stats.pivot_table(
        index=["cpu_us", "fill"], columns="site", values="cpu_efficiency_median", aggfunc="min"
    )
    table.columns.name = None
    show.table(table.reset_index(), "Worst per-job CPU efficiency per CPU per event (us) and jobs per node, by site",
               percent=tuple(table.columns))  # fmt: skip


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

    def draw(site: tuple[str, ...], section: str, x: str, y: str, hue: str) -> None:
        part = rows[
            rows["site"].isin(site) & (rows["section"] == section) & (rows["status"] == "ok")
        ]
        if part.empty:
            print("no successful rows for this selection")
            return
        _fig, ax = plt.subplots(figsize=(8, 4))
        sns.barplot(
            data=part.astype({x: str}), x=x, y=y, hue=hue, estimator="median", errorbar=iqr(), ax=ax
        )
        plt.show()

    return w.interactive(draw, site=site, section=section, x=x, y=y, hue=hue)
