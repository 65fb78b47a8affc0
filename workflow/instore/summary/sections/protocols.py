"""The protocols section: posix, stage-in, xrootd, http and fuse on each site; its advice names
the protocol with the best CPU efficiency when its lead over the worst is measurable."""

from __future__ import annotations

import pandas as pd

from instore.payload.specs import compared_points
from instore.summary.advice import (
    NO_DIFFERENCE,
    WALL_TOLERANCE,
    Recommendation,
    as_evidence,
    figure,
    interval_evidence,
    ok_points,
    ratio,
    single_note,
)
from instore.summary.sections.base import (
    EFFICIENCY,
    JOBS,
    MB_S,
    Section,
    Statistics,
    stats_only,
)

NAME = "protocols"


def protocols(stats: pd.DataFrame) -> Recommendation | None:
    """The protocol with the best median CPU efficiency (ROOT engine when it was measured),
    named only when its efficiency over the worst one's has an interval that excludes 1, or,
    from single measurements (no interval), when it leads by more than WALL_TOLERANCE."""
    part = compared_points(ok_points(stats, NAME))
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
    elif not gain.has_interval and abs(gain.value - 1) <= WALL_TOLERANCE:
        text = (f"The protocols' CPU efficiency is within {WALL_TOLERANCE:.0%} of each other, "
                f"too close to name one from single measurements: {figures}.")  # fmt: skip
    else:
        text = f"Use {best} for analysis reads: {figures} ({gain.text()})."
    evidence = {
        "efficiency": {k: float(v) for k, v in eff.items()},
        "best_over_worst": as_evidence(gain),
        "intervals": {p: interval_evidence(i) for p, i in shown.items()},
    }
    return Recommendation(
        NAME, text + single_note(gain), SECTION.link("protocol_efficiency"), evidence
    )


SECTION = Section(
    NAME,
    "Protocols",
    "Protocols: CPU efficiency per protocol and engine on this site.",
    Statistics({"protocol": "protocol", "engine": "engine", "layout": "layout",
                **EFFICIENCY, **MB_S, **JOBS},
               percent=("cpu_efficiency_median", "mb_per_s_of_limit")),
    figures={
        "protocol_table": "fig-protocols-table",
        "protocol_efficiency": "fig-protocols-efficiency",
    },
    page=("protocol_table", "protocol_efficiency"),
    advice=stats_only(protocols),
    advice_rank=0,
)  # fmt: skip
