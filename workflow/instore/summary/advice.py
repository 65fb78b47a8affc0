"""What every recommendation is made of: the record type, the thresholds, and the evidence
helpers that give each figure and each ratio it quotes its 95% interval.

A recommendation compares points: setups of the same site whose measurements sit in the
summary's ``<metric>_runs`` columns (values per repetition). A side that pools several points
(e.g. every ordered-file point of one protocol) pools their runs, so its interval covers the
spread between those points as well. A ratio whose interval includes 1 names no winner, and a
figure that rests on a single measurement says so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from instore.summary.interval import Interval, Ratio, median_interval, ratio_interval

EFFICIENCY_FLOOR = 0.8  # the seeds' line between a healthy and a starved analysis job
WALL_TOLERANCE = 0.10  # a cache within this much of the best wall time is good enough
NO_DIFFERENCE = "no measurable difference"


@dataclass(frozen=True)
class Recommendation:
    section: str
    text: str
    figure: str
    evidence: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ok_points(stats: pd.DataFrame, section: str) -> pd.DataFrame:
    """A section's points with at least one job that succeeded."""
    part = stats[(stats["section"] == section) & (stats["jobs_ok"] > 0)]
    return part.dropna(subset=["wall_s_median"])


def runs(points: pd.DataFrame, metric: str) -> list[list[float]]:
    """The measurements of ``metric`` in ``points``, one group per repetition of each point;
    a summary without them (written before intervals were) gives each point's median once."""
    column = f"{metric}_runs"
    out: list[list[float]] = []
    for _, row in points.iterrows():
        values = row.get(column)
        if values is not None and not (isinstance(values, float) and math.isnan(values)):
            out.extend([float(v) for v in group] for group in values)
        elif pd.notna(row.get(f"{metric}_median")):
            out.append([float(row[f"{metric}_median"])])
    return out


def figure(points: pd.DataFrame, metric: str) -> Interval:
    """The median of ``metric`` over ``points``' measurements, with its interval."""
    return median_interval(runs(points, metric))


def ratio(a: pd.DataFrame, b: pd.DataFrame, metric: str = "wall_s") -> Ratio:
    """``a``'s median over ``b``'s, with its interval."""
    return ratio_interval(runs(a, metric), runs(b, metric))


def as_evidence(r: Ratio) -> dict[str, float | int | None]:
    """A ratio as the recommendation's evidence keeps it (JSON: NaN as None)."""
    nan_none = lambda v: None if math.isnan(v) else float(v)  # noqa: E731
    return {"ratio": nan_none(r.value), "lo": nan_none(r.lo), "hi": nan_none(r.hi),
            "n": int(r.n_a + r.n_b)}  # fmt: skip


def interval_evidence(interval: Interval) -> dict[str, float | int | str | None]:
    nan_none = lambda v: None if math.isnan(v) else float(v)  # noqa: E731
    return {"median": nan_none(interval.median), "lo": nan_none(interval.lo),
            "hi": nan_none(interval.hi), "n": interval.n, "basis": interval.basis}  # fmt: skip


def single_note(*ratios: Ratio) -> str:
    """A closing note when any quoted ratio rests on a single measurement."""
    return (
        " Some of these figures rest on a single measurement (no interval): repeat the points "
        "(`repetitions` in the study file) before acting on them."
        if any(not r.has_interval for r in ratios)
        else ""
    )


def capitalised(text: str) -> str:
    return text[0].upper() + text[1:] if text else text
