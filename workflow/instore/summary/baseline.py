"""Before and after: two runs' point summaries side by side, point by point.

A site admin changes a setting and sweeps again; what they want to know is which points got
faster, which slower, and which only moved within the noise. Points are matched on their site,
section and every knob (``stats.GROUP``), so results of different study files are compared
where their points coincide and the rest is listed, never dropped. Each change is run B's
median over run A's, with the bootstrap interval of that ratio taken from the values each run
recorded per repetition (the summary's ``<metric>_runs`` columns); it is named only when the
interval excludes 1 and the change exceeds the machine's noise (``interval.change``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from instore.errors import InstoreError
from instore.study.grid import KEYED_IF_SET, KNOBS, Point

# a ratio without an interval names no change: it says "one measurement"
from instore.summary.interval import ONE_MEASUREMENT, Ratio, change, ratio_interval
from instore.summary.stats import GROUP


@dataclass(frozen=True)
class Figure:
    """One figure compared: its summary column, its name in words, and which way is good."""

    metric: str
    words: str
    higher_is_better: bool


COMPARED: tuple[Figure, ...] = (
    Figure("wall_s", "wall time", False),
    Figure("cpu_efficiency", "CPU efficiency", True),
    Figure("event_rate_hz", "events/s", True),
)
# The machine's CPU drift while a point was measured, a fraction (instore.sweep.noise writes it
# with each record; results.with_noise carries the largest of a point's jobs into its summary).
# A change counts only when it exceeds the drift of both points it compares. The CPU unit's, not
# ``noise_drift`` (which also holds the local-read probe): in the reference study of 2026-11-26
# the local read drifted 28-82% with the study's own writes while the CPU unit stayed within 6%,
# so a threshold from it would have called every change unchanged.
NOISE_COLUMN = "noise_cpu_drift"
BOTH, ONLY_A, ONLY_B = "both", "only in A", "only in B"
NOT_MEASURED = "not measured"  # no successful job of the point in a run
MIXED = "mixed"
REPETITIONS_FIX = (
    "set `repetitions: 3` (or more) in the study file's profile (or the section's grid) and "
    "sweep both runs again; a point with several jobs gets an interval from its jobs too"
)


def _value(value: Any) -> Any:
    """A knob's value as matched and shown: NaN and None alike, whole floats as ints."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def keys(frame: pd.DataFrame) -> pd.Series:
    """Each point's identity: its GROUP values (a knob a run's summary lacks counts as unset,
    and so does a knob added later at its default: 1 thread matches a run from before threads)."""
    columns = [c if c in frame else None for c in GROUP]
    return pd.Series(
        [
            tuple(_key_value(c, row[c]) if c else None for c in columns)
            for _, row in frame.iterrows()
        ],
        index=frame.index,
        dtype=object,
    )


def _key_value(column: str, value: Any) -> Any:
    value = _value(value)
    if column in KEYED_IF_SET and value == getattr(Point(section=""), column):
        return None
    return value


_FIELDS = {f.name for f in fields(Point)}


def label(row: pd.Series) -> str:
    """The knobs a point sets away from their defaults, as ``Point.label`` says them."""
    knobs = {k: _value(row[k]) for k in KNOBS if k in row and k in _FIELDS}
    knobs = {k: v for k, v in knobs.items() if v is not None}  # unset: the default
    return Point(section=str(row.get("section", "")), **knobs).label()


@dataclass(frozen=True)
class Match:
    """Two runs' points, paired where they coincide (``a`` and ``b`` row for row)."""

    a: pd.DataFrame
    b: pd.DataFrame
    only_a: pd.DataFrame
    only_b: pd.DataFrame


def match(a: pd.DataFrame, b: pd.DataFrame) -> Match:
    """Pair the points both runs measured; keep the others apart."""
    ka, kb = keys(a), keys(b)
    index_b = {key: i for i, key in zip(kb.index, kb, strict=True)}
    pairs = [(i, index_b[key]) for i, key in zip(ka.index, ka, strict=True) if key in index_b]
    in_a, in_b = [i for i, _ in pairs], [j for _, j in pairs]
    return Match(
        a=a.loc[in_a].reset_index(drop=True),
        b=b.loc[in_b].reset_index(drop=True),
        only_a=a.drop(index=in_a).reset_index(drop=True),
        only_b=b.drop(index=in_b).reset_index(drop=True),
    )


def groups(cell: Any) -> list[list[float]]:
    """A ``_runs`` cell (lists from pandas, arrays from Parquet, NaN when absent) as lists."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return []
    return [[float(v) for v in run] for run in cell]


def _runs(frame: pd.DataFrame, metric: str, row: int) -> list[list[float]]:
    column = f"{metric}_runs"
    if column not in frame:
        raise InstoreError(
            f"the summary has no {column} column (it was written before per-repetition "
            "values were kept)",
            "rerun `instore summarize --site SITE --results DIR` on that results directory",
        )
    return groups(frame[column].iloc[row])


def verdict(ratio: Ratio, figure: Figure, noise: float) -> str:
    """faster, slower, unchanged; ``one measurement`` when the ratio has no interval, ``not
    measured`` when a run has no successful job of the point."""
    if math.isnan(ratio.value):
        return NOT_MEASURED
    if not ratio.has_interval:
        return ONE_MEASUREMENT
    return change(ratio, noise, figure.higher_is_better)


def overall(changes: Iterable[str]) -> str:
    """One word for a point: the direction its figures agree on, ``mixed`` when they differ."""
    seen = set(changes)
    moved = seen & {"faster", "slower"}
    if len(moved) == 2:
        return MIXED
    if moved:
        return moved.pop()
    for word in ("unchanged", ONE_MEASUREMENT):
        if word in seen:
            return word
    return NOT_MEASURED


def _identity(frame: pd.DataFrame, present: str) -> pd.DataFrame:
    out = pd.DataFrame({c: frame.get(c) for c in GROUP}, index=frame.index)
    out.insert(2, "point", [label(r) for _, r in frame.iterrows()])
    out.insert(3, "present", present)
    return out


def point_noise(a: pd.DataFrame, b: pd.DataFrame, given: float = 0.0) -> np.ndarray:
    """Per paired point, the noise a change must exceed: ``given``, or the larger drift
    either run recorded for it, whichever is larger."""
    noise = np.full(len(a), float(given))
    for side in (a, b):
        if NOISE_COLUMN in side:
            recorded = pd.to_numeric(side[NOISE_COLUMN], errors="coerce").abs().to_numpy()
            noise = np.fmax(noise, recorded)
    return noise


def compare(a: pd.DataFrame, b: pd.DataFrame, noise: float = 0.0) -> pd.DataFrame:
    """Per point in both runs: for each compared figure, B over A with its 95% interval and
    its change (beyond ``point_noise``); then the points only one run has. Sorted by the size
    of the largest change."""
    pairs = match(a, b)
    if pairs.a.empty:
        differ = "; ".join(unmatched(a, b)[:4])
        raise InstoreError(
            f"the two runs have no point in common ({len(a)} points in A, {len(b)} in B: "
            f"no site, section and knobs match; {differ})",
            "compare results of the same site and study sections, or see `instore compare "
            "--help` for what a point is matched on",
        )
    out = _identity(pairs.a, BOTH)
    out["noise"] = point_noise(pairs.a, pairs.b, noise)
    size = np.zeros(len(out))
    for figure in COMPARED:
        m = figure.metric
        ratios = [
            ratio_interval(_runs(pairs.b, m, i), _runs(pairs.a, m, i)) for i in range(len(out))
        ]
        out[f"{m}_after_before"] = [r.value for r in ratios]
        out[f"{m}_lo"] = [r.lo for r in ratios]
        out[f"{m}_hi"] = [r.hi for r in ratios]
        out[f"{m}_change"] = [
            verdict(r, figure, n) for r, n in zip(ratios, out["noise"], strict=True)
        ]
        out[f"{m}_n_before"] = [r.n_b for r in ratios]
        out[f"{m}_n_after"] = [r.n_a for r in ratios]
        logs = np.abs(np.log(np.array([r.value for r in ratios], dtype=float)))
        size = np.fmax(size, np.nan_to_num(logs, nan=0.0, posinf=0.0))
    out.insert(4, "change", [overall(out.loc[i, [f"{f.metric}_change" for f in COMPARED]])
                             for i in out.index])  # fmt: skip
    out = out.assign(_size=size).sort_values("_size", ascending=False, kind="stable")
    rest = [_identity(pairs.only_a, ONLY_A), _identity(pairs.only_b, ONLY_B)]
    table = pd.concat([out.drop(columns="_size"), *[r for r in rest if not r.empty]])
    return table.reset_index(drop=True)


def without_interval(table: pd.DataFrame) -> pd.DataFrame:
    """The compared points whose figures rest on a single measurement in a run."""
    both = table[table["present"] == BOTH]
    return both[both["change"] == ONE_MEASUREMENT]


def require_intervals(table: pd.DataFrame) -> None:
    """Fail when no point in common can be judged: each rests on a single measurement in a
    run, or has no successful job in one."""
    both = table[table["present"] == BOTH]
    if both["change"].isin([ONE_MEASUREMENT, NOT_MEASURED]).all():
        if (both["change"] == ONE_MEASUREMENT).any():
            raise InstoreError(
                f"every point in common ({len(both)}) rests on a single measurement in a run "
                "(or was not measured), so its ratio after/before has no interval and names "
                "no change",
                REPETITIONS_FIX,
            )
        raise InstoreError(
            f"no point in common ({len(both)}) has a successful job in both runs",
            "see why the jobs failed (the `error` column of the section tables) and sweep again",
        )


def unmatched(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """What one run has and the other has not: sites, sections and knob values, in words."""
    lines = []
    for column in GROUP:
        va = {_value(v) for v in a[column]} if column in a else {None}
        vb = {_value(v) for v in b[column]} if column in b else {None}
        for name, mine, theirs in (("A", va, vb), ("B", vb, va)):
            extra = sorted(mine - theirs, key=str)
            if extra:
                shown = ", ".join("unset" if v is None else str(v) for v in extra)
                lines.append(f"{column} {shown}: only in {name}")
    return lines


def ratio_text(value: float, lo: float, hi: float, verdict_word: str) -> str:
    """``1.25 [1.22, 1.28] slower``; a ratio without an interval says it rests on one
    measurement."""
    if math.isnan(value):
        return NOT_MEASURED
    if math.isnan(lo) or math.isnan(hi):
        return f"{_ratio(value)} ({ONE_MEASUREMENT}; no interval)"
    return f"{_ratio(value)} [{_ratio(lo)}, {_ratio(hi)}] {verdict_word}"


def _ratio(value: float) -> str:
    """Two decimals (1.00, 1.25), so a ratio of one reads as one; tiny ratios in 2 digits."""
    return f"{value:.2f}" if abs(value) >= 0.1 else f"{value:.2g}"


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison with headers in words and one cell per figure, for people."""
    out = pd.DataFrame(
        {
            "site": table["site"],
            "section": table["section"],
            "point": table["point"],
            "change": table["change"].where(table["present"] == BOTH, table["present"]),
        }
    )
    for figure in COMPARED:
        m = figure.metric
        header = f"{figure.words} after/before [95% interval]"
        if f"{m}_after_before" not in table:
            out[header] = ""
            continue
        out[header] = [
            ratio_text(r[f"{m}_after_before"], r[f"{m}_lo"], r[f"{m}_hi"], r[f"{m}_change"])
            if r["present"] == BOTH
            else "-"
            for _, r in table.iterrows()
        ]
    return out
