"""The replay section: recorded real analyses replayed closed-loop on the site's storage.

Each point replays one trace (an analysis recorded once on fast storage) over one protocol;
its wall time is the analysis's wall time there, and its predicted CPU efficiency the
recorded CPU time over that wall. The recorded efficiency is the analysis's own where it was
recorded: the best this storage could do is to match it. The replay's wall and efficiency are
medians with their 95% interval over the point's repetitions (and its replays within one).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from instore.report import intervals, show
from instore.report.plots import medians_and_errors, panel_per
from instore.report.sections import page_of, statistics_table
from instore.report.view import SiteView
from instore.summary.sections.replay import NAME as SECTION

SETUP = ["trace", "protocol", "cache_state"]


def _recorded(rows: pd.DataFrame, field: str) -> pd.Series:
    """A figure of the recording (its wall, CPU), from each row's ``recorded`` JSON."""
    return rows["recorded"].map(lambda v: json.loads(v).get(field) if isinstance(v, str) else None)


def medians(rows: pd.DataFrame) -> pd.DataFrame:
    """Per trace, protocol and cache state: the replay's median figures (wall and predicted
    efficiency with their 95% intervals) and the recording's."""
    rows = rows.assign(
        cache_state=rows["cache_state"].fillna("-"),
        recorded_wall_s=_recorded(rows, "wall_s").astype(float),
        recorded_cpu_s=_recorded(rows, "cpu_s").astype(float),
    )
    out = []
    for key, group in rows.groupby(SETUP, dropna=False, sort=True):
        runs = group["point_key"]  # one per repetition
        out.append({
            **dict(zip(SETUP, key, strict=True)),
            **intervals.fields("wall_s", intervals.per_run(group["wall_s"], runs)),
            "recorded_wall_s": group["recorded_wall_s"].median(),
            "cpu_s": group["recorded_cpu_s"].median(),
            **intervals.fields("predicted_cpu_efficiency",
                               intervals.per_run(group["predicted_cpu_efficiency"], runs)),
            "recorded_cpu_efficiency": group["recorded_cpu_efficiency"].median(),
            "mb_read": group["bytes_read"].median() / 1e6,
            "read_calls": group["read_calls"].median(),
            "read_latency_p50_ms": 1e3 * group["read_latency_p50_s"].median(),
            "read_latency_p95_ms": 1e3 * group["read_latency_p95_s"].median(),
            "replays": len(group),
        })  # fmt: skip
    return pd.DataFrame(out)


@page_of(SECTION, lambda view: panel_per(medians(view.rows(SECTION)), "trace", width=5.0))
def replay_efficiency(view: SiteView, fig: Any, per_trace: list) -> None:
    """Predicted CPU efficiency per protocol, one panel per trace, against the recorded one."""
    for ax, trace, part in per_trace:
        labels = [
            p if c == "-" else f"{p} ({c})"
            for p, c in zip(part.protocol, part.cache_state, strict=True)
        ]
        x = np.arange(len(part))
        med, err = medians_and_errors(part, "predicted_cpu_efficiency", 100.0)
        ax.bar(x, med, yerr=err, capsize=3, color="tab:blue", label="replayed here")
        ax.axhline(100 * part["recorded_cpu_efficiency"].median(), color="black", linestyle="--",
                   linewidth=1, label="as recorded")  # fmt: skip
        ax.axhline(80, color="tab:red", linewidth=0.8, label="80%")
        ax.set_xticks(x, labels, rotation=30, ha="right")
        ax.set_ylim(0, 100)
        ax.set_ylabel("predicted CPU efficiency (%)")
        ax.set_title(trace)
        ax.legend(fontsize=7, loc="lower left")
    show.figure(fig, "replay_efficiency", "A recorded analysis's CPU efficiency on this site, "
                "predicted by replaying its reads closed-loop (recorded CPU time over the "
                "replay's wall), per protocol (median, bars: 95% interval); the dashed line is "
                "its efficiency where it was recorded.")  # fmt: skip


@page_of(SECTION)
def replay_table(view: SiteView) -> None:
    table = statistics_table(medians(view.rows(SECTION)), SECTION)
    show.table(table, "Replays per trace and protocol (median, 95% interval)", "replay_table")
