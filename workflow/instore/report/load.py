"""The load, scheduler and filesystem sections: many replay clients at once, and what gave out first.

Each point is N replays of one recorded analysis started together on one node. From its rows:
aggregate throughput (all clients' bytes over the span they ran) and events per second (their
events likewise, where the trace knows the job's events), HEPiX's figure where the point ran
in fixed-time mode (the events all clients processed in that time), the clients' predicted CPU
efficiency, open and read latencies, failures; from the counters read around the point
(site.usage): the host's CPU, the XRootD server's and the link emulator's shares of it, the
disk's requests and MB/s against its limits, and the link's use of its rate. A resource counts
as saturated at 80% of its limit; the one nearest its limit at a point is named.

A point's repetitions are runs of it (each its own ``point_key``): a figure of the whole run
(throughput, events, a resource's use) has one value per run, and its interval resamples the
runs; a figure of a client (efficiency, read latency) has one value per client, and its
interval resamples the runs and their clients. A point run once gets an interval over its
clients for the per-client figures; its per-run figures rest on one measurement.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from instore.report import intervals, show
from instore.report.plots import interval_lines, medians_and_errors, panels
from instore.report.sections import has_runs, statistics_table
from instore.report.view import SiteView
from instore.site.loadguard import STOP_COLUMN
from instore.study.grid import KNOBS
from instore.summary.sections import Statistics
from instore.summary.sections.load import NAME as LOAD

SATURATED = 0.8  # a resource at 80% of its limit or more counts as saturated
SLOW_OPEN_MS = 1000.0  # opens this slow (p95) with no resource saturated are named
EFFICIENT = 0.8  # the CPU efficiency a site admin wants jobs at
SETUP = ["trace", "protocol", "io_scheduler", "filesystem"]
DISK_KNOBS = ("io_scheduler", "filesystem")  # "site's" where a point leaves the site's own
SITES_OWN = "site's"
# resource -> how its utilisation is read from a point's first row and the site's limits
RESOURCES = ("host CPU", "XRootD server CPU", "link emulator CPU", "disk IOPS",
             "disk bandwidth", "I/O stall", "link")  # fmt: skip
# Rates the counters give over the whole point (launch included), rescaled to the span the
# replays ran (their reads happen only then); CPU shares stay over the whole point, since
# launching the clients costs CPU too.
ACTIVE_RATES = ("disk_iops", "disk_mb_per_s", "link_utilisation", "io_stall")


def _limits(rows: pd.DataFrame) -> dict[str, float | None]:
    """The emulated disk's IOPS and MB/s limits, from the conditions the sweep recorded."""
    cond = rows["conditions"].dropna()
    disk = json.loads(cond.iloc[-1]).get("emulation", {}).get("disk", {}) if len(cond) else {}
    return {"read_iops": disk.get("read_iops"), "read_mbps": disk.get("read_mbps")}


def utilisation(point: pd.Series, limits: dict[str, Any]) -> dict[str, float]:
    """Each resource's use at one point, as a fraction of what it can give (NaN: not seen)."""

    def num(column: str) -> float:
        value = point.get(column)
        return float(value) if value is not None and pd.notna(value) else np.nan

    def ratio(column: str, limit: Any) -> float:
        return num(column) / float(limit) if limit else np.nan

    return {
        "host CPU": num("host_cpu_busy"),
        "XRootD server CPU": num("xrootd_cpu_share"),
        "link emulator CPU": num("delay_cpu_share"),  # NaN: a site without a delayer
        "disk IOPS": ratio("disk_iops", limits["read_iops"]),
        "disk bandwidth": ratio("disk_mb_per_s", limits["read_mbps"]),
        "I/O stall": num("io_stall"),
        "link": num("link_utilisation"),
    }


def active_span(group: pd.DataFrame) -> float:
    """From the first replay's start to the last one's end (seconds)."""
    start = pd.to_datetime(group["start_time"], utc=True)
    end = start + pd.to_timedelta(group["wall_s"], unit="s")
    return (end.max() - start.min()).total_seconds()


def _rescaled(first: pd.Series, group: pd.DataFrame) -> pd.Series:
    span, window = active_span(group), first.get("usage_wall_s")
    if not (pd.notna(window) and span > 0):
        return first
    scaled = first.copy()
    for col in ACTIVE_RATES:
        if col in scaled and scaled[col] is not None and pd.notna(scaled[col]):
            scaled[col] = float(scaled[col]) * float(window) / span
    return scaled


def _numbers(group: pd.DataFrame, column: str) -> pd.Series:
    """A numeric column of the rows; NaN where absent (records from before it was recorded)."""
    if column not in group:
        return pd.Series(np.nan, index=group.index)
    return pd.to_numeric(group[column], errors="coerce")


def _events(ok: pd.DataFrame, span: float, fixed_time_s: Any) -> dict[str, float]:
    """All clients' events per second over the span they ran (as their throughput); in
    fixed-time mode HEPiX's figure too, the events they processed in that time (NaN: not
    known, or not a fixed-time point)."""
    events = float(_numbers(ok, "events").sum(min_count=1))
    fixed = float(fixed_time_s) if pd.notna(fixed_time_s) and float(fixed_time_s) > 0 else np.nan
    return {
        "aggregate_events_per_s": events / span if span > 0 else np.nan,
        "fixed_time_s": fixed,
        "events_in_fixed_time": events if pd.notna(fixed) else np.nan,
    }


def _first_number(first: pd.Series, column: str) -> float:
    """A point-wide counter from its first row (NaN where not recorded: real sites, older
    records)."""
    value = first.get(column)
    return float(value) if value is not None and pd.notna(value) else np.nan


def bottleneck(use: dict[str, float]) -> str:
    """The resource nearest its limit: named as saturated at 80% or more; below that no
    resource is full, and the clients wait on round trips and queues (the nearest is named)."""
    seen = {k: v for k, v in use.items() if pd.notna(v)}
    if not seen:
        return "unknown (no counters)"
    name = max(seen, key=seen.__getitem__)
    if seen[name] >= SATURATED:
        return f"{name} ({seen[name]:.0%})"
    return f"none at 80%; nearest: {name} ({seen[name]:.0%})"


def _run(group: pd.DataFrame, limits: dict[str, Any]) -> dict[str, Any]:
    """One run of a point (one ``point_key``): its figures of the whole run."""
    first = group.iloc[0]
    ok = group[group["status"] == "ok"]
    wall = active_span(ok) if len(ok) else np.nan
    use = utilisation(_rescaled(first, ok if len(ok) else group), limits)
    return {
        "failed": int((group["status"] != "ok").sum()),
        "aggregate_mb_per_s": float(ok["bytes_read"].sum()) / 1e6 / wall if wall > 0 else np.nan,
        **_events(ok, wall, first.get("fixed_time_s")),
        **{f"use: {k}": v for k, v in use.items()},
        "accept_queue_overflows": _first_number(first, "listen_overflows"),
    }


# Figures of a whole run (one value per run) and of a client (rows' column, scale to ms).
PER_RUN = ("aggregate_mb_per_s", "aggregate_events_per_s", "events_in_fixed_time",
           *(f"use: {r}" for r in RESOURCES))  # fmt: skip
PER_CLIENT = {"cpu_efficiency": ("predicted_cpu_efficiency", 1.0),
              "read_p50_ms": ("read_latency_p50_s", 1e3),
              "read_p95_ms": ("read_latency_p95_s", 1e3)}  # fmt: skip


def _point(group: pd.DataFrame, limits: dict[str, Any]) -> dict[str, Any]:
    """One point: its runs' figures with their intervals, its clients' likewise."""
    first = group.iloc[0]
    ok = group[group["status"] == "ok"]
    runs = pd.DataFrame([_run(g, limits) for _, g in group.groupby("point_key", sort=True)])
    row: dict[str, Any] = {c: first[c] for c in SETUP}
    row.update(clients=int(first["jobs"]), repetitions=len(runs), failed=int(runs["failed"].sum()))
    for name in PER_RUN:
        row.update(intervals.fields(name, [[v] for v in runs[name]]))
    fixed = runs["fixed_time_s"].dropna()
    row["fixed_time_s"] = float(fixed.iloc[0]) if len(fixed) else np.nan
    for name, (column, scale) in PER_CLIENT.items():
        row.update(intervals.fields(name, intervals.per_run(_numbers(ok, column) * scale,
                                                            ok["point_key"])))  # fmt: skip
    row["cpu_efficiency_median"] = row.pop("cpu_efficiency")
    row.update(
        cpu_efficiency_worst=float(ok["predicted_cpu_efficiency"].min()),
        open_p50_ms=1e3 * float(ok["open_s"].quantile(0.5)),
        open_p95_ms=1e3 * float(ok["open_s"].quantile(0.95)),
        read_p99_ms=1e3 * float(ok["read_latency_p99_s"].max()),
        accept_queue_overflows=float(runs["accept_queue_overflows"].median()),
    )
    use = {r: row[f"use: {r}"] for r in RESOURCES}
    row["saturated"] = bottleneck(use)
    if row["saturated"].startswith("none at") and row["open_p95_ms"] > SLOW_OPEN_MS:
        row["saturated"] += f"; opens slow (p95 {row['open_p95_ms'] / 1e3:.1f} s"
        lost = row["accept_queue_overflows"]
        full = pd.notna(lost) and lost > 0
        row["saturated"] += f", server's accept queue full {lost:.0f} times)" if full else ")"
    return row


def points(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per point (its knobs; its repetitions together): clients, throughput,
    efficiency, latencies, failures, the resources' utilisation and the one that saturated;
    each median figure with its 95% interval (``_lo``, ``_hi``, ``_n``, ``_basis``)."""
    limits = _limits(rows)
    rows = rows.assign(**{k: rows[k].fillna(SITES_OWN) if k in rows else SITES_OWN
                          for k in DISK_KNOBS})  # fmt: skip
    if "threads" in rows:  # records from before the threads axis: one thread
        rows = rows.assign(threads=rows["threads"].fillna(1))
    keys = [k for k in (*KNOBS, "jobs") if k in rows.columns]
    frame = pd.DataFrame(
        [_point(group, limits) for _, group in rows.groupby(keys, dropna=False, sort=False)]
    )
    return frame.sort_values([*SETUP, "clients"]).reset_index(drop=True) if len(frame) else frame


def setup_label(setup: tuple[Any, ...]) -> str:
    """``agc-load, xrootd, bfq scheduler``: the trace and protocol (``SETUP``'s order), and a
    disk knob where the point set one (not the site's own)."""
    values = dict(zip(SETUP, setup, strict=True))
    parts = [str(values.get("trace")), str(values.get("protocol"))]
    if values.get("io_scheduler", SITES_OWN) != SITES_OWN:
        parts.append(f"{values['io_scheduler']} scheduler")
    if values.get("filesystem", SITES_OWN) != SITES_OWN:
        parts.append(str(values["filesystem"]))
    return ", ".join(parts)


def capacity(table: pd.DataFrame) -> pd.DataFrame:
    """Per setup: the most clients measured at a median efficiency of 80% or more, the first
    load below it and what saturated there."""
    out = []
    for setup, group in table.groupby(SETUP, dropna=False):
        good = group[group["cpu_efficiency_median"] >= EFFICIENT]
        bad = group[group["cpu_efficiency_median"] < EFFICIENT]
        first_bad = bad.iloc[0] if len(bad) else None
        out.append({
            **dict(zip(SETUP, setup, strict=True)),
            "clients at >= 80% efficiency": int(good["clients"].max()) if len(good) else 0,
            "first load under 80%": int(first_bad["clients"]) if first_bad is not None else None,
            "saturated there": first_bad["saturated"] if first_bad is not None else "-",
        })  # fmt: skip
    return pd.DataFrame(out)


def _section_points(view: SiteView, section: str) -> pd.DataFrame:
    table = points(view.rows(section, ok_only=False))
    labels = [setup_label(s) for s in table[SETUP].itertuples(index=False, name=None)]
    return table.assign(setup=labels)


def load_curves(view: SiteView, section: str = LOAD) -> None:
    """Throughput, efficiency and read latency against clients, one line per setup."""
    if not has_runs(view, section):
        return
    table = _section_points(view, section)
    fig, axes = panels(3, width=4.2)
    for ax, metric, scale in ((axes[0], "aggregate_mb_per_s", 1.0),
                              (axes[1], "cpu_efficiency", 100.0),
                              (axes[2], "read_p95_ms", 1.0)):  # fmt: skip
        interval_lines(ax, table, "clients", metric, "setup", scale=scale)
    axes[1].axhline(100 * EFFICIENT, color="tab:red", linewidth=0.8)
    for ax, ylabel in zip(axes, ("aggregate MB/s", "median predicted CPU efficiency (%)",
                                 "read latency p95 (ms, median client)"), strict=True):  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent clients")
        ax.set_ylabel(ylabel)
    axes[2].set_yscale("log")
    axes[0].legend(fontsize=7)
    show.figure(fig, f"{section}_curves", "Replays of a recorded analysis started together: "
                "what all clients read per second, their median predicted CPU efficiency (the "
                "red line is 80%) and their reads' 95th-percentile latency (median client); "
                "bars: 95% interval (throughput over the point's runs; efficiency and latency "
                "over its runs and clients).")  # fmt: skip


def load_saturation(view: SiteView, section: str = LOAD) -> None:
    """Each resource's use against clients: the one that reaches its limit first."""
    if not has_runs(view, section):
        return
    table = _section_points(view, section)
    setups = list(table.groupby("setup", sort=False))
    fig, axes = panels(len(setups), width=4.5)
    for ax, (setup, part) in zip(axes, setups, strict=True):
        for name in RESOURCES:
            col = f"use: {name}"
            if part[col].notna().any():
                med, err = medians_and_errors(part, col, 100.0)
                ax.errorbar(part["clients"], med, yerr=err, marker="o", capsize=3, label=name)
        ax.axhline(100 * SATURATED, color="black", linewidth=0.8, linestyle="--")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent clients")
        ax.set_ylabel("use of its limit (%)")
        ax.set_title(setup, fontsize=9)
        ax.legend(fontsize=7)
    show.figure(fig, f"{section}_saturation", "How close each resource came to its limit "
                "(host CPU: all cores busy; server and emulator CPU: their share of the host; "
                "disk: the emulated spindle's IOPS and MB/s limits; link: its rate). Above the "
                "dashed line a resource counts as saturated. Median of the point's runs; bars: "
                "95% interval over them (none for a point run once).")  # fmt: skip


# The setup's words (a disk knob only where a point set it); the per-point statistics are the
# section registry's (``instore.summary.sections``), each resource's use of its limit this page's.
SETUP_WORDS = {"trace": "trace", "protocol": "protocol", "io_scheduler": "I/O scheduler",
               "filesystem": "file system"}  # fmt: skip
USE = Statistics(
    {"clients": "clients", **{f"use: {r}": f"{r}, share of its limit" for r in RESOURCES},
     "saturated": "nearest its limit", "accept_queue_overflows": "server's accept queue full (times)"},
    percent=tuple(f"use: {r}" for r in RESOURCES),
    optional=("accept_queue_overflows", *(f"use: {r}" for r in RESOURCES)),
)  # fmt: skip


def _setup(table: pd.DataFrame) -> dict[str, str]:
    return {k: v for k, v in SETUP_WORDS.items() if (table[k] != SITES_OWN).any()}


def _use(table: pd.DataFrame) -> dict[str, str]:
    """The setup and each resource's use, a counter only where some point has it."""
    return {**_setup(table), **USE.shown(table)}


def ramp_stops(rows: pd.DataFrame) -> list[str]:
    """Where the load ramp stopped and why (the sweep's stop rule, instore.sweep.ramp), one
    line per setup that tripped it (none: it ran to its end)."""
    if STOP_COLUMN not in rows:
        return []
    return sorted(set(rows[STOP_COLUMN].dropna()), key=lambda text: (len(text), text))


def ramp_note(view: SiteView, section: str = LOAD) -> None:
    """The page's word on the ramp's stop: where, why, and what was not measured."""
    for stop in ramp_stops(view.rows(section, ok_only=False)):
        show.note(f"The ramp {stop}: the site's load limits (its site file's `load:`) were "
                  "exceeded there, so no point with as many clients or more was measured.")  # fmt: skip


def load_table(view: SiteView, section: str = LOAD) -> None:
    if not has_runs(view, section):
        return
    ramp_note(view, section)
    table = _section_points(view, section)
    cap = capacity(table)
    cap = cap[[*_setup(cap), *cap.columns[len(SETUP) :]]]
    show.table(cap.rename(columns=SETUP_WORDS), "How many such jobs the site serves at 80% CPU "
               "efficiency (median client)", f"{section}_capacity")  # fmt: skip
    show.table(statistics_table(table, section, before=_setup(table)), "Per point: clients, "
               "throughput (MB/s, events/s; in fixed-time mode HEPiX's events processed by all "
               "clients in that time), efficiency, latencies and failures; median with its 95% "
               "interval", f"{section}_table")  # fmt: skip
    show.table(intervals.table(table, _use(table), USE.percent), "Per point: each resource's "
               "use of its limit and the one nearest it (median of the runs, 95% interval)")  # fmt: skip
