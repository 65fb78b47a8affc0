"""The format page, advice and comparison table on synthetic records: the fixture's real
protocol rows relabelled as a format section (TTree ordered and RNTuple, cache off and on)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from instore.report import compare, show
from instore.report import format as rf
from instore.report.command import NOTEBOOKS
from instore.report.execute import error_outputs, execute, render
from instore.report.view import SiteView
from instore.summary.command import recommendations_path, summarize, write

from tests.unit.data.records import SITES, rows, write_results

RNTUPLE_SPEEDUP = 2.0  # synthetic: RNTuple reads twice as fast as TTree
CACHE_OFF_SLOWDOWN = 3.0  # synthetic: cache off takes three times as long


def _variant(base: pd.DataFrame, layout: str, cache_mb: float | None) -> pd.DataFrame:
    """The base rows as a format point: wall (and so rates) scaled by format and cache."""
    scale = (1 / RNTUPLE_SPEEDUP if layout.startswith("rntuple") else 1.0) * (
        CACHE_OFF_SLOWDOWN if cache_mb == 0 else 1.0
    )
    out = base.copy()
    out["section"], out["layout"], out["cache_mb"] = "format", layout, cache_mb
    out["format"] = "rntuple" if layout.startswith("rntuple") else "ttree"
    for col in ("wall_s", "outer_wall_s"):
        out[col] = out[col] * scale
    for col in ("mb_per_s", "event_rate_hz"):
        out[col] = out[col] / scale
    out["cpu_efficiency"] = (out["cpu_efficiency"] / scale).clip(upper=1)
    out["read_calls"] = out["read_calls"] * (40 if cache_mb == 0 else 1)
    out["point_key"] = [f"fmt-{layout}-{cache_mb}-{k}" for k in out["point_key"]]
    return out


def format_rows(site: str = SITES[0]) -> pd.DataFrame:
    """Format-section rows for ``site`` from its protocol rows over posix and xrootd."""
    base = rows().query("site == @site and section == 'protocols'")
    base = base[base["protocol"].isin(["posix", "xrootd"]) & (base["status"] == "ok")]
    parts = [_variant(base, lay, c) for lay in ("ordered", "rntuple") for c in (0.0, None)]
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame = pd.concat([rows(), *(format_rows(s) for s in SITES)], ignore_index=True)
    out = write_results(tmp_path_factory.mktemp("format") / "results", frame)
    for site in SITES:
        write(out, site, *summarize(out, site))
    return out


def test_format_notebook_draws_its_figures_and_table(results: Path, tmp_path: Path) -> None:
    executed = execute(NOTEBOOKS / "section.ipynb", tmp_path / "format.ipynb",
                       {"site": SITES[0], "results": str(results), "section": "format"})  # fmt: skip
    assert error_outputs(executed) == []
    page = render(executed, tmp_path / "format.html").read_text()
    for anchor in ("fig-format-wall", "fig-format-throughput", "fig-format-ratio",
                   "fig-format-table"):  # fmt: skip
        assert f'id="{anchor}"' in page
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,', page)) == 3
    assert "File format: TTree and RNTuple" in page
    assert "cluster cache for RNTuple" in page
    assert "SiteView.load" not in page


def test_summary_carries_the_format_advice(results: Path) -> None:
    recs = json.loads(recommendations_path(results, SITES[0]).read_text())
    advice = [r for r in recs if r["section"] == "format"]
    assert len(advice) == 1
    assert advice[0]["text"].startswith("RNTuple reads 2x faster than TTree over posix")
    assert "(from a single measurement)" in advice[0]["text"]  # the records hold one run each
    assert "keep its cluster cache on" in advice[0]["text"]
    assert advice[0]["figure"] == "format.html#fig-format-wall"


def test_speedup_per_protocol_and_cache_state(results: Path) -> None:
    ratio = rf.speedup(SiteView.load(SITES[0], results).points("format"))
    root = ratio[ratio["engine"] == "root"]
    assert set(root["protocol"]) == {"posix", "xrootd"}
    assert set(root["cache_state"]) == {"cache off", "cache on"}
    assert root["ttree_over_rntuple"].round(6).eq(RNTUPLE_SPEEDUP).all()
    assert set(ratio.loc[ratio["engine"] == "uproot", "cache_state"]) == {"no client cache"}


def test_compare_has_a_format_table_per_site_and_protocol(results: Path) -> None:
    table = compare.format_table(compare.load_summaries(results))
    assert set(table["site"]) == set(SITES)
    assert set(table["protocol"]) == {"posix", "xrootd"}
    assert table["speedup"].round(6).eq(RNTUPLE_SPEEDUP).all()
    empty = compare.format_table(compare.load_summaries(results).query("section != 'format'"))
    assert empty.empty


def test_failed_points_are_shown_as_not_available_with_their_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = format_rows()
    broken = frame["protocol"] == "xrootd"
    frame.loc[broken, "status"] = "failed"
    frame.loc[broken, "error"] = "InstoreError: the endpoint refused\nsecond line"
    results = write_results(tmp_path, frame)
    write(results, SITES[0], *summarize(results, SITES[0]))
    shown: list[str] = []
    monkeypatch.setattr(show, "_display", shown.append)
    view = SiteView.load(SITES[0], results)
    rf.format_wall(view)
    rf.format_failures(view)
    assert any(m.startswith("<figure") for m in shown)  # posix still drawn
    failed = [m for m in shown if "Not available" in m]
    assert failed and "InstoreError: the endpoint refused" in failed[0]
    assert "second line" not in failed[0]


def test_throughput_marks_each_protocols_calibrated_limit(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.axes
    from instore.summary.limits import Limits

    marks: list[tuple[float, float, float]] = []
    real = matplotlib.axes.Axes.hlines

    def spy(self, y, xmin, xmax, *args, **kwargs):
        marks.append((y, xmin, xmax))
        return real(self, y, xmin, xmax, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "hlines", spy)
    monkeypatch.setattr(show, "_display", lambda _: None)
    view = SiteView.load(SITES[0], results)
    view.limits = Limits({"posix": 120.0, "xrootd": 80.0})
    rf.format_throughput(view)
    assert sorted(y for y, _, _ in marks) == [80.0, 120.0]


def test_a_site_the_format_section_left_out_gets_a_note_not_an_error(
    results: Path, tmp_path: Path
) -> None:
    """A section limited to other sites (`sites:` in its grid) leaves this site an empty
    table; its page says nothing was recorded instead of failing the report."""
    import shutil

    from instore.summary.load import section_path

    copy = shutil.copytree(results, tmp_path / "results")
    pd.DataFrame().to_parquet(section_path(copy, SITES[0], "format"))
    write(copy, SITES[0], *summarize(copy, SITES[0]))
    executed = execute(NOTEBOOKS / "section.ipynb", tmp_path / "format.ipynb",
                       {"site": SITES[0], "results": str(copy), "section": "format"})  # fmt: skip
    assert error_outputs(executed) == []
    page = render(executed, tmp_path / "format.html").read_text()
    assert f"No successful runs were recorded for format on {SITES[0]}" in page
