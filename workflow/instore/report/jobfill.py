"""The jobs-per-node section's table and figure: CPU efficiency per job and the aggregate event
rate against jobs (and threads) per node."""

from __future__ import annotations

import pandas as pd

from instore.report import show
from instore.report.plots import interval_lines, limit_line, panels
from instore.report.sections import has_runs, statistics_table
from instore.report.view import SiteView
from instore.summary.sections.jobfill import NAME as JOBFILL


def jobfill_table(view: SiteView) -> None:
    """Per-job CPU efficiency and aggregate event rate per fill (the seeds' 1/2/8 jobs table)."""
    if not has_runs(view, JOBFILL):
        return
    table = statistics_table(_with_cores(view.points(JOBFILL)), JOBFILL)
    show.table(table, "Jobs per node: efficiency per job, aggregate event rate (all jobs' events "
               "over the longest job, one value per repetition)", "jobfill_table")  # fmt: skip


def _with_workload(frame: pd.DataFrame) -> pd.DataFrame:
    """A ``workload`` column naming what each job does: protocol and CPU per event (and its
    threads, where the section has jobs of more than one)."""
    labels = [
        f"{p}, {c:g} us CPU/event" for p, c in zip(frame["protocol"], frame["cpu_us"], strict=True)
    ]
    if frame["threads"].nunique() > 1:
        labels = [f"{w}, {t} thread(s)/job" for w, t in zip(labels, frame["threads"], strict=True)]
    return frame.assign(workload=labels)


def _with_cores(frame: pd.DataFrame) -> pd.DataFrame:
    """Threads per job (1 where records predate the axis), how they were used, and the cores a
    point asks of a node: jobs x threads, so 1 job of 2 threads sits beside 2 jobs of 1."""
    threads = frame["threads"].fillna(1).astype(int) if "threads" in frame else 1
    mode = frame["mt_mode"].fillna("") if "mt_mode" in frame else ""
    return frame.assign(threads=threads, mt_mode=mode, cores=frame["fill"] * threads)


def jobfill(view: SiteView) -> None:
    if not has_runs(view, JOBFILL):
        return
    pts = _with_workload(_with_cores(view.points(JOBFILL)))
    style = "cache" if pts["cache"].nunique() > 1 else None
    # jobs of several threads: against the cores asked, so 1 x 2 and 2 x 1 share an x
    x, words = ("cores", "cores asked (jobs x threads)") if pts["threads"].nunique() > 1 else (
        "fill", "concurrent jobs per node")  # fmt: skip
    fig, axes = panels(2)
    interval_lines(axes[0], pts, x, "cpu_efficiency", "workload", style=style)
    axes[0].set(xlabel=words, ylabel="CPU efficiency per job (over wall x threads)", ylim=(0, 1.05))
    interval_lines(axes[1], pts, x, "aggregate_event_rate_hz", "workload", style=style)
    axes[1].set(xlabel=words, ylabel="events/s, all jobs")
    fills = sorted(pts[x].unique())
    for ax in axes:
        ax.set_xticks(fills, [str(f) for f in fills])
    axes[0].legend(fontsize=8)
    limit = pts["limit_event_rate_hz"].median()
    limit_line(axes[1], None if pd.isna(limit) else float(limit), "calibrated limit")
    show.figure(fig, "jobfill", "CPU efficiency per job and aggregate event rate against jobs "
                "per node (median per point; bars: 95% interval over repetitions and jobs, the "
                "aggregate's over repetitions).")  # fmt: skip
