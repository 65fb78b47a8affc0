"""The caching section: direct access, stage-in and a site cache across RTTs (the caching
section's what-if curves), and where each method stops being good enough."""

from __future__ import annotations

import pandas as pd

from instore.access import STAGE_IN, XCACHE, XROOTD
from instore.summary.advice import (
    EFFICIENCY_FLOOR,
    NO_DIFFERENCE,
    Recommendation,
    as_evidence,
    capitalised,
    ok_points,
    ratio,
    single_note,
)
from instore.summary.interval import Ratio, few_runs
from instore.summary.sections.base import EFFICIENCY, WALL, Section, Statistics

NAME = "caching"


def access_method(protocol: str, cache_state: object) -> str:
    """How a caching point read: direct xrootd, stage-in, or an XCache cold or warm."""
    if protocol == XCACHE:
        return f"XCache {cache_state}" if isinstance(cache_state, str) else "XCache"
    return {XROOTD: f"direct {XROOTD}"}.get(protocol, protocol)


def at_rtt(points: pd.DataFrame) -> pd.DataFrame:
    """The points with the RTT they ran at: the grid's where it set one, else the link's as
    measured (a real site's: its calibration's probe); points with neither are left out."""
    measured = points.get("rtt_ms_measured_median")
    rtt = points["rtt_ms"] if measured is None else points["rtt_ms"].fillna(measured)
    return points.assign(rtt_ms=rtt).dropna(subset=["rtt_ms"])


def by_method(points: pd.DataFrame) -> pd.DataFrame:
    """The caching points at their RTT, with the access method and read kind named."""
    part = at_rtt(points)
    methods = [
        access_method(p, c) for p, c in zip(part["protocol"], part["cache_state"], strict=True)
    ]
    reads = part["branches"].map(lambda b: "full" if b == "all" else "sparse")
    return part.assign(method=methods, reads=reads)


def caching_curves(stats: pd.DataFrame) -> pd.DataFrame:
    """Median CPU efficiency and wall time per read kind, access method and RTT (the caching
    section's what-if curves), one row each."""
    return _curves(by_method(ok_points(stats, NAME)))


def _curves(points: pd.DataFrame) -> pd.DataFrame:
    keys = ["reads", "method", "rtt_ms"]
    cols = {"cpu_efficiency_median": "efficiency", "wall_s_median": "wall_s"}
    return points.groupby(keys)[list(cols)].median().rename(columns=cols).reset_index()


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
    staged = break_even_ms(part, STAGE_IN, access_method(XROOTD, None))  # the seeds' own question
    if STAGE_IN in methods and not (best == STAGE_IN).any():
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
    points = by_method(ok_points(stats, NAME))
    curves = _curves(points)
    phrases, evidence, ratios = [], {"floor": floor}, []
    for reads in ("full", "sparse"):
        part = curves[curves["reads"] == reads]
        if part["method"].nunique() < 2:
            continue
        if part["rtt_ms"].nunique() < 2:  # a real site: its own RTT only
            phrase, evidence[reads], found = _one_rtt_phrase(points, reads)
            ratios += found
        else:
            phrase, evidence[reads] = _caching_phrase(curves, reads, floor)
        phrases.append(phrase)
    if not phrases:
        return None
    text = "; ".join(phrases) + "." + single_note(*ratios)
    return Recommendation(NAME, capitalised(text), SECTION.link("caching"), evidence)


def _one_rtt_phrase(points: pd.DataFrame, reads: str) -> tuple[str, dict, list[Ratio]]:
    """At one RTT (a real site's own): each other method's wall over direct reads', with its
    interval; no method named faster or slower where the interval includes no difference."""
    part = points[points["reads"] == reads]
    direct = part[part["method"] == access_method(XROOTD, None)]
    rtt = float(part["rtt_ms"].iloc[0])
    if direct.empty:
        return f"for {reads} reads at {rtt:.3g} ms RTT, no direct reads to compare with", {}, []
    said, evidence, ratios = [], {"rtt_ms": rtt}, []
    for method in sorted(set(part["method"]) - {access_method(XROOTD, None)}):
        r = ratio(part[part["method"] == method], direct)
        same = f" ({NO_DIFFERENCE}{few_runs(r)})" if r.has_interval and not r.differs else ""
        said.append(f"{method} takes {r.text()} the wall time of direct reads{same}")
        evidence[method] = as_evidence(r)
        ratios.append(r)
    return (
        f"for {reads} reads at the site's own RTT ({rtt:.3g} ms), " + "; ".join(said),
        evidence,
        ratios,
    )


SECTION = Section(
    NAME,
    "Site cache and round-trip time",
    (
        "Site cache and round-trip time: direct xrootd, stage-in and an XCache (cold and warm) "
        "across RTTs, for full and sparse reads."
    ),
    Statistics({"reads": "reads", "method": "method", "rtt_ms": "RTT (ms)",
                "rtt_ms_measured_median": "RTT measured (ms, median)", **WALL,
                **EFFICIENCY, "bytes_read_median": "bytes read per job (median)",
                "link_bytes_read_median": "bytes over the link (median)",
                "jobs_ok": "jobs"},
               percent=("cpu_efficiency_median",)),
    figures={"caching": "fig-caching"},
    page=("caching", "caching_table"),
    advice=caching,
    advice_rank=6,
)  # fmt: skip
