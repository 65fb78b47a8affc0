"""What a reader of a page sees of a figure's uncertainty: each per-point median in a table as
``median [low, high]`` with the measurements it rests on (or "one measurement"), headers in
words, and the same intervals drawn as error bars; on the summary-based pages and on the load,
replay and scale pages that compute theirs from records."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from instore.report import intervals, load, replay, scale, sections, show
from instore.report.view import SiteView
from instore.summary.command import summarize, write
from instore.summary.interval import Interval

from tests.unit.data.records import rows, write_results
from tests.unit.test_load_report import _rows as load_rows

SITE = "fixture-cold"
NOISE = (0.9, 1.0, 1.15)  # three repetitions of one point, its wall scaled by these


def _cells(markup: str) -> tuple[list[str], list[list[str]]]:
    """A shown table's header and rows as text."""
    found = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, re.S)
             for r in re.findall(r"<tr[^>]*>(.*?)</tr>", markup, re.S)]  # fmt: skip
    text = [[html.unescape(re.sub("<[^>]+>", "", c)).strip() for c in r] for r in found]
    return text[0], text[1:]


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> SiteView:
    """The fixture's layout section with its ordered, cache-off point measured three times
    (one job each) and the by-branch points once."""
    layout = rows().query("site == @SITE and section == 'layout' and repetition == 0")
    point = layout[(layout["layout"] == "ordered") & (layout["cache_mb"] == 0)]
    repeated = [point.assign(repetition=i, wall_s=point["wall_s"] * f,
                             point_key=point["point_key"] + f"-{i}") for i, f in enumerate(NOISE)]  # fmt: skip
    frame = pd.concat([layout.drop(point.index), *repeated, rows().query("site == @SITE and section == 'protocols'")])  # fmt: skip
    results = write_results(tmp_path_factory.mktemp("intervals") / "results", frame)
    write(results, SITE, *summarize(results, SITE))
    return SiteView.load(SITE, results)


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    out: list[str] = []
    monkeypatch.setattr(show, "_display", out.append)
    return out


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    out: list[object] = []
    monkeypatch.setattr(show, "figure", lambda fig, key, caption: out.append(fig))
    return out


def test_a_point_measured_three_times_shows_its_interval_and_one_measured_once_says_so(
    view: SiteView, shown: list[str]
) -> None:
    sections.layout_table(view)
    head, body = _cells(shown[-1])
    wall = head.index("wall time (s), median [95% interval]")
    n = head.index("n (resampled over)")
    by = {(r[head.index("layout")], r[head.index("cache")]): r for r in body}
    repeated = by[("ordered", "off")]
    walls = rows().query("site == @SITE and section == 'layout' and layout == 'ordered'")
    base = float(walls[(walls["cache_mb"] == 0) & (walls["repetition"] == 0)]["wall_s"].iloc[0])
    lo, hi = (float(v) for v in re.fullmatch(r"[\d.]+ \[([\d.]+), ([\d.]+)\]", repeated[wall]).groups())  # fmt: skip
    assert float(repeated[wall].split()[0]) == pytest.approx(base, rel=1e-2)  # the middle run
    assert base * 0.9 <= lo * 1.001 and hi <= base * 1.15 * 1.001 and lo < hi
    assert repeated[n] == "3 (repetitions)"
    once = by[("by-branch", "off")]
    assert once[wall].endswith("(one measurement)") and once[n] == "1"
    assert not [h for h in head if "_" in h]  # headers in words


def test_a_point_measured_once_because_it_was_expensive_is_labelled_so(
    tmp_path: Path, shown: list[str]
) -> None:
    layout = rows().query("site == @SITE and section == 'layout' and repetition == 0")
    costly = (layout["layout"] == "unordered") & (layout["cache_mb"] == 0)
    results = write_results(tmp_path / "results", layout.assign(expensive=costly))
    write(results, SITE, *summarize(results, SITE))
    view = SiteView.load(SITE, results)
    assert view.points("layout")["expensive"].sum() == 1
    sections.layout_table(view)
    head, body = _cells(shown[-1])
    notes = {(r[head.index("layout")], r[head.index("cache")]): r[head.index(intervals.EXPENSIVE)]
             for r in body}  # fmt: skip
    assert notes.pop(("unordered", "off")) == intervals.EXPENSIVE_NOTE
    assert set(notes.values()) == {""}


def test_each_section_page_says_once_what_the_interval_is(view: SiteView, shown: list[str]) -> None:
    sections.header(view, "layout")
    assert sum(intervals.SENTENCE in html.unescape(m) for m in shown) == 1
    shown.clear()
    sections.header(view, "overview")  # no per-point figure there
    assert not any(intervals.SENTENCE in html.unescape(m) for m in shown)


def _error_bars(ax: object) -> list[tuple[float, float]]:
    """Each error bar drawn on ``ax`` as (low, high)."""
    from matplotlib.container import ErrorbarContainer

    out = []
    for bars in ax.containers:  # type: ignore[attr-defined]
        if isinstance(bars, ErrorbarContainer) and bars.lines[2]:
            for seg in bars.lines[2][0].get_segments():
                if len(seg):  # a point without an interval draws an empty segment
                    out.append((float(seg[0][1]), float(seg[1][1])))
    return out


def test_the_plots_draw_the_points_intervals_as_error_bars(
    view: SiteView, figures: list[object]
) -> None:
    sections.layout_wall(view)
    wall_ax = figures[-1].axes[0]  # type: ignore[attr-defined]
    point = view.points("layout").query("layout == 'ordered' and cache == 'off'").iloc[0]
    drawn = _error_bars(wall_ax)
    # the point measured three times has its interval drawn; those measured once have none
    assert drawn == [(pytest.approx(point["wall_s_lo"]), pytest.approx(point["wall_s_hi"]))]


def test_interval_lines_pass_the_interval_to_matplotlib() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from instore.report.plots import interval_lines, panels

    points = pd.DataFrame({"fill": [1, 2], "who": "a", "cpu_efficiency_median": [0.9, 0.5],
                           "cpu_efficiency_lo": [0.8, np.nan], "cpu_efficiency_hi": [0.95, np.nan]})  # fmt: skip
    _fig, (ax,) = panels(1)
    interval_lines(ax, points, "fill", "cpu_efficiency", "who", scale=100)
    # the second point was measured once: no bar
    assert _error_bars(ax) == [(pytest.approx(80.0), pytest.approx(95.0))]


def test_a_figure_is_written_one_way() -> None:
    assert intervals.text(Interval(1.234, 1.1, 1.4, 6, "jobs")) == "1.23 [1.1, 1.4]"
    assert intervals.text(Interval(0.62, np.nan, np.nan, 1, "one measurement")) == (
        "0.62 (one measurement)"
    )
    assert intervals.text(Interval(0.853, 0.8, 0.9, 3, "repetitions"), percent=True) == (
        "85% [80%, 90%]"
    )
    assert intervals.text(Interval(1052.0, 980.0, 1130.0, 3, "repetitions")) == (
        "1,052 [980, 1,130]"
    )
    assert intervals.count(Interval(1.0, 0.9, 1.1, 6, "repetitions and jobs")) == (
        "6 (repetitions and jobs)"
    )


def _load_rows(scheduler: str | None) -> pd.DataFrame:
    """A load section: 1 and 16 clients, each point run three times."""
    rng = np.random.default_rng(3)
    parts = []
    for rep in range(3):
        for clients, eff in ((1, 0.95), (16, 0.5)):
            part = load_rows(clients, eff, 50.0, 0.01).assign(
                repetition=rep, point_key=f"p{clients}-{rep}", io_scheduler=scheduler,
                wall_s=2.0 * rng.uniform(0.9, 1.1, clients),
                predicted_cpu_efficiency=eff * rng.uniform(0.9, 1.05, clients),
            )  # fmt: skip
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


class LoadView:
    """Just what the load page reads of a site."""

    site = "x"

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.sections = ["load"]

    def rows(self, section: str, ok_only: bool = True) -> pd.DataFrame:
        return self.frame

    def points(self, section: str) -> pd.DataFrame:
        return pd.DataFrame({"jobs_ok": [1]})


def test_load_points_take_their_repetitions_together_with_intervals() -> None:
    table = load.points(_load_rows(None))
    assert list(table["clients"]) == [1, 16] and list(table["repetitions"]) == [3, 3]
    one = table.iloc[1]
    assert one["aggregate_mb_per_s_lo"] <= one["aggregate_mb_per_s"] <= one["aggregate_mb_per_s_hi"]
    assert one["aggregate_mb_per_s_n"] == 3 and one["aggregate_mb_per_s_basis"] == "repetitions"
    assert one["cpu_efficiency_n"] == 48 and one["cpu_efficiency_basis"] == "repetitions and jobs"
    assert one["cpu_efficiency_lo"] <= one["cpu_efficiency_median"] <= one["cpu_efficiency_hi"]


@pytest.mark.parametrize("scheduler", [None, "bfq"])
def test_the_load_table_has_word_headers_and_intervals(
    scheduler: str | None, shown: list[str], figures: list[object]
) -> None:
    view = LoadView(_load_rows(scheduler))
    load.load_table(view, "load")  # type: ignore[arg-type]
    text = html.unescape("".join(shown))
    assert "site's" not in text  # a disk knob left to the site is not a column of "site's"
    assert ("I/O scheduler" in text) == (scheduler is not None)
    head, body = _cells(shown[1])
    assert not [h for h in head if "_" in h], head
    mbps = head.index("MB/s, all clients, median [95% interval]")
    assert re.fullmatch(r"[\d.]+ \[[\d.]+, [\d.]+\]", body[1][mbps])
    assert head[mbps + 1] == "n (resampled over)" and body[1][mbps + 1] == "3 (repetitions)"
    assert "predicted CPU efficiency (median client), median [95% interval]" in head
    load.load_saturation(view, "load")  # type: ignore[arg-type]
    title = figures[-1].axes[0].get_title()  # type: ignore[attr-defined]
    assert title == ("t, xrootd" if scheduler is None else "t, xrootd, bfq scheduler")
    assert _error_bars(figures[-1].axes[0])  # type: ignore[attr-defined]


def test_replays_and_scale_effects_carry_intervals() -> None:
    recorded = json.dumps({"wall_s": 1.0, "cpu_s": 0.9})
    reps = pd.DataFrame({
        "trace": "agc", "protocol": "xrootd", "cache_state": None, "recorded": recorded,
        "point_key": ["a", "b", "c"], "wall_s": [1.0, 1.2, 1.1],
        "predicted_cpu_efficiency": [0.9, 0.75, 0.82], "recorded_cpu_efficiency": 0.9,
        "bytes_read": 1e6, "read_calls": 10, "read_latency_p50_s": 0.001,
        "read_latency_p95_s": 0.002,
    })  # fmt: skip
    med = replay.medians(reps).iloc[0]
    assert med["wall_s"] == 1.1 and med["wall_s_n"] == 3 and med["wall_s_lo"] < med["wall_s_hi"]
    files = pd.DataFrame({
        "fileset": "nano16", "protocol": "xrootd", "branches": "agc", "engine": "root",
        "layout": ["unordered"] * 3 + ["ordered"] * 3, "cache_mb": 0.0,
        "point_key": ["u0", "u1", "u2", "o0", "o1", "o2"],
        "wall_s": [4.0, 4.4, 3.6, 1.0, 1.1, 0.9], "file_size": 16e6,
        "disk_amplification": 1.0, "read_calls": 100,
    })  # fmt: skip
    effect = scale.effects(files).iloc[0]
    name = "ordering (no cache)"
    assert effect[name] == pytest.approx(4.0) and effect[f"{name}_lo"] < 4 < effect[f"{name}_hi"]
    shown_table = intervals.table(scale.effects(files), {name: name}, ratios=(name,))
    assert re.fullmatch(r"4 \[[\d.]+, [\d.]+\]", shown_table.iloc[0, 0])
    assert shown_table.columns[0] == f"{name}, ratio of medians [95% interval]"


def test_compare_cells_and_the_index_quote_intervals(tmp_path: Path) -> None:
    from instore.report.compare import setups_points, setups_table

    records = rows().query("site == @SITE and section == 'protocols'")
    again = [records.assign(repetition=i, wall_s=records["wall_s"] * f,
                            cpu_efficiency=records["cpu_efficiency"] / f,
                            point_key=records["point_key"] + f"-{i}") for i, f in enumerate(NOISE)]  # fmt: skip
    results = write_results(tmp_path, pd.concat(again, ignore_index=True))
    stats, _ = summarize(results, SITE)
    best = setups_points(stats).iloc[0]
    assert best["cpu_efficiency_n"] == 3 and best["cpu_efficiency_lo"] <= best["cpu_efficiency_hi"]
    table = setups_table(stats)
    cell = table.loc[0, "CPU efficiency, median [95% interval]"]
    assert re.fullmatch(r"\d+% \[\d+%, \d+%\]", cell)
