"""The format section (TTree against RNTuple, cache off and on, per protocol and engine) and
its advice, from the measurement closest to what a site stores.

Two sections answer the question. ``format`` reads small generic files (16 MB: an RNTuple of
one cluster); ``scale`` reads NanoAOD-like files up to 1 GB, shaped like an experiment's. The
advice comes from the scale section's largest file set measured in both formats when there is
one (closest to the site's files in size and schema), names what the format section found, and
says when the two disagree. Each ratio carries its interval; one whose interval includes 1
names no winner.
"""

from __future__ import annotations

import math

import pandas as pd

from instore.payload.specs import compared_points
from instore.summary.advice import (
    NO_DIFFERENCE,
    WALL_TOLERANCE,
    Recommendation,
    as_evidence,
    capitalised,
    ok_points,
    ratio,
    single_note,
)
from instore.summary.interval import Ratio
from instore.summary.sections.base import (
    EFFICIENCY,
    JOBS,
    READS,
    WALL,
    Section,
    Statistics,
    stats_only,
)
from instore.summary.sections.scale import NAME as SCALE

NAME = "format"
TTREE_LAYOUT = "ordered"  # the scale section's TTree that RNTuple is set against


def format_name(layout: str) -> str:
    """TTree or RNTuple, from the generated layout's name (the summary keys by layout)."""
    return "RNTuple" if str(layout).startswith("rntuple") else "TTree"


def _root_first(part: pd.DataFrame) -> pd.DataFrame:
    """The ROOT engine's points when it was measured (as the protocol advice does)."""
    part = compared_points(part)
    return part.assign(format=part["layout"].map(format_name))


def _best(points: pd.DataFrame) -> pd.DataFrame:
    """The point with the shortest median wall (each format at its best cache setting)."""
    return points.loc[[points["wall_s_median"].idxmin()]]


def format_ratios(part: pd.DataFrame) -> dict[str, Ratio]:
    """Per protocol: TTree's best wall over RNTuple's, with its interval."""
    out: dict[str, Ratio] = {}
    for protocol, rows in part.groupby("protocol"):
        tree, ntuple = rows[rows["format"] == "TTree"], rows[rows["format"] == "RNTuple"]
        if len(tree) and len(ntuple):
            out[str(protocol)] = ratio(_best(tree), _best(ntuple))
    return out


def _factor(r: Ratio) -> str:
    """``2.6x [2.1-3.0]`` (the interval) or ``2.6x`` (the caller notes the single measurement)."""
    return r.text() if r.has_interval else f"{r.value:.3g}x"


def verdict(r: Ratio, protocol: str) -> str:
    """Which format reads faster over ``protocol`` and by how much; no winner where the
    ratio's interval includes 1 (or, from a single measurement, within the tolerance)."""
    single = "" if r.has_interval else " (from a single measurement)"
    if r.has_interval and not r.differs:
        return (f"TTree and RNTuple show {NO_DIFFERENCE} over {protocol} (TTree's wall over "
                f"RNTuple's: {r.text()})")  # fmt: skip
    if not r.has_interval and abs(math.log(r.value)) <= math.log(1 + WALL_TOLERANCE):
        return f"TTree and RNTuple read equally fast over {protocol} (within {WALL_TOLERANCE:.0%}){single}"
    win, lose, shown = (
        ("RNTuple", "TTree", r) if r.value >= 1 else ("TTree", "RNTuple", r.inverse())
    )
    return f"{win} reads {_factor(shown)} faster than {lose} over {protocol}{single}"


def _lead(ratios: dict[str, Ratio]) -> str:
    """The protocol where the formats differ most."""
    return max(ratios, key=lambda p: abs(math.log(ratios[p].value)))


def _cluster_cache_phrase(part: pd.DataFrame) -> tuple[str | None, dict]:
    """Whether RNTuple's cluster cache pays: wall with it off over wall with it on, the worst
    case over protocols and layouts (None: on and off were not both measured)."""
    rnt = part[part["format"] == "RNTuple"].assign(on=part["cache_mb"].fillna(1) != 0)
    slowdowns: dict[str, Ratio] = {}
    for (protocol, _layout), rows in rnt.groupby(["protocol", "layout"]):
        off, on = rows[~rows["on"]], rows[rows["on"]]
        if len(off) and len(on):
            r = ratio(off, on)
            if protocol not in slowdowns or r.value > slowdowns[protocol].value:
                slowdowns[str(protocol)] = r
    if not slowdowns:
        return None, {}
    evidence = {k: as_evidence(v) for k, v in slowdowns.items()}
    worst = max(slowdowns, key=lambda p: slowdowns[p].value)
    r = slowdowns[worst]
    if r.value > 1 + WALL_TOLERANCE and (r.differs or not r.has_interval):
        return (f"keep its cluster cache on: with it off, reads take up to {r.text()} as long "
                f"(over {worst})", evidence)  # fmt: skip
    return f"its cluster cache changes wall time by under {WALL_TOLERANCE:.0%} here", evidence


def _scale_part(stats: pd.DataFrame) -> tuple[str | None, pd.DataFrame]:
    """The scale section's largest file set measured as the ordered TTree and as RNTuple."""
    part = _root_first(ok_points(stats, SCALE))
    if part.empty or "fileset" not in part:
        return None, part.iloc[0:0]
    part = part[(part["layout"] == TTREE_LAYOUT) | (part["format"] == "RNTuple")]
    size = "file_size_median" if "file_size_median" in part else "bytes_read_median"
    both = [f for f, rows in part.groupby("fileset") if rows["format"].nunique() == 2]
    if not both:
        return None, part.iloc[0:0]
    sizes = {f: part.loc[part["fileset"] == f, size].max() for f in both}
    largest = max(both, key=lambda f: (sizes[f], f))
    return str(largest), part[part["fileset"] == largest]


def _describe(ratios: dict[str, Ratio]) -> str:
    return ", ".join(verdict(r, p) for p, r in ratios.items())


def _winner(r: Ratio) -> str | None:
    """Which format a ratio names (None: no measurable difference or equal)."""
    if (r.has_interval and not r.differs) or abs(math.log(r.value)) <= math.log(1 + WALL_TOLERANCE):
        return None
    return "RNTuple" if r.value > 1 else "TTree"


def _agreement(main: dict[str, Ratio], other: dict[str, Ratio]) -> str:
    common = [p for p in main if p in other]
    disagree = [p for p in common if _winner(main[p]) != _winner(other[p])]
    if not common:
        return ""
    return (
        f"; the two disagree over {', '.join(disagree)}: trust the larger files"
        if disagree
        else "; the two agree"
    )


def format_advice(stats: pd.DataFrame) -> Recommendation | None:
    """TTree against RNTuple per protocol, each at its best cache setting, from the files
    closest to the site's (the scale section's largest, else the format section's), with the
    other section named; and whether RNTuple's cluster cache must stay on."""
    small = _root_first(ok_points(stats, NAME))
    small_ratios = format_ratios(small)
    fileset, large = _scale_part(stats)
    large_ratios = format_ratios(large) if fileset else {}
    if not small_ratios and not large_ratios:
        return None
    if large_ratios:
        lead = _lead(large_ratios)
        text = (f"On the largest NanoAOD-like files measured ({fileset}, scale section), "
                f"{verdict(large_ratios[lead], lead)}")  # fmt: skip
        others = {p: r for p, r in large_ratios.items() if p != lead}
        text += f" (elsewhere: {_describe(others)})" if others else ""
        if small_ratios:
            text += (f"; the format section's small generic files: {_describe(small_ratios)}"
                     f"{_agreement(large_ratios, small_ratios)}")  # fmt: skip
    else:
        lead = _lead(small_ratios)
        text = capitalised(verdict(small_ratios[lead], lead)) + " (format section's files)"
        others = {p: r for p, r in small_ratios.items() if p != lead}
        text += f" (elsewhere: {_describe(others)})" if others else ""
    cache_phrase, cache_evidence = _cluster_cache_phrase(small if len(small) else large)
    text += f"; RNTuple: {cache_phrase}." if cache_phrase else "."
    text += single_note(*small_ratios.values(), *large_ratios.values())
    evidence = {
        "ttree_over_rntuple_wall": {k: as_evidence(v) for k, v in small_ratios.items()},
        "scale_fileset": fileset,
        "scale_ttree_over_rntuple_wall": {k: as_evidence(v) for k, v in large_ratios.items()},
        "cluster_cache_off_over_on_wall": cache_evidence,
    }
    return Recommendation(NAME, text, SECTION.link("format_wall"), evidence)


SECTION = Section(
    NAME,
    "File format: TTree and RNTuple",
    (
        "File format: the ordered TTree against RNTuple (the same events), cache off and on (the "
        "TTreeCache for TTree, the cluster cache for RNTuple), per protocol and engine."
    ),
    Statistics({"format": "format", "layout": "layout", "cache_state": "cache",
                "protocol": "protocol", "engine": "engine", **WALL,
                "mb_per_s_median": "MB/s", **EFFICIENCY,
                "mb_per_s_of_limit": "MB/s, share of calibrated", **READS, **JOBS},
               percent=("cpu_efficiency_median", "mb_per_s_of_limit")),
    figures={
        "format_wall": "fig-format-wall",
        "format_throughput": "fig-format-throughput",
        "format_ratio": "fig-format-ratio",
        "format_table": "fig-format-table",
    },
    page=("format_wall", "format_throughput", "format_ratio", "format_table", "format_failures"),
    advice=stats_only(format_advice),
    advice_rank=5,
)  # fmt: skip
