"""The replay section: recorded real analyses replayed closed-loop on the site's storage.

Each point replays one trace (an analysis recorded once on fast storage) over one protocol;
its wall time is the analysis's wall time there, and its predicted CPU efficiency the
recorded CPU time over that wall. The recorded efficiency is the analysis's own where it was
recorded: the best this storage could do is to match it.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from instore.report import show
from instore.report.plots import panel_per
from instore.report.sections import _has
from instore.report.view import SiteView

SECTION = "replay"
SETUP = ["trace", "protocol", "cache_state"]


def _recorded(rows: pd.DataFrame, field: str) -> pd.Series:
    """A figure of the recording (its wall, CPU), from each row's ``recorded`` JSON."""
    return rows["recorded"].map(lambda v: json.loads(v).get(field) if isinstance(v, str) else None)


def medians(rows: pd.DataFrame) -> pd.DataFrame:
    """Per trace, protocol and cache state: the replay's median figures and the recording's."""
    rows = rows.assign(
        cache_state=rows["cache_state"].fillna("-"),
        recorded_wall_s=_recorded(rows, "wall_s").astype(float),
        recorded_cpu_s=_recorded(rows, "cpu_s").astype(float),
    )
    return (
        rows.groupby(SETUP, dropna=False)
        .agg(
            wall_s=("wall_s", "median"),
            recorded_wall_s=("recorded_wall_s", "median"),
            cpu_s=("recorded_cpu_s", "median"),
            predicted_cpu_efficiency=("predicted_cpu_efficiency", "median"),
            recorded_cpu_efficiency=("recorded_cpu_efficiency", "median"),
            mb_read=("bytes_read", lambda s: s.median() / 1e6),
            read_calls=("read_calls", "median"),
            read_latency_p50_ms=("read_latency_p50_s", lambda s: 1e3 * s.median()),
            read_latency_p95_ms=("read_latency_p95_s", lambda s: 1e3 * s.median()),
            replays=("wall_s", "size"),
        )
        .reset_index()
    )


def replay_efficiency(view: SiteView) -> None:
    """Predicted CPU efficiency per protocol, one panel per trace, against the recorded one."""
    if not _has(view, SECTION):
        return
    med = medians(view.rows(SECTION))
    fig, per_trace = panel_per(med, "trace", width=5.0)
    for ax, trace, part in per_trace:
        labels = [
            p if c == "-" else f"{p} ({c})"
            for p, c in zip(part.protocol, part.cache_state, strict=True)
        ]
        x = np.arange(len(part))
        ax.bar(x, 100 * part["predicted_cpu_efficiency"], color="tab:blue", label="replayed here")
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
                "replay's wall), per protocol; the dashed line is its efficiency where it was "
                "recorded.")  # fmt: skip


def replay_table(view: SiteView) -> None:
    if not _has(view, SECTION):
        return
    med = medians(view.rows(SECTION)).rename(
        columns={"wall_s": "wall here (s)", "recorded_wall_s": "wall recorded (s)",
                 "cpu_s": "CPU (s)", "predicted_cpu_efficiency": "CPU eff. here",
                 "recorded_cpu_efficiency": "CPU eff. recorded"}
    )  # fmt: skip
    show.table(med, "Replays per trace and protocol (medians)", "replay_table",
               percent=("CPU eff. here", "CPU eff. recorded"))  # fmt: skip
