"""The cache section: TTreeCache sizes per layout and protocol; its advice names the smallest
cache within tolerance of the best wall time on every layout."""

from __future__ import annotations

import pandas as pd

from instore.summary.advice import (
    WALL_TOLERANCE,
    Recommendation,
    ok_points,
)
from instore.summary.sections.base import (
    EFFICIENCY,
    READS,
    WALL,
    Section,
    Statistics,
    stats_only,
)

NAME = "cache"


def _cache_choice(part: pd.DataFrame) -> pd.DataFrame:
    """Per cache setting: its effective size and its worst wall time relative to the best."""
    combos = ["layout", "protocol", "engine"]
    best = part.groupby(combos, dropna=False)["wall_s_median"].transform("min")
    part = part.assign(slowdown=part["wall_s_median"] / best)
    per_cache = part.groupby("cache", dropna=False).agg(
        slowdown=("slowdown", "max"),
        size=("cache_bytes_effective_median", "median"),
        calls=("read_calls_median", "median"),
    )
    return per_cache.sort_values("size")


def _no_cache_fits(choice: pd.DataFrame) -> Recommendation:
    """No size is good enough everywhere: say so, and how close the nearest one comes, rather
    than pick a size that is slow on some layout."""
    nearest = choice["slowdown"].idxmin()
    text = (
        f"No single TTreeCache size is recommended: none keeps wall time within "
        f"{WALL_TOLERANCE:.0%} of the best setting on every layout measured (the closest, "
        f"{nearest}, is {choice.loc[nearest, 'slowdown'] - 1:.0%} slower on one of them); "
        "the best size depends on the layout."
    )
    evidence = {"chosen": None, "nearest": nearest, "slowdown": choice["slowdown"].to_dict()}
    return Recommendation(NAME, text, SECTION.link("cache_reads"), evidence)


def cache(stats: pd.DataFrame) -> Recommendation | None:
    """The smallest TTreeCache within WALL_TOLERANCE of the best wall time on every layout."""
    part = ok_points(stats, NAME)
    choice = _cache_choice(part)
    if len(choice) < 2:
        return None
    good = choice[choice["slowdown"] <= 1 + WALL_TOLERANCE]
    if good.empty:
        return _no_cache_fits(choice)
    pick = good.index[0]
    off = choice.iloc[0]
    size_mb = choice.loc[pick, "size"] / 1e6
    if choice.loc[pick, "size"] == 0:
        text = (
            "A TTreeCache does not shorten these reads: with it off, wall time is within "
            f"{WALL_TOLERANCE:.0%} of the best setting."
        )
    else:
        text = (
            f"Use a TTreeCache of at least {size_mb:.1f} MB ({pick}): read calls fall from "
            f"{off['calls']:.0f} to {choice.loc[pick, 'calls']:.0f} per job and wall time is "
            f"within {WALL_TOLERANCE:.0%} of the best setting on every layout measured."
        )
    evidence = {"chosen": pick, "cache_mb": size_mb, "slowdown": choice["slowdown"].to_dict()}
    return Recommendation(NAME, text, SECTION.link("cache_reads"), evidence)


SECTION = Section(
    NAME,
    "TTreeCache size",
    "TTreeCache size: read calls and bytes read against cache size, per layout.",
    Statistics({"layout": "layout", "protocol": "protocol", "cache": "cache",
                "cache_bytes_effective_median": "cache bytes (median)", **READS, **WALL,
                **EFFICIENCY, "read_rate_of_limit": "read rate, share of calibrated IOPS"},
               percent=("cpu_efficiency_median", "read_rate_of_limit")),
    figures={
        "cache_reads": "fig-cache-reads",
    },
    page=("cache_reads", "cache_table"),
    advice=stats_only(cache),
    advice_rank=1,
)  # fmt: skip
