"""The scale section: how the seeds' effects grow with file size, on NanoAOD-like files.

The effects are ratios of median wall times measured in one sweep, at each file set's size:

- ordering: the unordered TTree against the ordered one, both without a cache;
- TTreeCache: the ordered TTree without a cache against with ROOT's default one;
- cluster cache: the RNTuple without its cluster cache against with it;
- headline: unordered without a cache against ordered with one (the seeds' "12x");
- read amplification: what the site's disk read over what the jobs needed (block and client
  readahead on a sparse read), for the ordered TTree without a cache.

Each wall time is a median with its 95% interval over the point's repetitions (and jobs); each
effect, a ratio of two medians, has its own (``instore.summary.interval.ratio_interval``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from instore.report import intervals, show
from instore.report.plots import medians_and_errors, panel_per
from instore.report.sections import page_of, statistics_table
from instore.report.view import SiteView
from instore.summary.interval import ONE_MEASUREMENT, basis, ratio_interval
from instore.summary.sections.scale import NAME as SECTION
from instore.summary.stats import cache_label

# (effect, (layout, cache) slower, (layout, cache) faster)
EFFECTS: tuple[tuple[str, tuple[str, str], tuple[str, str]], ...] = (
    ("ordering (no cache)", ("unordered", "off"), ("ordered", "off")),
    ("TTreeCache", ("ordered", "off"), ("ordered", "default")),
    ("RNTuple cluster cache", ("rntuple", "off"), ("rntuple", "default")),
    ("unordered, no cache / ordered, cache", ("unordered", "off"), ("ordered", "default")),
)
SETUP = ["fileset", "protocol", "branches", "engine"]


def medians(rows: pd.DataFrame) -> pd.DataFrame:
    """Median wall time (with its 95% interval and its values per run, ``wall_s_runs``), disk
    amplification and file size per setup, layout and cache."""
    rows = rows.assign(
        cache=rows["cache_mb"].map(cache_label), fileset=rows["fileset"].fillna("default")
    )
    keys = [*SETUP, "layout", "cache"]
    out = []
    for key, group in rows.groupby(keys, dropna=False, sort=True):
        runs = intervals.per_run(group["wall_s"], group["point_key"])
        out.append({
            **dict(zip(keys, key, strict=True)),
            **intervals.fields("wall_s", runs),
            "wall_s_runs": runs,
            "file_mb": group["file_size"].median() / 1e6,
            "disk_amplification": group["disk_amplification"].median(),
            "read_calls": group["read_calls"].median(),
        })  # fmt: skip
    return pd.DataFrame(out)


def _ratio(name: str, slow: list[list[float]], fast: list[list[float]]) -> dict[str, object]:
    """``slow``'s median wall over ``fast``'s, as the interval columns of ``name``."""
    ratio = ratio_interval(slow, fast)
    how = basis(slow + fast) if ratio.has_interval else ONE_MEASUREMENT
    return {name: ratio.value, f"{name}_lo": ratio.lo, f"{name}_hi": ratio.hi,
            f"{name}_n": ratio.n_a + ratio.n_b, f"{name}_basis": how}  # fmt: skip


def effects(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per file set, protocol, pattern and engine: the size and each effect's ratio,
    with its 95% interval."""
    med = medians(rows)
    out = []
    for setup, group in med.groupby(SETUP, dropna=False):
        runs = {(r.layout, r.cache): r.wall_s_runs for r in group.itertuples()}
        ordered = group[group["layout"] == "ordered"]
        row = dict(zip(SETUP, setup, strict=True))
        row["size_mb"] = (
            float(ordered["file_mb"].median()) if len(ordered) else float(group["file_mb"].max())
        )
        for name, slow, fast in EFFECTS:
            row[name] = np.nan
            if slow in runs and fast in runs:
                row.update(_ratio(name, runs[slow], runs[fast]))
        off = ordered[ordered["cache"] == "off"]["disk_amplification"]
        row["read amplification (ordered, no cache)"] = float(off.median()) if len(off) else np.nan
        out.append(row)
    return pd.DataFrame(out).sort_values(["protocol", "branches", "size_mb"]).reset_index(drop=True)


@page_of(SECTION, lambda view: panel_per(effects(view.rows(SECTION)), "protocol", width=5.5))
def scale_effects(view: SiteView, fig: Any, per_protocol: list) -> None:
    """Each effect against file size, one panel per protocol."""
    for ax, protocol, part in per_protocol:
        for name, *_ in EFFECTS:
            if part[name].notna().any():
                med, err = medians_and_errors(part, name)
                ax.errorbar(part["size_mb"], med, yerr=err, marker="o", capsize=3, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("file size (MB, ordered TTree)")
        ax.set_ylabel("slower / faster wall time")
        ax.set_title(protocol)
        ax.legend(fontsize=7)
    show.figure(fig, "scale_effects", "How each effect grows with file size: the ratio of median "
                "wall times (above 1: the first setup is that many times slower; bars: the "
                "ratio's 95% interval, none where a side was measured once).")  # fmt: skip


SETUP_WORDS = {"fileset": "file set", "protocol": "protocol", "branches": "branches read",
               "engine": "engine"}  # fmt: skip


@page_of(SECTION)
def scale_table(view: SiteView) -> None:
    rows = view.rows(SECTION)
    cols = {**SETUP_WORDS, "size_mb": "file size (MB, ordered TTree)",
            **{name: name for name, *_ in EFFECTS},
            "read amplification (ordered, no cache)": "disk bytes / needed (ordered, no cache)"}  # fmt: skip
    ratios = [name for name, *_ in EFFECTS]
    show.table(intervals.table(effects(rows), cols, ratios=ratios), "Effects per file size: "
               "ratios of median wall times, the slower setup's over the faster's", "scale_table")  # fmt: skip
    show.table(statistics_table(medians(rows), SECTION, before=SETUP_WORDS), "Per setup, layout "
               "and cache: medians with their 95% intervals", "scale_points")  # fmt: skip
