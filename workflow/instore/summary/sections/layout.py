"""The layout section: ordered, by-branch and unordered files, TTreeCache off and on; its advice
says how much slower unordered files read than ordered ones."""

from __future__ import annotations

import pandas as pd

from instore.summary.advice import (
    NO_DIFFERENCE,
    Recommendation,
    as_evidence,
    ok_points,
    ratio,
    single_note,
)
from instore.summary.interval import Ratio, few_runs
from instore.summary.sections.base import (
    EFFICIENCY,
    JOBS,
    WALL,
    Section,
    Statistics,
    stats_only,
)

NAME = "layout"


def layout(stats: pd.DataFrame) -> Recommendation | None:
    """How much slower unordered files read than ordered ones, cache off and on, each ratio
    with its interval."""
    part = ok_points(stats, NAME)
    ratios = {}
    for cache_setting, rows in part.groupby("cache"):
        slow, fast = rows[rows["layout"] == "unordered"], rows[rows["layout"] == "ordered"]
        if len(slow) and len(fast):
            ratios[cache_setting] = ratio(slow, fast)
    if not ratios:
        return None
    phrases = [_layout_phrase(c, r) for c, r in ratios.items()]
    slower = [r for r in ratios.values() if r.value > 1 and (r.differs or not r.has_interval)]
    if slower:
        verdict = "Write files ordered (clustered by entry)"
    elif all(r.has_interval and not r.differs for r in ratios.values()):
        verdict = f"Layout makes {NO_DIFFERENCE} here"
    else:
        verdict = "Layout matters little"
    text = f"{verdict}: {'; '.join(phrases)}."
    evidence = {"unordered_over_ordered": {k: as_evidence(v) for k, v in ratios.items()}}
    text += single_note(*ratios.values())
    return Recommendation(NAME, text, SECTION.link("layout_wall"), evidence)


def _layout_phrase(cache_setting: str, r: Ratio) -> str:
    """Unordered over ordered at one cache setting; an interval that includes 1 names no
    difference, whatever side of 1 its point estimate falls on."""
    where = f"with the cache {'at ROOT default' if cache_setting == 'default' else cache_setting}"
    if r.has_interval and not r.differs:
        return f"{where}, {NO_DIFFERENCE} ({r.text()}{few_runs(r)})"
    return f"{where}, unordered files take {r.text()} the wall time of ordered ones"


SECTION = Section(
    NAME,
    "File layout",
    (
        "Layout: ordered, by-branch and unordered files, TTreeCache off and on; the access map "
        "shows scattered against linear reads."
    ),
    Statistics({"layout": "layout", "cache": "cache", "protocol": "protocol", **WALL,
                **EFFICIENCY, "read_calls_median": "read calls (median)", **JOBS},
               percent=("cpu_efficiency_median",)),
    figures={
        "access_map": "fig-layout-access-map",
        "layout_wall": "fig-layout-wall",
    },
    page=("access_map", "layout_wall", "layout_table"),
    advice=stats_only(layout),
    advice_rank=2,
    files=True,
)  # fmt: skip
