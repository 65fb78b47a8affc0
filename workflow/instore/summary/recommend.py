"""The overview's recommendations, each computed from the point statistics and linked to the
figure that supports it. A section without enough points gives no recommendation, not a guess.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from instore.summary.figures import link

EFFICIENCY_FLOOR = 0.8  # the seeds' line between a healthy and a starved analysis job
WALL_TOLERANCE = 0.10  # a cache within this much of the best wall time is good enough


@dataclass(frozen=True)
class Recommendation:
    section: str
    text: str
    figure: str
    evidence: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ok(stats: pd.DataFrame, section: str) -> pd.DataFrame:
    part = stats[(stats["section"] == section) & (stats["jobs_ok"] > 0)]
    return part.dropna(subset=["wall_s_median"])


def protocols(stats: pd.DataFrame) -> Recommendation | None:
    """The protocol with the best median CPU efficiency (ROOT engine when it was measured)."""
    part = _ok(stats, "protocols")
    if (part["engine"] == "root").any():
        part = part[part["engine"] == "root"]
    eff = part.groupby("protocol")["cpu_efficiency_median"].median().sort_values()
    if len(eff) < 2:
        return None
    best, worst = eff.index[-1], eff.index[0]
    text = (
        f"Use {best} for analysis reads: median CPU efficiency {eff[best]:.0%}, "
        f"against {eff[worst]:.0%} with {worst}."
    )
    evidence = {"efficiency": {k: float(v) for k, v in eff.items()}}
    return Recommendation("protocols", text, link("protocol_efficiency"), evidence)


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
    part = _ok(stats, "cache")
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
    """How much slower unordered files read than ordered ones, cache off and on."""
    part = _ok(stats, "layout")
    wall = part.groupby(["cache", "layout"])["wall_s_median"].median().unstack("layout")
    if not {"ordered", "unordered"} <= set(wall.columns):
        return None
    ratio = (wall["unordered"] / wall["ordered"]).dropna()
    if ratio.empty:
        return None
    parts = [
        f"{r:.1f}x with the cache {'at ROOT default' if c == 'default' else c}"
        for c, r in ratio.items()
    ]
    verdict = (
        "Write files ordered (clustered by entry)" if ratio.max() > 1 else "Layout matters little"
    )
    text = f"{verdict}: unordered files take {', '.join(parts)} the wall time of ordered ones."
    evidence = {"unordered_over_ordered": {k: float(v) for k, v in ratio.items()}}
    return Recommendation("layout", text, link("layout_wall"), evidence)


def _best_readahead(part: pd.DataFrame) -> tuple[str, float, float] | None:
    wall = part.groupby(["readahead_kb", "block_readahead_kb"], dropna=False)[
        "wall_s_median"
    ].median()
    if len(wall) < 2:
        return None
    return _setting(*wall.idxmin()), float(wall.min()), float(wall.max())


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
    part = _ok(stats, "readahead").dropna(subset=["readahead_kb"])
    full = _best_readahead(part[part["branches"] == "all"])
    sparse_part = part[part["branches"] != "all"]
    sparse = _best_readahead(sparse_part)
    if full is None and sparse is None:
        return None
    phrases = [
        f"{what} reads do best with a readahead of {best[0]} ({best[1]:.2f} s against "
        f"{best[2]:.2f} s at the worst setting)"
        for what, best in (("sparse", sparse), ("full", full))
        if best is not None
    ]
    waste = _disk_waste(sparse_part)
    if waste is not None:
        phrases.append(
            f"but on sparse reads the disk read {waste[1]:.1f}x the bytes needed at a readahead "
            f"of {waste[0]}, {waste[3]:.1f}x at {waste[2]}"
        )
    evidence = {"sparse": sparse, "full": full, "sparse_disk_amplification": waste}
    text = "; ".join(phrases)
    return Recommendation(
        "readahead", text[0].upper() + text[1:] + ".", link("readahead"), evidence
    )


def _fill_phrase(eff: pd.Series, floor: float) -> str:
    """How many jobs per node keep every job's median efficiency at or above ``floor``."""
    good = eff[eff >= floor]
    if good.empty:
        return f"even one job per node runs under {floor:.0%} CPU efficiency ({eff.iloc[0]:.0%})"
    if len(good) == len(eff):
        return (
            f"up to {eff.index[-1]} jobs per node (the most measured) keep CPU efficiency at "
            f"or above {floor:.0%} ({eff.iloc[-1]:.0%})"
        )
    k = int(good.index.max())
    after = eff[eff.index > k]
    return (
        f"run at most {k} job{'s' if k > 1 else ''} per node: at {int(after.index[0])} jobs CPU "
        f"efficiency drops to {after.iloc[0]:.0%}, under {floor:.0%}"
    )


def jobfill(stats: pd.DataFrame, floor: float = EFFICIENCY_FLOOR) -> Recommendation | None:
    """The most jobs per node whose every job still keeps a median efficiency above ``floor``,
    per workload (CPU per event) when the grid has several: CPU-heavy jobs hide the storage
    that light ones are starved by."""
    part = _ok(stats, "jobfill")
    workloads = sorted(part["cpu_us"].dropna().unique()) if "cpu_us" in part else []
    groups = (
        [(w, part[part["cpu_us"] == w]) for w in workloads]
        if len(workloads) > 1
        else [(None, part)]
    )
    phrases, evidence = [], {"floor": floor, "efficiency_by_fill": {}}
    for cpu_us, rows in groups:
        eff = rows.groupby("fill")["cpu_efficiency_median"].min().sort_index()
        if len(eff) < 2:
            continue
        prefix = "" if cpu_us is None else f"with {cpu_us:g} us of CPU per event, "
        phrases.append(prefix + _fill_phrase(eff, floor))
        evidence["efficiency_by_fill"][str(cpu_us)] = {int(k): float(v) for k, v in eff.items()}
    if not phrases:
        return None
    text = "; ".join(phrases)
    return Recommendation("jobfill", text[0].upper() + text[1:] + ".", link("jobfill"), evidence)


def access_method(protocol: str, cache_state: object) -> str:
    """How a caching point read: direct xrootd, stage-in, or an XCache cold or warm."""
    if protocol == "xcache":
        return f"XCache {cache_state}" if isinstance(cache_state, str) else "XCache"
    return {"xrootd": "direct xrootd"}.get(protocol, protocol)


def caching_curves(stats: pd.DataFrame) -> pd.DataFrame:
    """Median CPU efficiency and wall time per read kind, access method and RTT (the caching
    section's what-if curves), one row each."""
    part = _ok(stats, "caching").dropna(subset=["rtt_ms"])
    methods = [
        access_method(p, c) for p, c in zip(part["protocol"], part["cache_state"], strict=True)
    ]
    part = part.assign(
        method=methods, reads=part["branches"].map(lambda b: "full" if b == "all" else "sparse")
    )
    keys = ["reads", "method", "rtt_ms"]
    cols = {"cpu_efficiency_median": "efficiency", "wall_s_median": "wall_s"}
    return part.groupby(keys)[list(cols)].median().rename(columns=cols).reset_index()


def break_even_ms(curves: pd.DataFrame, method: str, against: str) -> float | None:
    """The smallest RTT from which ``method`` is faster than ``against`` at every RTT measured
    (None: it never is, up to the largest)."""
    wall = curves.pivot_table(index="rtt_ms", columns="method", values="wall_s").sort_index()
    if not {method, against} <= set(wall.columns):
        return None
    faster = (wall[method] < wall[against]).dropna()
    if faster.empty or not faster.iloc[-1]:
        return None
    losing = faster[~faster]
    return float(
        faster.index[0] if losing.empty else faster.index[faster.index > losing.index[-1]][0]
    )


def efficiency_drop_ms(curves: pd.DataFrame, method: str, floor: float) -> float | None:
    """The smallest RTT at which ``method`` runs under ``floor`` CPU efficiency (None: never)."""
    rows = curves[(curves["method"] == method) & (curves["efficiency"] < floor)]
    return float(rows["rtt_ms"].min()) if len(rows) else None


def _caching_phrase(curves: pd.DataFrame, reads: str, floor: float) -> tuple[str, dict]:
    part = curves[curves["reads"] == reads]
    methods = sorted(part["method"].unique())
    top = f"{part['rtt_ms'].max():g} ms"
    phrases = []
    warm = break_even_ms(part, "XCache warm", "direct xrootd")
    if "XCache warm" in methods and "direct xrootd" in methods:
        phrases.append(
            f"a warm XCache beats direct reads from {warm:g} ms RTT"
            if warm is not None
            else f"a warm XCache never beats direct reads (up to {top})"
        )
    best = part.loc[part.groupby("rtt_ms")["wall_s"].idxmin(), "method"]
    staged = break_even_ms(part, "stage-in", "direct xrootd")  # the seeds' own question
    if "stage-in" in methods and not (best == "stage-in").any():
        phrases.append("stage-in never wins" + (
            f" (though it beats direct reads from {staged:g} ms)" if staged is not None else ""))  # fmt: skip
    drops = {m: efficiency_drop_ms(part, m, floor) for m in methods}
    under = ", ".join(
        f"{m} at {d:g} ms" if d is not None else f"{m} never (up to {top})"
        for m, d in drops.items()
    )
    phrases.append(f"CPU efficiency drops under {floor:.0%}: {under}")
    evidence = {"warm_beats_direct_from_ms": warm, "stage_in_beats_direct_from_ms": staged,
                "under_floor_from_ms": drops,
                "fastest_by_rtt": dict(zip(part.loc[best.index, "rtt_ms"], best, strict=True))}  # fmt: skip
    return f"for {reads} reads, " + "; ".join(phrases), evidence


def caching(stats: pd.DataFrame, floor: float = EFFICIENCY_FLOOR) -> Recommendation | None:
    """Direct access, stage-in and a site cache across RTTs: where a warm XCache starts to
    beat direct reads, whether stage-in ever wins, and the RTT at which each method drops
    under ``floor`` CPU efficiency; per read kind (full, sparse)."""
    if "rtt_ms" not in stats or "cache_state" not in stats:
        return None
    curves = caching_curves(stats)
    phrases, evidence = [], {"floor": floor}
    for reads in ("full", "sparse"):
        part = curves[curves["reads"] == reads]
        if part["method"].nunique() < 2 or part["rtt_ms"].nunique() < 2:
            continue
        phrase, evidence[reads] = _caching_phrase(curves, reads, floor)
        phrases.append(phrase)
    if not phrases:
        return None
    text = "; ".join(phrases)
    return Recommendation("caching", text[0].upper() + text[1:] + ".", link("caching"), evidence)


def format_name(layout: str) -> str:
    """TTree or RNTuple, from the generated layout's name (the summary keys by layout)."""
    return "RNTuple" if str(layout).startswith("rntuple") else "TTree"


def _format_part(stats: pd.DataFrame) -> pd.DataFrame:
    """The format section's measured points, ROOT engine when it was measured (as protocols)."""
    part = _ok(stats, "format")
    if (part["engine"] == "root").any():
        part = part[part["engine"] == "root"]
    return part.assign(format=part["layout"].map(format_name))


def _faster(ratio: float) -> str:
    """``TTree wall / RNTuple wall`` as who is faster and by how much."""
    return f"RNTuple {ratio:.1f}x" if ratio >= 1 else f"TTree {1 / ratio:.1f}x"


def _cluster_cache_phrase(part: pd.DataFrame) -> tuple[str | None, dict[str, float]]:
    """Whether RNTuple's cluster cache pays: wall with it off over wall with it on, the worst
    case over protocols and layouts (None: on and off were not both measured)."""
    rnt = part[part["format"] == "RNTuple"].assign(on=part["cache_mb"].fillna(1) != 0)
    wall = rnt.pivot_table(index=["protocol", "layout"], columns="on", values="wall_s_median")
    if not {True, False} <= set(wall.columns):
        return None, {}
    slowdown = (wall[False] / wall[True]).dropna().groupby(level="protocol").max()
    if slowdown.empty:
        return None, {}
    evidence = {str(k): float(v) for k, v in slowdown.items()}
    worst = slowdown.idxmax()
    if slowdown[worst] > 1 + WALL_TOLERANCE:
        return (
            f"keep its cluster cache on: with it off, reads take up to {slowdown[worst]:.1f}x "
            f"as long (over {worst})",
            evidence,
        )
    return f"its cluster cache changes wall time by under {WALL_TOLERANCE:.0%} here", evidence


def format_advice(stats: pd.DataFrame) -> Recommendation | None:
    """TTree against RNTuple per protocol, each at its best cache setting: which format reads
    the site's data faster and by how much, and whether RNTuple's cluster cache must stay on."""
    part = _format_part(stats)
    best = part.groupby(["protocol", "format"])["wall_s_median"].min().unstack("format")
    if not {"TTree", "RNTuple"} <= set(best.columns):
        return None
    ratio = (best["TTree"] / best["RNTuple"]).dropna()
    if ratio.empty:
        return None
    lead = ratio.map(lambda r: abs(np.log(r))).idxmax()
    if abs(np.log(ratio[lead])) <= np.log(1 + WALL_TOLERANCE):
        text = (
            f"TTree and RNTuple read this site's data equally fast (within {WALL_TOLERANCE:.0%} "
            f"over {', '.join(ratio.index)})"
        )
    else:
        win, lose = ("RNTuple", "TTree") if ratio[lead] > 1 else ("TTree", "RNTuple")
        factor = max(ratio[lead], 1 / ratio[lead])
        text = f"{win} reads this site's data {factor:.1f}x faster than {lose} over {lead}"
        others = [f"{_faster(r)} faster over {p}" for p, r in ratio.items() if p != lead]
        text += f" (elsewhere: {', '.join(others)})" if others else ""
    cache_phrase, cache_evidence = _cluster_cache_phrase(part)
    text += f"; {cache_phrase}." if cache_phrase else "."
    evidence = {
        "ttree_over_rntuple_wall": {str(k): float(v) for k, v in ratio.items()},
        "cluster_cache_off_over_on_wall": cache_evidence,
    }
    return Recommendation("format", text, link("format_wall"), evidence)


def recommend(stats: pd.DataFrame, floor: float = EFFICIENCY_FLOOR) -> list[Recommendation]:
    """Every recommendation the site's results support, in study order."""
    found = (protocols(stats), cache(stats), layout(stats), readahead(stats), jobfill(stats, floor),
             format_advice(stats), caching(stats, floor))  # fmt: skip
    return [r for r in found if r is not None]
