"""The overview's recommendations (``summary.sections`` says which section gives which, in
what order), each computed from the point statistics and linked to the
figure that supports it. A section without enough points gives no recommendation, not a guess.
Every figure a recommendation quotes carries its 95% interval, every comparison its ratio's
interval, and one whose interval includes 1 names no winner (``instore.summary.advice``).
"""

from __future__ import annotations

import pandas as pd

from instore.summary.advice import (
    EFFICIENCY_FLOOR,
    NO_DIFFERENCE,
    WALL_TOLERANCE,
    Recommendation,
    as_evidence,
    capitalised,
    figure,
    interval_evidence,
    ok_points,
    ratio,
    single_note,
)
from instore.summary.advice_caching import (
    access_method,
    break_even_ms,
    caching,
    caching_curves,
    efficiency_drop_ms,
)
from instore.summary.advice_format import format_advice, format_name
from instore.summary.figures import link
from instore.summary.interval import Ratio, few_runs

__all__ = [
    "EFFICIENCY_FLOOR", "WALL_TOLERANCE", "Recommendation", "access_method", "break_even_ms",
    "cache", "caching", "caching_curves", "efficiency_drop_ms", "format_advice", "format_name",
    "jobfill", "layout", "protocols", "readahead",
]  # fmt: skip


def protocols(stats: pd.DataFrame) -> Recommendation | None:
    """The protocol with the best median CPU efficiency (ROOT engine when it was measured),
    named only when its efficiency over the worst one's has an interval that excludes 1."""
    part = ok_points(stats, "protocols")
    if (part["engine"] == "root").any():
        part = part[part["engine"] == "root"]
    eff = part.groupby("protocol")["cpu_efficiency_median"].median().sort_values()
    if len(eff) < 2:
        return None
    best, worst = eff.index[-1], eff.index[0]
    of = {p: part[part["protocol"] == p] for p in (best, worst)}
    shown = {p: figure(rows, "cpu_efficiency") for p, rows in of.items()}
    gain = ratio(of[best], of[worst], "cpu_efficiency")
    figures = (f"median CPU efficiency {shown[best].text('{:.0%}')} with {best}, "
               f"{shown[worst].text('{:.0%}')} with {worst}")  # fmt: skip
    if gain.has_interval and not gain.differs:
        text = f"The protocols show {NO_DIFFERENCE} in CPU efficiency: {figures}."
    else:
        text = f"Use {best} for analysis reads: {figures} ({gain.text()})."
    evidence = {
        "efficiency": {k: float(v) for k, v in eff.items()},
        "best_over_worst": as_evidence(gain),
        "intervals": {p: interval_evidence(i) for p, i in shown.items()},
    }
    return Recommendation(
        "protocols", text + single_note(gain), link("protocol_efficiency"), evidence
    )


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
    return Recommendation("cache", text, link("cache_reads"), evidence)


def cache(stats: pd.DataFrame) -> Recommendation | None:
    """The smallest TTreeCache within WALL_TOLERANCE of the best wall time on every layout."""
    part = ok_points(stats, "cache")
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
    return Recommendation("cache", text, link("cache_reads"), evidence)


def layout(stats: pd.DataFrame) -> Recommendation | None:
    """How much slower unordered files read than ordered ones, cache off and on, each ratio
    with its interval."""
    part = ok_points(stats, "layout")
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
    return Recommendation("layout", text, link("layout_wall"), evidence)


def _layout_phrase(cache_setting: str, r: Ratio) -> str:
    """Unordered over ordered at one cache setting; an interval that includes 1 names no
    difference, whatever side of 1 its point estimate falls on."""
    where = f"with the cache {'at ROOT default' if cache_setting == 'default' else cache_setting}"
    if r.has_interval and not r.differs:
        return f"{where}, {NO_DIFFERENCE} ({r.text()}{few_runs(r)})"
    return f"{where}, unordered files take {r.text()} the wall time of ordered ones"


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
    part = ok_points(stats, "readahead").dropna(subset=["readahead_kb"])
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
        "readahead", capitalised("; ".join(phrases)) + "." + note, link("readahead"), evidence
    )


def _readahead_phrase(what: str, best: tuple[str, str, Ratio]) -> str:
    setting, wall, worst = best
    if worst.has_interval and not worst.differs:
        return (f"for {what} reads the readahead settings make {NO_DIFFERENCE} (the worst "
                f"takes {worst.text()} the best's wall, {wall} at {setting})")  # fmt: skip
    return (f"{what} reads do best with a readahead of {setting} ({wall}; the worst setting "
            f"takes {worst.text()} as long)")  # fmt: skip


def _fill_phrase(eff: pd.Series, shown: dict[int, str], floor: float) -> str:
    """How many jobs per node keep every job's median efficiency at or above ``floor``;
    ``shown``: each fill's efficiency with its interval."""
    good = eff[eff >= floor]
    if good.empty:
        return (
            f"even one job per node runs under {floor:.0%} CPU efficiency ({shown[eff.index[0]]})"
        )
    if len(good) == len(eff):
        return (
            f"up to {eff.index[-1]} jobs per node (the most measured) keep CPU efficiency at "
            f"or above {floor:.0%} ({shown[eff.index[-1]]})"
        )
    k = int(good.index.max())
    after = eff[eff.index > k]
    return (
        f"run at most {k} job{'s' if k > 1 else ''} per node: at {int(after.index[0])} jobs CPU "
        f"efficiency drops to {shown[after.index[0]]}, under {floor:.0%}"
    )


def _worst_per_fill(rows: pd.DataFrame) -> tuple[pd.Series, dict[int, str]]:
    """Per fill, the lowest point's median efficiency and its text with its interval."""
    worst = rows.loc[rows.groupby("fill")["cpu_efficiency_median"].idxmin()].sort_values("fill")
    eff = pd.Series(worst["cpu_efficiency_median"].to_numpy(), index=worst["fill"].to_numpy())
    shown = {fill: figure(worst[worst["fill"] == fill], "cpu_efficiency").text("{:.0%}")
             for fill in eff.index}  # fmt: skip
    return eff, shown


def _slots(points: pd.DataFrame, one_thread: pd.DataFrame) -> list[tuple[str, str, Ratio]]:
    """Jobs of several threads against as many one-thread jobs on the same cores (1 x 2 against
    2 x 1): the aggregate event rate's ratio, a winner named only when its interval excludes 1."""
    if "threads" not in points:
        return []
    out = []
    for _, mt in points[points["threads"].fillna(1) > 1].iterrows():
        fill, threads = int(mt["fill"]), int(mt["threads"])
        same = one_thread[one_thread["fill"] == fill * threads]
        if same.empty:
            continue
        r = ratio(mt.to_frame().T, same, "aggregate_event_rate_hz")
        verdict = f" ({NO_DIFFERENCE})" if r.has_interval and not r.differs else ""
        out.append((f"{fill}x{threads}", f"{fill} job(s) of {threads} threads "
                    f"({mt.get('mt_mode') or 'cluster'}) process {r.text()} the events/s of "
                    f"{fill * threads} one-thread jobs on the same cores{verdict}", r))  # fmt: skip
    return out


def jobfill(stats: pd.DataFrame, floor: float = EFFICIENCY_FLOOR) -> Recommendation | None:
    """The most jobs per node whose every job still keeps a median efficiency above ``floor``,
    per workload (CPU per event) when the grid has several: CPU-heavy jobs hide the storage
    that light ones are starved by. Each efficiency quoted with its interval."""
    everything = ok_points(stats, "jobfill")
    part = everything
    if "threads" in part:  # jobs per node is asked of one-thread jobs, as the seeds ran them
        part = part[part["threads"].fillna(1) == 1]
    workloads = sorted(part["cpu_us"].dropna().unique()) if "cpu_us" in part else []
    groups = (
        [(w, part[part["cpu_us"] == w]) for w in workloads]
        if len(workloads) > 1
        else [(None, part)]
    )
    phrases, evidence = [], {"floor": floor, "efficiency_by_fill": {}}
    for cpu_us, rows in groups:
        if rows["fill"].nunique() < 2:
            continue
        eff, shown = _worst_per_fill(rows)
        prefix = "" if cpu_us is None else f"with {cpu_us:g} us of CPU per event, "
        phrases.append(prefix + _fill_phrase(eff, shown, floor))
        evidence["efficiency_by_fill"][str(cpu_us)] = {int(k): float(v) for k, v in eff.items()}
    for cpu_us, rows in groups:
        mine = everything if cpu_us is None else everything[everything["cpu_us"] == cpu_us]
        prefix = "" if cpu_us is None else f"with {cpu_us:g} us of CPU per event, "
        for slot, words, r in _slots(mine, rows):
            phrases.append(prefix + words)
            evidence.setdefault("threads_over_jobs", {})[f"{cpu_us} {slot}"] = as_evidence(r)
    if not phrases:
        return None
    return Recommendation(
        "jobfill", capitalised("; ".join(phrases)) + ".", link("jobfill"), evidence
    )
