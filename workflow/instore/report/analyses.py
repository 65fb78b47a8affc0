"""One selection, several analyses: what RDataFrame, uproot and coffea ask of storage for the
same AGC ttbar selection on the same file, and what each gets back on a site, from the replay
section's records (one row per replay; a site's rows or several sites').

The analyses differ only in how they read: RDataFrame through ROOT's TTreeCache (few, large
vector reads), uproot basket by basket through its XRootD source, coffea's NanoEvents column by
column through fsspec-xrootd (the counts branches too). So their bytes, read calls and vector
reads say what each framework's I/O layer does, and their predicted CPU efficiency per site and
protocol what that costs there. Figures that vary between replays are medians with their 95%
interval (``instore.report.intervals``); a recording's own figures are the same in every replay.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any

import pandas as pd

from instore.report import intervals, show
from instore.report.plots import interval_bars, panel_per

# The analyses of analyses/ by script, in the order the page shows them; any other recorded
# script is shown under its own name after them.
KNOWN = {"agc_ttbar_rdf": "RDataFrame", "agc_ttbar_uproot": "uproot", "agc_ttbar_coffea": "coffea"}
IO_COLUMNS = {
    "fileset": "file set", "trace": "trace", "analysis": "analysis", "events": "events",
    "mb_read": "MB read", "read_calls": "read calls", "vector_reads": "vector reads",
    "chunks_read": "ranges read", "in_flight_share": "requests recorded in flight with another",
    "streams": "streams replayed side by side", "recorded_wall_s": "wall time recorded (s)",
    "recorded_cpu_s": "CPU time recorded (s)", "recorded_cpu_efficiency": "CPU efficiency recorded",
}  # fmt: skip


def analysis_of(command: Any, trace: str) -> str:
    """The framework behind a trace, from its recorded command (the script it ran); the
    trace's name when the command names no known script."""
    argv = json.loads(command) if isinstance(command, str) else command
    for arg in argv or []:
        stem = PurePath(str(arg)).stem
        if stem in KNOWN:
            return KNOWN[stem]
    return trace


def _recorded(rows: pd.DataFrame, field: str) -> pd.Series:
    return rows["recorded"].map(
        lambda v: json.loads(v).get(field) if isinstance(v, str) else None
    ).astype(float)  # fmt: skip


def _labelled(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows with their analysis, cache state spelled out and the order to show them in."""
    command = rows["command"] if "command" in rows else pd.Series(None, index=rows.index)
    analysis = [analysis_of(c, t) for c, t in zip(command, rows["trace"], strict=True)]
    order = {name: i for i, name in enumerate(KNOWN.values())}
    return rows.assign(
        analysis=analysis,
        order=[order.get(a, len(order)) for a in analysis],
        cache_state=rows["cache_state"].fillna("-") if "cache_state" in rows else "-",
        fileset=rows["fileset"].fillna("default") if "fileset" in rows else "default",
    )


def io_points(rows: pd.DataFrame) -> pd.DataFrame:
    """Per file set and trace: what the analysis read (bytes, read calls, vector reads,
    ranges; medians over its replays with their intervals) and how it read (the share of its
    requests recorded while another was in flight, the streams replayed side by side), with
    the recording's wall, CPU and efficiency."""
    if rows.empty:
        return pd.DataFrame(columns=list(IO_COLUMNS))
    rows = _labelled(rows)
    out = []
    for (fileset, trace), group in rows.groupby(["fileset", "trace"], sort=True):
        runs = group["point_key"]
        calls = _recorded(group, "read_calls")
        overlapping = _recorded(group, "overlapping_requests")
        row: dict[str, Any] = {
            "fileset": fileset,
            "trace": trace,
            "analysis": group["analysis"].iloc[0],
            "order": group["order"].iloc[0],
            "events": _recorded(group, "events").median(),
            "in_flight_share": (overlapping / calls.where(calls > 0)).median(),
            "streams": group["streams"].median() if "streams" in group else 1,
            "recorded_wall_s": _recorded(group, "wall_s").median(),
            "recorded_cpu_s": _recorded(group, "cpu_s").median(),
            "recorded_cpu_efficiency": group["recorded_cpu_efficiency"].median(),
        }
        for metric, scale in (("bytes_read", 1e-6), ("read_calls", 1), ("vector_reads", 1),
                              ("chunks_read", 1)):  # fmt: skip
            if metric in group:
                name = "mb_read" if metric == "bytes_read" else metric
                row.update(intervals.fields(name, intervals.per_run(group[metric] * scale, runs)))
        out.append(row)
    return pd.DataFrame(out).sort_values(["fileset", "order", "trace"]).reset_index(drop=True)


def efficiency_points(rows: pd.DataFrame) -> pd.DataFrame:
    """Per site, protocol, XCache state and trace: the predicted CPU efficiency (median over
    the point's replays, 95% interval over its repetitions)."""
    keys = ["site", "protocol", "cache_state", "fileset", "trace"]
    if rows.empty:
        return pd.DataFrame(columns=[*keys, "analysis", "predicted_cpu_efficiency"])
    rows = _labelled(rows)
    out = []
    for key, group in rows.groupby(keys, sort=True, dropna=False):
        out.append({
            **dict(zip(keys, key, strict=True)),
            "analysis": group["analysis"].iloc[0], "order": group["order"].iloc[0],
            **intervals.fields("predicted_cpu_efficiency",
                               intervals.per_run(group["predicted_cpu_efficiency"],
                                                 group["point_key"])),
        })  # fmt: skip
    return pd.DataFrame(out).sort_values([*keys[:4], "order"]).reset_index(drop=True)


def efficiency_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per site, protocol and XCache state, one column per analysis: its predicted
    CPU efficiency, ``median [low, high]``."""
    points = efficiency_points(rows)
    if points.empty:
        return pd.DataFrame()
    points = points.assign(cell=[
        intervals.text(intervals.of(row, "predicted_cpu_efficiency"), percent=True)
        for _, row in points.iterrows()
    ])  # fmt: skip
    columns = list(dict.fromkeys(points.sort_values("order")["analysis"]))
    table = points.pivot_table(index=["site", "fileset", "protocol", "cache_state"],
                               columns="analysis", values="cell", aggfunc="first", sort=True)  # fmt: skip
    table = table.reindex(columns=columns).fillna("").reset_index()
    table.columns.name = None
    return table.rename(columns={"fileset": "file set", "cache_state": "XCache"})


def io_table(rows: pd.DataFrame) -> None:
    """The analyses' I/O side by side (the page's first table)."""
    points = io_points(rows)
    if points.empty:
        show.note("No replay records: nothing to compare.")
        return
    shown = intervals.table(points, IO_COLUMNS, ("in_flight_share", "recorded_cpu_efficiency"))
    show.table(shown, "The same selection in each analysis: what it read (median over its "
               "replays, 95% interval) and how, as recorded", "replay_analyses_io")  # fmt: skip


def efficiency_compare(rows: pd.DataFrame) -> None:
    """Each analysis's predicted CPU efficiency per site and protocol, as a table."""
    table = efficiency_table(rows)
    if table.empty:
        return
    show.table(table, "Predicted CPU efficiency of each analysis per site and protocol "
               "(median, 95% interval)", "replay_analyses_efficiency")  # fmt: skip


def efficiency_figure(rows: pd.DataFrame) -> None:
    """One panel per site: bars per protocol, one per analysis, with their intervals."""
    points = efficiency_points(rows)
    if points.empty:
        return
    points = points.assign(setup=[p if c == "-" else f"{p} ({c})"
                                  for p, c in zip(points.protocol, points.cache_state,
                                                  strict=True)])  # fmt: skip
    hue_order = list(dict.fromkeys(points.sort_values("order")["analysis"]))
    fig, per_site = panel_per(points, "site", width=5.5)
    for ax, site, part in per_site:
        interval_bars(ax, part, "setup", "predicted_cpu_efficiency", "analysis",
                      hue_order=[h for h in hue_order if h in set(part["analysis"])], scale=100)  # fmt: skip
        ax.set_ylim(0, 110)
        ax.set(title=site, xlabel="protocol", ylabel="predicted CPU efficiency (%)")
        ax.tick_params(axis="x", labelrotation=30)
        ax.legend(fontsize=7, loc="lower left")
    show.figure(fig, "replay_analyses_efficiency_figure", "The same selection in each "
                "analysis: its CPU efficiency per protocol, predicted by replaying its reads "
                "(median, bars: 95% interval).")  # fmt: skip


def page(rows: pd.DataFrame) -> None:
    """The comparison as a page's part: a heading, the I/O table, the efficiency table and
    figure (the replay page gives it one site's rows, the cross-site page every site's)."""
    if rows.empty or "trace" not in rows:
        return
    names = list(dict.fromkeys(_labelled(rows).sort_values("order")["analysis"]))
    show.heading(f"One selection, {len(names)} analyses: {', '.join(names)}")
    io_table(rows)
    efficiency_compare(rows)
    efficiency_figure(rows)


def replay_rows(results: str | Path, sites: list[str] | None = None) -> pd.DataFrame:
    """Every named site's successful replay rows (default: every site with records)."""
    from instore.report.compare import load_all

    rows = load_all(results, sites)
    return rows[(rows["section"] == "replay") & (rows["status"] == "ok")].reset_index(drop=True)
