"""The analyses compared (instore.report.analyses, issue 32 item 3): RDataFrame, uproot and
coffea on the same file, told apart by the script each trace recorded, their I/O side by side
with intervals where replays differ, and their predicted CPU efficiency per site and protocol."""

from __future__ import annotations

import html
import json
import re

import pandas as pd
import pytest
from instore.report import analyses, show

# What each analysis read of the 256 MB file (its recording), roughly as measured
IO = {
    "agc-rdf": ("analyses/agc_ttbar_rdf.py", 7.2e6, 9, 9, 0.0),
    "agc-uproot": ("analyses/agc_ttbar_uproot.py", 7.0e6, 60, 1, 0.0),
    "agc-coffea": ("analyses/agc_ttbar_coffea.py", 7.4e6, 12, 10, 0.0),
}
EFFICIENCY = {"agc-rdf": 0.86, "agc-uproot": 0.37, "agc-coffea": 0.5}


def _rows() -> pd.DataFrame:
    """Replay records: three traces, two sites, two protocols (one with an XCache state),
    three repetitions each, the efficiency a little different in each."""
    out = []
    for trace, (script, size, calls, vectors, overlap) in IO.items():
        recorded = json.dumps({"wall_s": 1.0, "cpu_s": 0.95, "events": 173299,
                               "read_calls": calls, "overlapping_requests": overlap})  # fmt: skip
        for site, protocol, state in (("lan-hdd", "xrootd", None), ("wan", "xcache", "warm")):
            for k, f in enumerate((0.97, 1.0, 1.02)):
                out.append({
                    "site": site, "section": "replay", "trace": trace, "protocol": protocol,
                    "cache_state": state, "fileset": "nano256",
                    "command": json.dumps(["python", script, "--tree", "Events", "root://h//f"]),
                    "point_key": f"{site}-{trace}-{protocol}-{k}", "recorded": recorded,
                    "bytes_read": size, "read_calls": calls, "vector_reads": vectors,
                    "chunks_read": calls * 3, "streams": 1,
                    "predicted_cpu_efficiency": EFFICIENCY[trace] * f,
                    "recorded_cpu_efficiency": 0.95, "wall_s": 1.0 / f,
                })  # fmt: skip
    return pd.DataFrame(out)


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    out: list[str] = []
    monkeypatch.setattr(show, "_display", out.append)
    return out


def _cells(markup: str) -> tuple[list[str], list[list[str]]]:
    found = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, re.S)
             for r in re.findall(r"<tr[^>]*>(.*?)</tr>", markup, re.S)]  # fmt: skip
    text = [[html.unescape(re.sub("<[^>]+>", "", c)).strip() for c in r] for r in found]
    return text[0], text[1:]


def test_each_trace_is_named_by_the_script_it_recorded() -> None:
    assert analyses.analysis_of('["python", "/x/analyses/agc_ttbar_coffea.py"]', "t") == "coffea"
    assert analyses.analysis_of(["python", "agc_ttbar_rdf.py", "f"], "t") == "RDataFrame"
    assert analyses.analysis_of(["python", "mine.py"], "my-trace") == "my-trace"
    assert analyses.analysis_of(None, "t") == "t"


def test_io_side_by_side_in_the_frameworks_order() -> None:
    io = analyses.io_points(_rows())
    assert list(io["analysis"]) == ["RDataFrame", "uproot", "coffea"]
    coffea = io.set_index("analysis").loc["coffea"]
    assert coffea["mb_read"] == pytest.approx(7.4)
    assert (coffea["read_calls"], coffea["vector_reads"], coffea["chunks_read"]) == (12, 10, 36)
    assert coffea["replays"] == 6 and coffea["read_calls_min"] == coffea["read_calls_max"] == 12
    assert coffea["in_flight_share"] == 0
    # what a replay sends is shared among all its requests (opens and closes too)
    busy = _rows().assign(requests_total=40, recorded=json.dumps({"overlapping_requests": 10}))
    assert analyses.io_points(busy)["in_flight_share"].tolist() == [0.25] * 3
    assert coffea["events"] == 173299 and coffea["recorded_cpu_efficiency"] == 0.95


def test_efficiency_per_site_and_protocol_one_column_per_analysis(shown: list[str]) -> None:
    table = analyses.efficiency_table(_rows())
    assert list(table.columns) == ["site", "file set", "protocol", "XCache",
                                   "RDataFrame", "uproot", "coffea"]  # fmt: skip
    assert list(zip(table["site"], table["protocol"], table["XCache"], strict=True)) == [
        ("lan-hdd", "xrootd", "-"), ("wan", "xcache", "warm")]  # fmt: skip
    for cell in table["coffea"]:  # three repetitions: a median with its interval
        assert re.fullmatch(r"50% \[4\d%, 5\d%\]", cell), cell
    analyses.efficiency_compare(_rows())
    head, body = _cells(shown[-1])
    assert head[-3:] == ["RDataFrame", "uproot", "coffea"] and len(body) == 2
    assert 'id="fig-replay-analyses-efficiency"' in shown[-1]


def test_io_table_and_figure_render(shown: list[str]) -> None:
    analyses.io_table(_rows())
    head, body = _cells(shown[-1])
    assert "MB read" in head and len(body) == 3
    coffea = dict(zip(head, body[2], strict=True))
    assert (coffea["analysis"], coffea["read calls"], coffea["replays"]) == ("coffea", "12", "6")
    assert coffea["requests recorded in flight with another"] == "0%"
    cut = _rows().assign(read_calls=[12] * (len(_rows()) - 1) + [5])  # one replay stopped early
    analyses.io_table(cut)
    head, body = _cells(shown[-1])
    assert dict(zip(head, body[2], strict=True))["read calls"] == "12 (5-12)"
    analyses.efficiency_figure(_rows())
    assert 'id="fig-replay-analyses-efficiency-figure"' in shown[-1] and "<img" in shown[-1]


def test_no_records_say_so(shown: list[str]) -> None:
    analyses.io_table(_rows().iloc[0:0])
    assert "nothing to compare" in shown[-1]
    assert analyses.efficiency_table(_rows().iloc[0:0]).empty


def test_the_page_part_has_a_heading_two_tables_and_a_figure(shown: list[str]) -> None:
    analyses.page(_rows())
    assert "One selection, 3 analyses: RDataFrame, uproot, coffea" in shown[0]
    assert [s.count("<table") for s in shown[1:3]] == [1, 1] and "<img" in shown[3]
