"""The format advice on synthetic point summaries: RNTuple wins, TTree wins, no data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from instore.summary.sections.format import format_advice, format_name

COLUMNS = ["section", "layout", "protocol", "cache_mb", "engine", "jobs_ok", "wall_s_median",
           "cpu_efficiency_median", "wall_s_runs"]  # fmt: skip


def _stats(
    walls: dict[tuple[str, str, float | None], float],
    engine: str = "root",
    spread: float | None = 0.02,
) -> pd.DataFrame:
    """Point summaries of the format section: (layout, protocol, cache_mb) -> median wall,
    each measured in two runs of two jobs and one of one, ``spread`` apart (None: once)."""
    rows = [
        {"section": "format", "layout": layout, "protocol": protocol, "cache_mb": cache,
         "engine": engine, "jobs_ok": 2, "wall_s_median": wall, "cpu_efficiency_median": 0.5,
         "wall_s_runs": [[wall]] if spread is None else
                        [[wall * (1 - spread), wall * (1 + spread)], [wall], [wall * (1 + spread / 2)]]}
        for (layout, protocol, cache), wall in walls.items()
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def test_rntuple_wins_over_xrootd_and_its_cluster_cache_must_stay_on() -> None:
    stats = _stats({
        ("ordered", "xrootd", 0.0): 9.0, ("ordered", "xrootd", None): 4.6,
        ("rntuple", "xrootd", 0.0): 6.0, ("rntuple", "xrootd", None): 2.0,
        ("ordered", "posix", 0.0): 1.3, ("ordered", "posix", None): 1.2,
        ("rntuple", "posix", 0.0): 1.1, ("rntuple", "posix", None): 1.0,
    })  # fmt: skip
    advice = format_advice(stats)
    assert advice is not None and advice.section == "format"
    assert advice.text.startswith("RNTuple reads 2.3x [2.2")
    assert "faster than TTree over xrootd (format section's files)" in advice.text
    assert "(elsewhere: RNTuple reads 1.2x [1.1" in advice.text
    assert "keep its cluster cache on: with it off, reads take up to 3x [2." in advice.text
    assert "single measurement" not in advice.text
    assert advice.figure == "format.html#fig-format-wall"
    ratios = advice.evidence["ttree_over_rntuple_wall"]
    assert ratios["xrootd"]["ratio"] == pytest.approx(2.3)
    assert ratios["posix"]["ratio"] == pytest.approx(1.2)
    assert ratios["xrootd"]["lo"] > 1 and ratios["xrootd"]["n"] == 8


def test_ttree_wins_and_the_cluster_cache_does_not_matter() -> None:
    stats = _stats({
        ("ordered", "http", None): 1.0, ("rntuple", "http", 0.0): 1.52,
        ("rntuple", "http", None): 1.5, ("rntuple-small", "http", None): 3.0,
    })  # fmt: skip
    advice = format_advice(stats)
    assert advice is not None
    assert advice.text.startswith("TTree reads 1.5x [1.4")
    assert "faster than RNTuple over http" in advice.text
    assert "elsewhere" not in advice.text
    assert "cluster cache changes wall time by under 10% here" in advice.text


def test_equal_formats_are_said_to_be_equal() -> None:
    stats = _stats({("ordered", "posix", None): 1.0, ("rntuple", "posix", None): 1.05}, spread=None)
    advice = format_advice(stats)
    assert advice is not None and advice.text.startswith("TTree and RNTuple read equally fast")
    assert "single measurement" in advice.text  # it says what it rests on
    assert "cluster cache" not in advice.text  # on and off were not both measured


def test_uproot_rows_count_only_when_root_was_not_measured() -> None:
    root = _stats({("ordered", "posix", None): 1.0, ("rntuple", "posix", None): 2.0})
    uproot = _stats({("ordered", "posix", 0.0): 4.0, ("rntuple", "posix", 0.0): 1.0}, "uproot")
    advice = format_advice(pd.concat([root, uproot]))
    assert advice is not None and advice.text.startswith("TTree reads")
    alone = format_advice(uproot)
    assert alone is not None and alone.text.startswith("RNTuple reads")


def test_no_data_no_advice() -> None:
    assert format_advice(_stats({})) is None
    one_format = _stats({("ordered", "posix", None): 1.0, ("ordered", "xrootd", None): 2.0})
    assert format_advice(one_format) is None
    failed = _stats({("ordered", "posix", None): np.nan, ("rntuple", "posix", None): 1.0})
    assert format_advice(failed) is None
    other = _stats({("ordered", "posix", None): 1.0, ("rntuple", "posix", None): 2.0})
    assert format_advice(other.assign(section="layout")) is None  # only the format section


def test_format_name_from_layout() -> None:
    assert [format_name(x) for x in ("ordered", "unordered", "rntuple", "rntuple-small")] == [
        "TTree", "TTree", "RNTuple", "RNTuple"
    ]  # fmt: skip


def test_no_winner_where_the_ratio_s_interval_includes_one() -> None:
    """2.6x apart in median, but each point's runs spread over the other's: no winner."""
    stats = _stats({("ordered", "xrootd", None): 2.6, ("rntuple", "xrootd", None): 1.0}, spread=0.9)
    advice = format_advice(stats)
    assert advice is not None
    assert advice.text.startswith("TTree and RNTuple show no measurable difference over xrootd")
    assert "faster" not in advice.text


def test_the_scale_section_s_largest_files_lead_and_the_format_section_is_named() -> None:
    """Format's 16 MB files say TTree; scale's 1 GB NanoAOD-like files say RNTuple: the advice
    follows the larger files, names the small files' result and says they disagree."""
    small = _stats({("ordered", "xrootd", None): 1.0, ("rntuple", "xrootd", None): 2.6})
    large = _stats({("ordered", "xrootd", None): 4.19, ("rntuple", "xrootd", None): 0.61,
                    ("unordered", "xrootd", None): 9.0})  # fmt: skip
    smaller = _stats({("ordered", "xrootd", None): 1.0, ("rntuple", "xrootd", None): 1.0})
    scale = pd.concat([large.assign(fileset="nano1g", file_size_median=1.0e9),
                       smaller.assign(fileset="nano16", file_size_median=1.6e7)])  # fmt: skip
    advice = format_advice(pd.concat([small, scale.assign(section="scale")]))
    assert advice is not None
    assert advice.text.startswith(
        "On the largest NanoAOD-like files measured (nano1g, scale section), RNTuple reads 6.87x ["
    )
    assert "the format section's small generic files: TTree reads 2.6x [" in advice.text
    assert "the two disagree over xrootd: trust the larger files" in advice.text
    assert advice.evidence["scale_fileset"] == "nano1g"
