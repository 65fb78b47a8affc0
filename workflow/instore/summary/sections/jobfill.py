"""The job fill section: 1, 2, 4, 8 ... concurrent jobs per node; its advice names the most jobs
per node that keep every job's CPU efficiency above the floor, per workload."""

from __future__ import annotations

import pandas as pd

from instore.summary.advice import (
    EFFICIENCY_FLOOR,
    NO_DIFFERENCE,
    Recommendation,
    as_evidence,
    capitalised,
    figure,
    ok_points,
    ratio,
)
from instore.summary.interval import Ratio
from instore.summary.sections.base import (
    WALL,
    Section,
    Statistics,
)

NAME = "jobfill"


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
    everything = ok_points(stats, NAME)
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
        NAME, capitalised("; ".join(phrases)) + ".", SECTION.link("jobfill"), evidence
    )


SECTION = Section(
    NAME,
    "Jobs per node",
    "Job fill: CPU efficiency per job and aggregate event rate against concurrent jobs per node.",
    Statistics({"fill": "jobs per node", "threads": "threads per job",
                "mt_mode": "threads used by", "cores": "cores asked (jobs x threads)",
                "cpu_us": "CPU per event (us)", "cache": "cache", "layout": "layout",
                "protocol": "protocol", "fixed_time_s": "fixed time (s)",
                "cpu_efficiency_median": "CPU efficiency per job",
                "event_rate_hz_median": "events/s per job",
                "event_rate_of_limit": "events/s per job, share of calibrated",
                "aggregate_event_rate_hz": "events/s, all jobs", **WALL},
               percent=("cpu_efficiency_median", "event_rate_of_limit")),
    figures={
        "jobfill_table": "fig-jobfill-table",
        "jobfill": "fig-jobfill",
    },
    page=("jobfill_table", "jobfill"),
    advice=jobfill,
    advice_rank=4,
)  # fmt: skip
