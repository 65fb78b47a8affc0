"""The format advice on synthetic point summaries: RNTuple wins, TTree wins, no data."""

from __future__ import annotations

import numpy as np
import pandas as pd
from instore.summary.recommend import format_advice, format_name

COLUMNS = ["section", "layout", "protocol", "cache_mb", "engine", "jobs_ok", "wall_s_median",
           "cpu_efficiency_median"]  # fmt: skip


def _stats(walls: dict[tuple[str, str, float | None], float], engine: str = "root") -> pd.DataFrame:
    """Point summaries of the format section: (layout, protocol, cache_mb) -> median wall."""
    rows = [
        {"section": "format", "layout": layout, "protocol": protocol, "cache_mb": cache,
         "engine": engine, "jobs_ok": 2, "wall_s_median": wall, "cpu_efficiency_median": 0.5}
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
    assert advice.text.startswith(
        "RNTuple reads this site's data 2.3x faster than TTree over xrootd"
    )
    assert "(elsewhere: RNTuple 1.2x faster over posix)" in advice.text
    assert (
        "keep its cluster cache on: with it off, reads take up to 3.0x as long (over xrootd)"
        in advice.text
    )
    assert advice.figure == "format.html#fig-format-wall"
    assert advice.evidence["ttree_over_rntuple_wall"] == {"posix": 1.2, "xrootd": 2.3}


def test_ttree_wins_and_the_cluster_cache_does_not_matter() -> None:
    stats = _stats({
        ("ordered", "http", None): 1.0, ("rntuple", "http", 0.0): 1.52,
        ("rntuple", "http", None): 1.5, ("rntuple-small", "http", None): 3.0,
    })  # fmt: skip
    advice = format_advice(stats)
    assert advice is not None
    assert advice.text.startswith("TTree reads this site's data 1.5x faster than RNTuple over http")
    assert "elsewhere" not in advice.text
    assert "cluster cache changes wall time by under 10% here" in advice.text


def test_equal_formats_are_said_to_be_equal() -> None:
    stats = _stats({("ordered", "posix", None): 1.0, ("rntuple", "posix", None): 1.05})
    advice = format_advice(stats)
    assert advice is not None and advice.text.startswith("TTree and RNTuple read")
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
