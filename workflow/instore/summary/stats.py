"""Per-point statistics: medians and spread over the jobs and repetitions of each point.

A point is one combination of knobs; its rows are the jobs of all its repetitions. Failed jobs
are counted, never averaged in. Each rate is also given as a fraction of the site's
calibrated limit, so a figure can say "this is 40% of what the storage can deliver".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from instore.payload.specs import REPLAY_ENGINE
from instore.study.grid import KNOBS
from instore.summary.interval import median_interval
from instore.summary.limits import Limits
from instore.summary.load import counter

METRICS: tuple[str, ...] = (
    "cpu_efficiency", "event_rate_hz", "mb_per_s", "read_calls", "read_amplification",
    "wall_s", "bytes_read", "bytes_wasted", "read_rate_hz", "disk_s", "cache_bytes_effective",
    "open_s", "disk_bytes_read", "disk_amplification", "link_bytes_read", "rtt_ms_measured",
    "disk_reads", "file_size",
)  # fmt: skip
# Figures a page or a recommendation shows: each gets a 95% interval (``_lo``, ``_hi``), the
# measurements it rests on (``_n``), what the bootstrap resampled (``_basis``) and the values
# themselves per repetition (``_runs``), from which a ratio of two points gets its interval.
INTERVAL_METRICS: tuple[str, ...] = ("wall_s", "cpu_efficiency", "mb_per_s", "event_rate_hz")
# A point of the summary: its site, section and knobs (Point's, so none is merged away).
GROUP: tuple[str, ...] = ("site", "section", *KNOBS)


def with_derived(rows: pd.DataFrame) -> pd.DataFrame:
    """Add per-job quantities the records imply: bytes wasted, read rate, disk time, and the
    disk's amplification (what the site's disk read for the whole point, block readahead
    included, over what the point's jobs needed)."""
    out = _replay_as_job(rows.copy())
    out["bytes_wasted"] = out["bytes_read"] - out["bytes_needed"]
    out["read_rate_hz"] = out["read_calls"] / out["wall_s"].where(out["wall_s"] > 0)
    out["disk_s"] = counter(out, "perfstats_disk_s")
    if "disk_bytes_read" not in out:  # real sites, and records from before it was counted
        out["disk_bytes_read"] = np.nan
    out["disk_bytes_read"] = pd.to_numeric(out["disk_bytes_read"], errors="coerce")
    for column in (
        "link_bytes_read",
        "rtt_ms_measured",
        "disk_reads",
        "file_size",
    ):  # not in old records
        out[column] = pd.to_numeric(out.get(column, np.nan), errors="coerce")
    if "threads" in out:  # records from before the threads axis ran one thread
        out["threads"] = pd.to_numeric(out["threads"], errors="coerce").fillna(1).astype(int)
    needed = out.groupby("point_key")["bytes_needed"].transform("sum")
    out["disk_amplification"] = out["disk_bytes_read"] / needed.where(needed > 0)
    return out


# What a job's record holds that a replay's may not (a replay reads byte ranges; its events
# are the recorded job's, when the trace knows them).
_JOB_ONLY = ("bytes_needed", "events", "cpu_efficiency", "event_rate_hz", "mb_per_s",
             "read_amplification", "cache_bytes_effective", "counters")  # fmt: skip


def _replay_as_job(rows: pd.DataFrame) -> pd.DataFrame:
    """Replay rows in a job's terms: the recorded analysis's predicted CPU efficiency is its
    CPU efficiency there, its MB/s what it read over its wall and its event rate the events
    it stands for over that wall (NaN for a trace without events); the rest stays NaN."""
    for column in _JOB_ONLY:
        if column not in rows:
            rows[column] = np.nan
    if "predicted_cpu_efficiency" in rows:
        replay = rows["engine"] == REPLAY_ENGINE
        rows.loc[replay, "cpu_efficiency"] = rows.loc[replay, "predicted_cpu_efficiency"]
        wall = rows.loc[replay, "wall_s"].where(rows.loc[replay, "wall_s"] > 0)
        rows.loc[replay, "mb_per_s"] = rows.loc[replay, "bytes_read"] / 1e6 / wall
        if "events_per_s" in rows:
            rates = pd.to_numeric(rows.loc[replay, "events_per_s"], errors="coerce")
            rows.loc[replay, "event_rate_hz"] = rates
    return rows


def cache_label(value: float | None) -> str:
    """``cache_mb`` as shown on axes: null means ROOT's default cache."""
    if value is None or pd.isna(value):
        return "default"
    return "off" if value == 0 else f"{value:g} MB"


def _aggregate_rates(ok: pd.DataFrame) -> list[float]:
    """HEPiX aggregate per run: events of all its jobs over its longest job."""
    if ok.empty:
        return []
    per_run = ok.groupby("repetition").apply(
        lambda run: run["events"].sum() / run["wall_s"].max(), include_groups=False
    )
    return [float(v) for v in per_run if pd.notna(v)]


def runs_of(ok: pd.DataFrame, metric: str) -> list[list[float]]:
    """A metric's values grouped by repetition (NaN left out), the bootstrap's input."""
    if metric not in ok or ok.empty:
        return []
    values = pd.to_numeric(ok[metric], errors="coerce")
    groups = values.groupby(ok["repetition"], sort=True)
    return [[float(v) for v in g.dropna()] for _, g in groups if g.notna().any()]


def _with_interval(out: dict[str, object], name: str, runs: list[list[float]]) -> None:
    interval = median_interval(runs)
    out[f"{name}_lo"], out[f"{name}_hi"] = interval.lo, interval.hi
    out[f"{name}_n"], out[f"{name}_basis"] = interval.n, interval.basis
    out[f"{name}_runs"] = runs


def _one_point(jobs: pd.DataFrame) -> pd.Series:
    ok = jobs[jobs["status"] == "ok"]
    out: dict[str, object] = {
        "jobs_ok": len(ok),
        "jobs_failed": int((jobs["status"] != "ok").sum()),
        "retries": int((jobs["attempts"] - 1).clip(lower=0).sum()),
        "repetitions": ok["repetition"].nunique(),
        # measured once on purpose: its first run cost more than the profile's expensive_s
        "expensive": bool(jobs["expensive"].fillna(False).astype(bool).any())
        if "expensive" in jobs
        else False,
    }
    aggregate = _aggregate_rates(ok)
    out["aggregate_event_rate_hz"] = float(np.median(aggregate)) if aggregate else np.nan
    # one value per run: the bootstrap resamples the repetitions
    _with_interval(out, "aggregate_event_rate_hz", [[v] for v in aggregate])
    for metric in METRICS:
        values = ok[metric].dropna()
        out[f"{metric}_median"] = values.median() if len(values) else np.nan
        out[f"{metric}_q25"] = values.quantile(0.25) if len(values) else np.nan
        out[f"{metric}_q75"] = values.quantile(0.75) if len(values) else np.nan
    for metric in INTERVAL_METRICS:
        _with_interval(out, metric, runs_of(ok, metric))
    return pd.Series(out)


def _of_limit(stats: pd.DataFrame, rows: pd.DataFrame, limits: Limits) -> pd.DataFrame:
    """Fractions of the calibrated limits (NaN where the site has no calibration)."""
    mbps = stats["protocol"].map(lambda p: limits.throughput(p) or np.nan).astype(float)
    stats["limit_mb_per_s"] = mbps
    stats["mb_per_s_of_limit"] = stats["mb_per_s_median"] / mbps
    bytes_per_event = (rows["bytes_needed"] / rows["events"].where(rows["events"] > 0)).median()
    stats["limit_event_rate_hz"] = mbps * 1e6 / bytes_per_event
    stats["event_rate_of_limit"] = stats["event_rate_hz_median"] / stats["limit_event_rate_hz"]
    iops = limits.read_iops if limits.read_iops else np.nan
    stats["limit_read_rate_hz"] = iops
    stats["read_rate_of_limit"] = stats["read_rate_hz_median"] / iops
    return stats


def point_stats(rows: pd.DataFrame, limits: Limits | None = None) -> pd.DataFrame:
    """One row per (site, section, knobs): counts, medians, quartiles and limit fractions."""
    full = with_derived(rows)
    keys = [k for k in GROUP if k in full.columns]
    stats = (
        full.groupby(keys, dropna=False, sort=True)
        .apply(_one_point, include_groups=False)
        .reset_index()
    )
    stats["cache"] = stats["cache_mb"].map(cache_label)
    return _of_limit(stats, full[full["status"] == "ok"], limits or Limits())
