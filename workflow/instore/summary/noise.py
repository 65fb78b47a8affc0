"""How much the machine drifted while a site's study was measured, for a page.

The sweep probes the machine before, between and after its points (instore.sweep.noise, which
documents the probes and the record columns). This module reads them back: the largest drift
of the CPU unit during the sweeps that measured the study's points, the local read's for
information, and the points measured while the CPU unit had drifted more than ``DRIFT_LIMIT``
from the sweep's start (records from before ``noise_cpu_drift`` was kept: ``noise_drift``).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from instore.study.grid import KNOBS, Point
from instore.summary.load import read_section, sections_present

DRIFT_LIMIT = 0.05  # a point measured beyond this drift from the sweep's start is flagged
NOISE_LOG = "noise.jsonl"  # results/<site>/: one probe per line
FLAGGED_COLUMNS = ("section", "point", "repetition", "measured_at", "cpu_drift")
CPU_DRIFT, ANY_DRIFT = "noise_cpu_drift", "noise_drift"  # record columns (instore.sweep.noise)


def read_probes(results: str | Path, site: str) -> pd.DataFrame:
    """Every probe the site's sweeps took (a line torn by a crash is left out)."""
    path = Path(results) / site / NOISE_LOG
    lines = path.read_text().splitlines() if path.is_file() else []
    probes = []
    for line in lines:
        try:
            probes.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return pd.DataFrame.from_records(probes)


def _label(row: pd.Series) -> str:
    """The point's knobs as the sweep names it (``layout=unordered cache_mb=0``)."""
    knobs = {k: row[k] for k in KNOBS if k in row.index and not pd.isna(row[k])}  # NaN: unset
    return Point(section=str(row["section"]), **knobs).label()


class DriftSummary(NamedTuple):
    """The study's largest CPU drift (a fraction; NaN: no probes), the local read's, and the
    points flagged on the CPU drift."""

    max_cpu_drift: float  # the CPU unit's, over probes and records
    flagged: pd.DataFrame  # FLAGGED_COLUMNS, one row per flagged measurement of a point
    probes: int  # probes taken by the sweeps behind the study's records
    max_read_drift: float = math.nan  # the local read's: follows the study's own writes

    def text(self) -> str:
        if math.isnan(self.max_cpu_drift):
            return "No machine-noise probes were recorded for this site (records from before them)."
        n = self.flagged["point"].nunique() if len(self.flagged) else 0
        read = (
            ""
            if math.isnan(self.max_read_drift)
            else f" The 32 MB local read drifted up to {self.max_read_drift:.0%}; it follows "
            "the study's own writes, so it is shown for information and flags nothing."
        )
        return (
            f"The machine's CPU drifted at most {self.max_cpu_drift:.1%} from each sweep's start "
            f"({self.probes} probe(s) of a fixed CPU loop); "
            f"{n} point(s) were measured while it had drifted more than {DRIFT_LIMIT:.0%}"
            + (" (below)." if n else ".")
            + read
        )

    def _repr_html_(self) -> str:
        table = ""
        if len(self.flagged):
            shown = self.flagged.assign(cpu_drift=self.flagged["cpu_drift"].map("{:.1%}".format))
            table = shown.to_html(index=False, border=0)
        return f'<div class="instore-table"><p>{html.escape(self.text())}</p>{table}</div>'


def _largest(values: object) -> float:
    """The largest magnitude among ``values`` (NaN: none known)."""
    numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").abs().dropna()
    return float(numbers.max()) if len(numbers) else math.nan


def drift_summary(results: str | Path, site: str) -> DriftSummary:
    """The drift of the sweeps behind the site's section tables, and the flagged points."""
    root = Path(results)
    frames = [read_section(root, site, s) for s in sections_present(root, site)]
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    column = CPU_DRIFT if CPU_DRIFT in rows else ANY_DRIFT
    if column not in rows or rows[column].isna().all():
        return DriftSummary(math.nan, pd.DataFrame(columns=list(FLAGGED_COLUMNS)), 0)
    drift = pd.to_numeric(rows[column], errors="coerce").abs()
    probes = read_probes(root, site)
    if len(probes):
        probes = probes[probes["sweep"].isin(set(rows["noise_sweep"].dropna()))]
    worst = _largest([*probes.get("cpu_drift", []), *drift])
    read = _largest([*probes.get("read_drift", []), *rows.get("noise_read_drift", [])])
    flagged = rows.assign(cpu_drift=drift)[drift > DRIFT_LIMIT].drop_duplicates("point_key")
    table = pd.DataFrame(
        {
            "section": flagged["section"],
            "point": flagged.apply(_label, axis=1) if len(flagged) else [],
            "repetition": flagged["repetition"],
            "measured_at": flagged["measured_at"],
            "cpu_drift": flagged["cpu_drift"],
        },
        columns=list(FLAGGED_COLUMNS),
    )
    table = table.sort_values("cpu_drift", ascending=False).reset_index(drop=True)
    return DriftSummary(worst, table, len(probes), read)


def probe_figures(results: str | Path, site: str) -> dict[str, tuple[float, float]]:
    """Per probe figure (``cpu_s``, ``read_s``): the median over every probe a site's sweeps
    took and its spread: the median absolute deviation over the median, scaled by 1.4826 to a
    standard deviation's size (robust: one probe caught behind a burst of writes does not make
    the whole run noisy; NaN: fewer than two probes)."""
    probes = read_probes(results, site)
    out = {}
    for column in ("cpu_s", "read_s"):
        values = pd.to_numeric(probes.get(column, pd.Series(dtype=float)), errors="coerce")
        values = values.dropna()
        median = float(values.median()) if len(values) else math.nan
        mad = (values - median).abs().median() if len(values) > 1 else math.nan
        spread = 1.4826 * mad / median if len(values) > 1 else math.nan
        out[column] = (median, float(spread))
    return out


def machine_shift(a: str | Path, b: str | Path, sites: list[str]) -> float:
    """The machine's own noise between two studies: the larger of how much its median CPU
    unit or local read moved from ``a``'s probes to ``b``'s, and how much either run's probes
    spread on their own, over ``sites`` (NaN: no probes in one of them). A change between the
    studies smaller than this cannot be told from the machine's."""
    shifts = []
    for site in sites:
        before, after = probe_figures(a, site), probe_figures(b, site)
        for column in ("cpu_s", "read_s"):
            (m_a, s_a), (m_b, s_b) = before[column], after[column]
            if math.isnan(m_a) or math.isnan(m_b) or m_a <= 0:
                continue
            shifts.append(abs(m_b / m_a - 1))
            shifts.extend(s for s in (s_a, s_b) if not math.isnan(s))
    return max(shifts, default=math.nan)
