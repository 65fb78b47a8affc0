"""The scale section: how the seeds' effects grow with file size, on NanoAOD-like files.

The effects are ratios of median wall times measured in one sweep, at each file set's size:

- ordering: the unordered TTree against the ordered one, both without a cache;
- TTreeCache: the ordered TTree without a cache against with ROOT's default one;
- cluster cache: the RNTuple without its cluster cache against with it;
- headline: unordered without a cache against ordered with one (the seeds' "12x");
- read amplification: what the site's disk read over what the jobs needed (block and client
  readahead on a sparse read), for the ordered TTree without a cache.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from instore.report import show
from instore.report.plots import panel_per
from instore.report.sections import _has
from instore.report.view import SiteView
from instore.summary.stats import cache_label

SECTION = "scale"
# (effect, (layout, cache) slower, (layout, cache) faster)
EFFECTS: tuple[tuple[str, tuple[str, str], tuple[str, str]], ...] = (
    ("ordering (no cache)", ("unordered", "off"), ("ordered", "off")),
    ("TTreeCache", ("ordered", "off"), ("ordered", "default")),
    ("RNTuple cluster cache", ("rntuple", "off"), ("rntuple", "default")),
    ("unordered, no cache / ordered, cache", ("unordered", "off"), ("ordered", "default")),
)
SETUP = ["fileset", "protocol", "branches", "engine"]


def medians(rows: pd.DataFrame) -> pd.DataFrame:
    """Median wall time, disk amplification and file size per setup, layout and cache."""
    rows = rows.assign(
        cache=rows["cache_mb"].map(cache_label), fileset=rows["fileset"].fillna("default")
    )
    keys = [*SETUP, "layout", "cache"]
    return (
        rows.groupby(keys, dropna=False)
        .agg(
            wall_s=("wall_s", "median"),
            file_mb=("file_size", lambda s: s.median() / 1e6),
            disk_amplification=("disk_amplification", "median"),
            read_calls=("read_calls", "median"),
        )
        .reset_index()
    )


def effects(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per file set, protocol, pattern and engine: the size and each effect's ratio."""
    med = medians(rows)
    out = []
    for setup, group in med.groupby(SETUP, dropna=False):
        wall = {(r.layout, r.cache): r.wall_s for r in group.itertuples()}
        ordered = group[group["layout"] == "ordered"]
        row = dict(zip(SETUP, setup, strict=True))
        row["size_mb"] = (
            float(ordered["file_mb"].median()) if len(ordered) else float(group["file_mb"].max())
        )
        for name, slow, fast in EFFECTS:
            row[name] = (
                wall[slow] / wall[fast]
                if slow in wall and fast in wall and wall[fast] > 0
                else np.nan
            )
        off = ordered[ordered["cache"] == "off"]["disk_amplification"]
        row["read amplification (ordered, no cache)"] = float(off.median()) if len(off) else np.nan
        out.append(row)
    return pd.DataFrame(out).sort_values(["protocol", "branches", "size_mb"]).reset_index(drop=True)


def scale_effects(view: SiteView) -> None:
    """Each effect against file size, one panel per protocol."""
    if not _has(view, SECTION):
        return
    table = effects(view.rows(SECTION))
    fig, per_protocol = panel_per(table, "protocol", width=5.5)
    for ax, protocol, part in per_protocol:
        for name, *_ in EFFECTS:
            if part[name].notna().any():
                ax.plot(part["size_mb"], part[name], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("file size (MB, ordered TTree)")
        ax.set_ylabel("slower / faster wall time")
        ax.set_title(protocol)
        ax.legend(fontsize=7)
    show.figure(fig, "scale_effects", "How each effect grows with file size: the ratio of median "
                "wall times (above 1: the first setup is that many times slower).")  # fmt: skip


def scale_table(view: SiteView) -> None:
    if not _has(view, SECTION):
        return
    table = effects(view.rows(SECTION))
    show.table(table, "Effects per file size (ratios of median wall times)", "scale_table")
    med = medians(view.rows(SECTION)).rename(columns={"wall_s": "wall (s)", "file_mb": "file MB"})
    show.table(med, "Median per setup, layout and cache", "scale_points")
