"""One selection, several analyses: what RDataFrame, uproot and coffea ask of storage for the
same AGC ttbar selection on the same file, and what each gets back on a site, from the replay
section's records (one row per replay; a site's rows or several sites').

The analyses differ only in how they read: RDataFrame through ROOT's TTreeCache (few, large
vector reads), uproot basket by basket through its XRootD source, coffea's NanoEvents column by
column through fsspec-xrootd (the counts branches too). So their bytes, read calls and vector
reads say what each framework's I/O layer does, and their predicted CPU efficiency per site and
protocol what that costs there. Figures that vary between replays (wall, efficiency) are
medians with their 95% interval (``instore.report.intervals``); what a replay sends and the
recording's own figures are the same in every replay, so they stand alone.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any

import pandas as pd

from instore.report import intervals, show
from instore.report.plots import interval_bars, panel_per
from instore.report.view import SiteView
from instore.summary.sections.replay import NAME as SECTION

# The analyses of analyses/ by script, in the order the page shows them; any other recorded
# script is shown under its own name after them.
KNOWN = {"agc_ttbar_rdf": "RDataFrame", "agc_ttbar_uproot": "uproot", "agc_ttbar_coffea": "coffea"}
IO_COLUMNS = {
    "fileset": "file set", "trace": "trace", "analysis": "analysis", "events": "events",
    "mb_read": "MB read", "read_calls": "read calls", "vector_reads": "vector reads",
    "chunks_read": "ranges read", "in_flight_share": "requests recorded in flight with another",
    "streams": "streams replayed side by side", "recorded_wall_s": "wall time recorded (s)",
    "recorded_cpu_s": "CPU time recorded (s)", "recorded_cpu_efficiency": "CPU efficiency recorded",
    "replays": "replays",
}  # fmt: skip
SENT = ("mb_read", "read_calls", "vector_reads", "chunks_read")  # what every replay sent


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
    ranges: what its replays sent, the same in each that completed, so no interval: their
    median with their least and most, ``<m>_min``/``<m>_max``) and how it read (the share of
    its requests recorded while another was in flight, the streams replayed side by side),
    with the recording's wall, CPU and efficiency and how many replays there were."""
    if rows.empty:
        return pd.DataFrame(columns=list(IO_COLUMNS))
    rows = _labelled(rows)
    out = []
    for (fileset, trace), group in rows.groupby(["fileset", "trace"], sort=True):
        total = (group["requests_total"] if "requests_total" in group
                 else _recorded(group, "read_calls")).astype(float)  # fmt: skip
        overlapping = _recorded(group, "overlapping_requests")
        row: dict[str, Any] = {
            "fileset": fileset,
            "trace": trace,
            "analysis": group["analysis"].iloc[0],
            "order": group["order"].iloc[0],
            "events": _recorded(group, "events").median(),
            "in_flight_share": (overlapping / total.where(total > 0)).median(),
            "replays": len(group),
            "streams": group["streams"].median() if "streams" in group else 1,
            "recorded_wall_s": _recorded(group, "wall_s").median(),
            "recorded_cpu_s": _recorded(group, "cpu_s").median(),
            "recorded_cpu_efficiency": group["recorded_cpu_efficiency"].median(),
        }
        for metric, scale in (("bytes_read", 1e-6), ("read_calls", 1), ("vector_reads", 1),
                              ("chunks_read", 1)):  # fmt: skip
            if metric in group:
                name = "mb_read" if metric == "bytes_read" else metric
                values = pd.to_numeric(group[metric], errors="coerce") * scale
                row |= {name: values.median(), f"{name}_min": values.min(),
                        f"{name}_max": values.max()}  # fmt: skip
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
    shown = points.assign(**{m: [_sent(row, m) for _, row in points.iterrows()]
                             for m in SENT if m in points})  # fmt: skip
    shown = shown[[c for c in IO_COLUMNS if c in shown]].rename(columns=IO_COLUMNS)
    show.table(shown, "The same selection in each analysis: what it read (what each replay "
               "sent: the same in every complete one, else their median with the least and "
               "most) and how, as recorded", "replay_analyses_io",
               percent=(IO_COLUMNS["in_flight_share"], IO_COLUMNS["recorded_cpu_efficiency"]))  # fmt: skip


def _sent(row: pd.Series, metric: str) -> str:
    """``139``, or ``139 (120-139)`` when the replays did not all send the same."""
    low, high = row[f"{metric}_min"], row[f"{metric}_max"]
    if pd.isna(row[metric]):
        return ""
    if low == high:
        return show.number(row[metric])
    return f"{show.number(row[metric])} ({show.number(low)}-{show.number(high)})"


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
        ax.set_ylim(0, max(110, 5 + 100 * points["predicted_cpu_efficiency"].max()))
        ax.set(title=site, xlabel="protocol", ylabel="predicted CPU efficiency (%)")
        ax.tick_params(axis="x", labelrotation=30)
    shown = {}  # every analysis once, whichever panel has it
    for ax, _, _ in per_site:
        shown |= dict(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
    labels = [h for h in hue_order if h in shown]
    handles = [shown[label] for label in labels]
    fig.tight_layout()
    fig.legend(
        handles,
        labels,
        title="analysis",
        loc="upper center",
        ncol=len(labels),
        bbox_to_anchor=(0.5, 0.0),
        frameon=False,
    )  # under the panels, never over a bar
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


def site_page(view: SiteView) -> None:
    """The comparison on one site's replay page; nothing where the site has no replays."""
    if SECTION in view.sections:
        page(view.rows(SECTION))


def replay_rows(results: str | Path, sites: list[str] | None = None) -> pd.DataFrame:
    """Every named site's successful replay rows (default: every site with records)."""
    from instore.report.compare import load_all

    rows = load_all(results, sites)
    return rows[(rows["section"] == SECTION) & (rows["status"] == "ok")].reset_index(drop=True)
