"""Recommendations quote intervals: a winner is named only when the ratio's interval excludes
1, and advice from a single measurement says so."""

from __future__ import annotations

import pandas as pd
from instore.summary.sections.jobfill import jobfill
from instore.summary.sections.layout import layout
from instore.summary.sections.protocols import protocols


def _point(section: str, runs: list[list[float]], metric: str, **knobs: object) -> dict:
    values = sorted(v for run in runs for v in run)
    return {"section": section, "jobs_ok": len(values), "wall_s_median": 1.0,
            f"{metric}_median": values[len(values) // 2], f"{metric}_runs": runs,
            "engine": "root", **knobs}  # fmt: skip


def test_protocol_advice_names_no_winner_when_the_intervals_overlap() -> None:
    stats = pd.DataFrame([
        _point("protocols", [[0.80, 0.95], [0.70]], "cpu_efficiency", protocol="xrootd"),
        _point("protocols", [[0.78, 0.90], [0.82]], "cpu_efficiency", protocol="http"),
    ])  # fmt: skip
    advice = protocols(stats)
    assert advice is not None
    assert advice.text.startswith("The protocols show no measurable difference in CPU efficiency")
    assert "Use " not in advice.text and advice.evidence["best_over_worst"]["lo"] < 1


def test_protocol_advice_names_the_winner_with_intervals() -> None:
    stats = pd.DataFrame([
        _point("protocols", [[0.90, 0.91], [0.92]], "cpu_efficiency", protocol="xrootd"),
        _point("protocols", [[0.40, 0.41], [0.42]], "cpu_efficiency", protocol="http"),
    ])  # fmt: skip
    advice = protocols(stats)
    assert advice is not None
    assert advice.text.startswith("Use xrootd for analysis reads: median CPU efficiency 91% [90%")
    assert "41% [40%" in advice.text and "single measurement" not in advice.text


def test_protocol_advice_names_no_winner_from_single_measurements_that_nearly_agree() -> None:
    """The quick profile on a grid site (2026-11-28) advised "Use http for analysis reads:
    median CPU efficiency 98% with http, 98% with xrootd (1x (single measurements, no
    interval))": a winner named by a ratio of 1 measured once each."""
    close = pd.DataFrame([
        _point("protocols", [[0.981]], "cpu_efficiency", protocol="http"),
        _point("protocols", [[0.978]], "cpu_efficiency", protocol="xrootd"),
    ])  # fmt: skip
    advice = protocols(close)
    assert advice is not None and "Use " not in advice.text
    assert advice.text.startswith("The protocols' CPU efficiency is within 10% of each other")
    apart = pd.DataFrame([
        _point("protocols", [[0.90]], "cpu_efficiency", protocol="xrootd"),
        _point("protocols", [[0.45]], "cpu_efficiency", protocol="http"),
    ])  # fmt: skip
    named = protocols(apart)
    assert named is not None and named.text.startswith("Use xrootd for analysis reads")
    assert "single measurement" in named.text


def test_layout_advice_from_single_measurements_says_so() -> None:
    stats = pd.DataFrame([
        _point("layout", [[12.4]], "wall_s", layout="unordered", cache="off"),
        _point("layout", [[1.0]], "wall_s", layout="ordered", cache="off"),
    ]).assign(wall_s_median=[12.4, 1.0])  # fmt: skip
    advice = layout(stats)
    assert advice is not None and advice.text.startswith("Write files ordered")
    assert "with the cache off, unordered files take 12.4x (single measurements, no interval)" in (
        advice.text
    )
    assert "rest on a single measurement" in advice.text


def test_jobfill_advice_quotes_each_efficiency_with_its_interval() -> None:
    stats = pd.DataFrame([
        _point("jobfill", [[0.95, 0.96], [0.94]], "cpu_efficiency", fill=1),
        _point("jobfill", [[0.60, 0.62], [0.61]], "cpu_efficiency", fill=4),
    ])  # fmt: skip
    advice = jobfill(stats, floor=0.8)
    assert advice is not None
    assert advice.text.startswith(
        "Run at most 1 job per node: at 4 jobs CPU efficiency drops to 61% [6"
    )
