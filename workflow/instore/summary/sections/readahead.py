"""The readahead section: client buffer and block-device readahead sizes for full and sparse
reads; its advice names the best setting for each and what block readahead costs the disk."""

from __future__ import annotations

import pandas as pd

from instore.summary.advice import (
    NO_DIFFERENCE,
    Recommendation,
    as_evidence,
    capitalised,
    figure,
    ok_points,
    ratio,
    single_note,
)
from instore.summary.interval import Ratio
from instore.summary.sections.base import (
    MB_S,
    WALL,
    Section,
    Statistics,
    stats_only,
)

NAME = "readahead"


def _best_readahead(part: pd.DataFrame) -> tuple[str, str, Ratio] | None:
    """(best setting, its wall with interval, worst wall over best wall) over the settings."""
    keys = ["readahead_kb", "block_readahead_kb"]
    wall = part.groupby(keys, dropna=False)["wall_s_median"].median()
    if len(wall) < 2:
        return None
    best = part[_matches(part, keys, wall.idxmin())]
    worst = part[_matches(part, keys, wall.idxmax())]
    return _setting(*wall.idxmin()), figure(best, "wall_s").text("{:.2f} s"), ratio(worst, best)


def _matches(part: pd.DataFrame, keys: list[str], values: tuple) -> pd.Series:
    """Rows whose ``keys`` hold ``values`` (NaN matching NaN)."""
    mask = pd.Series(True, index=part.index)
    for key, value in zip(keys, values, strict=True):
        mask &= part[key].isna() if pd.isna(value) else part[key] == value
    return mask


def _setting(readahead_kb: float, block_kb: float) -> str:
    return f"{readahead_kb:g} KB" + (
        "" if pd.isna(block_kb) else f" (block device {block_kb:g} KB)"
    )


def _disk_waste(part: pd.DataFrame) -> tuple[str, float, str, float] | None:
    """(setting, disk amplification) at the most and at the least wasteful readahead setting,
    where the site's disk reads were counted: the bytes a readahead reads that the job's own
    counters never see."""
    if "disk_amplification_median" not in part:
        return None
    amp = (
        part.groupby(["readahead_kb", "block_readahead_kb"], dropna=False)[
            "disk_amplification_median"
        ]
        .median()
        .dropna()
    )
    if len(amp) < 2:
        return None
    return _setting(*amp.idxmax()), float(amp.max()), _setting(*amp.idxmin()), float(amp.min())


def readahead(stats: pd.DataFrame) -> Recommendation | None:
    """The readahead with the shortest wall time, for sparse and for full reads separately,
    and what block readahead costs the disk on sparse reads."""
    part = ok_points(stats, NAME).dropna(subset=["readahead_kb"])
    full = _best_readahead(part[part["branches"] == "all"])
    sparse_part = part[part["branches"] != "all"]
    sparse = _best_readahead(sparse_part)
    if full is None and sparse is None:
        return None
    phrases = [_readahead_phrase(what, best) for what, best in (("sparse", sparse), ("full", full))
               if best is not None]  # fmt: skip
    waste = _disk_waste(sparse_part)
    if waste is not None:
        phrases.append(
            f"but on sparse reads the disk read {waste[1]:.1f}x the bytes needed at a readahead "
            f"of {waste[0]}, {waste[3]:.1f}x at {waste[2]}"
        )
    evidence = {
        what: None if best is None else {"best": best[0], "worst_over_best": as_evidence(best[2])}
        for what, best in (("sparse", sparse), ("full", full))
    }
    evidence["sparse_disk_amplification"] = waste
    note = single_note(*(best[2] for best in (sparse, full) if best is not None))
    return Recommendation(
        NAME, capitalised("; ".join(phrases)) + "." + note, SECTION.link("readahead"), evidence
    )


def _readahead_phrase(what: str, best: tuple[str, str, Ratio]) -> str:
    setting, wall, worst = best
    if worst.has_interval and not worst.differs:
        return (f"for {what} reads the readahead settings make {NO_DIFFERENCE} (the worst "
                f"takes {worst.text()} the best's wall, {wall} at {setting})")  # fmt: skip
    return (f"{what} reads do best with a readahead of {setting} ({wall}; the worst setting "
            f"takes {worst.text()} as long)")  # fmt: skip


SECTION = Section(
    NAME,
    "Readahead and buffer size",
    "Readahead: throughput and bytes wasted against readahead size, full and sparse reads.",
    Statistics({"branches": "branches", "readahead_kb": "readahead (KB)",
                "block_readahead_kb": "block readahead (KB)", **MB_S, **WALL,
                "bytes_wasted_median": "bytes read, not needed (median)",
                "read_amplification_median": "client bytes / needed (median)",
                "disk_amplification_median": "disk bytes / needed (median)"},
               percent=("mb_per_s_of_limit",)),
    figures={
        "readahead": "fig-readahead",
    },
    page=("readahead", "readahead_table"),
    advice=stats_only(readahead),
    advice_rank=3,
)  # fmt: skip
