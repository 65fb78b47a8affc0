"""``instore compare RESULTS_A RESULTS_B``: what got faster, slower or stayed within the noise
between two runs of the study (a baseline A, and B after a site changed a setting)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from instore.errors import InstoreError
from instore.study.runs import results_of
from instore.summary import baseline
from instore.summary.baseline import NOISE_COLUMN
from instore.summary.results import DEFAULT_NOISE, compare_dirs
from instore.summary.stats import GROUP

DESCRIPTION = (
    "Compare two results directories point by point: A (before, e.g. a baseline) and B "
    "(after). Points are matched on site, section and every knob ("
    + ", ".join(GROUP[2:])
    + "). For each point both runs measured it gives B's median over A's of "
    + ", ".join(f"{f.words} ({f.metric})" for f in baseline.COMPARED)
    + ", with the 95% bootstrap interval of that ratio from each run's repetitions and jobs, "
    "and marks it faster, slower or unchanged: a change is named only when its interval "
    "excludes 1 and it exceeds the machine noise. Rows are sorted by the size of the change; "
    "points only one run has, and the sites, sections and knob values that did not match, "
    "are listed after. Each run's summary.parquet is read when current, else computed from "
    "its section tables as `instore summarize` does."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="two results directories point by point: faster, slower or unchanged (B over A)",
        description=DESCRIPTION,
    )
    p.add_argument("results_a", type=results_of, metavar="RESULTS_A",
                   help="before (the baseline): a results directory, or a run's label "
                   "(results/runs/LABEL, `make study CONFIG=run=LABEL`)")  # fmt: skip
    p.add_argument("results_b", type=results_of, metavar="RESULTS_B",
                   help="after: a results directory, or a run's label")  # fmt: skip
    p.add_argument("--site", help="compare this site only (default: every site both have)")
    p.add_argument(
        "--out", type=Path, help="also write the comparison, one row per point: .csv or .parquet"
    )
    p.add_argument(
        "--noise",
        type=float,
        default=DEFAULT_NOISE,
        metavar="FRACTION",
        help="the machine's drift: smaller changes count as unchanged (default "
        f"{DEFAULT_NOISE:g}, the variation the machine-noise probes count as a quiet machine's; "
        "0 names every change whose interval excludes 1). "
        f"Where a point's records carry a larger `{NOISE_COLUMN}` (the sweep's machine-noise "
        "probes) in either run, that is its noise",
    )
    p.set_defaults(func=run)


def noise_text(table: pd.DataFrame, given: float) -> str:
    """Where the noise each change had to exceed came from."""
    both = table[table["present"] == baseline.BOTH]
    shift = table.attrs.get("machine_shift", math.nan)
    text = f"{given:.1%} (--noise)"
    recorded = both["noise"][both["noise"] > given + 1e-12]
    if len(recorded):
        text += (
            f", or the {NOISE_COLUMN} recorded with the point where larger "
            f"({len(recorded)} of {len(both)} points, up to {recorded.max():.1%})"
        )
    if not math.isnan(shift):
        text += (f"; the machine's own probes moved {shift:.1%} between the runs (for "
                 "information: a short sweep has too few probes to make it a threshold)")  # fmt: skip
    return text


def text_table(frame: pd.DataFrame) -> str:
    """Left-aligned columns, headers in words."""
    cells = [list(frame.columns), *[[str(v) for v in row] for row in frame.itertuples(index=False)]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(frame.columns))]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def write(table: pd.DataFrame, out: Path) -> None:
    if out.suffix not in (".csv", ".parquet"):
        raise InstoreError(f"--out {out}: unknown suffix", "name a .csv or a .parquet file")
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".csv":
        table.to_csv(out, index=False)
    else:
        table.to_parquet(out, index=False)


def report(table: pd.DataFrame, notes: list[str]) -> str:
    """The comparison as printed: a headline, the points in common, then what did not match."""
    both = table[table["present"] == baseline.BOTH]
    counts = both["change"].value_counts()
    words = ", ".join(f"{counts[w]} {w}" for w in counts.index)
    shown = baseline.readable(both)
    if shown["site"].nunique() == 1:
        shown = shown.drop(columns="site")
    lines = [f"{len(both)} points in common: {words}", "", text_table(shown)]
    single = baseline.without_interval(table)
    if len(single):
        lines += ["", f"{len(single)} point(s) rest on a single measurement in a run, so their "
                  f"ratio has no interval -- {baseline.REPETITIONS_FIX}"]  # fmt: skip
    for present in (baseline.ONLY_A, baseline.ONLY_B):
        part = table[table["present"] == present]
        if len(part):
            lines += ["", f"Points {present} (not compared): {len(part)}"]
            lines += [f"  {r.site} {r.section}: {r.point}" for r in part.itertuples()]
    if notes:
        lines += ["", "Did not match: " + "; ".join(notes)]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.noise < 0:
        raise InstoreError(f"--noise {args.noise}: negative", "give a fraction such as 0.05")
    table, notes = compare_dirs(args.results_a, args.results_b, args.site, args.noise)
    print(
        f"instore compare: A (before) {args.results_a}, B (after) {args.results_b}; a change "
        f"counts when its 95% interval excludes 1 and it exceeds the noise: "
        f"{noise_text(table, args.noise)}"
    )
    print(report(table, notes))
    if args.out:
        write(table, args.out)
        print(f"instore compare: {len(table)} rows -> {args.out}")
    return 0
