"""instore report: notebooks executed and rendered from the fixture's real records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from instore.cli import main
from instore.errors import InstoreError
from instore.report.command import NOTEBOOKS, parameter
from instore.report.compare import explorer, load_all, load_summaries, setups_points, setups_table
from instore.report.execute import error_outputs, execute, render
from instore.report.lab import lab_command
from instore.report.pages import write_index
from instore.summary.command import summarize, write

from tests.unit.data.records import SITES, rows, write_results

NAMES = ("section", "overview", "compare", "explore", "baseline")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = write_results(tmp_path_factory.mktemp("report") / "results")
    for site in SITES:
        write(out, site, *summarize(out, site))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_are_stored_clean_with_parameters(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert all(len(c.source.splitlines()) <= 4 for c in code)  # thin: the package does the work


def test_cache_page_has_its_figure_and_table_and_no_code(results: Path, tmp_path: Path) -> None:
    executed = execute(NOTEBOOKS / "section.ipynb", tmp_path / "cache.ipynb",
                       {"site": "fixture-cold", "results": str(results), "section": "cache"})  # fmt: skip
    assert error_outputs(executed) == []
    page = render(executed, tmp_path / "cache.html").read_text()
    assert 'id="fig-cache-reads"' in page
    assert re.search(r'<img[^>]+src="data:image/png;base64,[A-Za-z0-9+/]{1000}', page)
    assert "SiteView.load" not in page  # inputs hidden
    assert not re.search(r'<script[^>]+src="https?://', page)
    calls = rows().query("site == 'fixture-cold' and section == 'cache' and layout == 'unordered'")
    assert f">{int(calls['read_calls'].max()):,}<" in page


def test_failing_notebook_fails_with_the_cells_error(results: Path, tmp_path: Path) -> None:
    with pytest.raises(
        InstoreError,
        match=r"section.ipynb \(section cache\) failed in cell \d+: InstoreError: .*no summary "
        "for site nosuch",
    ):
        execute(
            NOTEBOOKS / "section.ipynb",
            tmp_path / "bad.ipynb",
            {"site": "nosuch", "results": str(results), "section": "cache"},
        )
    assert main(["report", "execute", str(NOTEBOOKS / "section.ipynb"), "--out", str(tmp_path / "b.ipynb"),
                 "-p", "site=nosuch", "-p", f"results={results}", "-p", "section=cache"]) == 2  # fmt: skip


def _notebook(path: Path, code: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


def test_a_kernel_that_stops_answering_is_replaced_once(tmp_path: Path, caplog) -> None:
    """Regression: the CI of d0c26b7 hung 9 minutes in the explorer notebook, its kernel and
    papermill both idle (ipython/ipykernel#1554): a cell with no reply now times out, and the
    notebook is run again in a new kernel."""
    marker = tmp_path / "first-attempt"
    code = (f"import pathlib, time\nm = pathlib.Path({str(marker)!r})\n"
            "if not m.exists():\n    m.touch()\n    time.sleep(60)\nprint('done')")  # fmt: skip
    executed = execute(_notebook(tmp_path / "slow.ipynb", code), tmp_path / "out.ipynb", {},
                       cell_timeout_s=2)  # fmt: skip
    assert "done" in str(nbformat.read(executed, as_version=4).cells[0].outputs)
    assert "executing it again in a new kernel" in caplog.text


def test_a_cell_slow_in_every_kernel_is_one_line_naming_the_timeout(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(60)")
    with pytest.raises(InstoreError, match=r"slow.ipynb: a cell did not finish within 2 s in 2 "):
        execute(notebook, tmp_path / "out.ipynb", {}, cell_timeout_s=2)


def test_index_links_sites_with_conditions_and_provenance(results: Path, tmp_path: Path) -> None:
    (tmp_path / "compare.html").write_text("<html></html>")
    page = write_index(results, tmp_path, list(SITES)).read_text()
    records = rows()
    best = setups_points(load_summaries(results, ["fixture-cold"])).iloc[0]
    eff = best["cpu_efficiency_median"]
    assert (
        f"<b>Best setup:</b> {best['protocol']} ({eff:.0%} (one measurement) CPU efficiency" in page
    )
    assert "95% bootstrap interval" in page  # said once, at the top
    advice = json.loads((results / "fixture-cold" / "recommendations.json").read_text())
    assert f'href="fixture-cold/{advice[0]["figure"]}"' in page
    assert 'class="instore-conditions"' in page and "<details>" in page
    for site in SITES:
        assert f'href="{site}/index.html"' in page
        assert f'href="{site}/cache.html"' in page
    prov = json.loads(records["provenance"].iloc[0])
    assert prov["host"] in page and prov["kernel"] in page
    assert f"uproot {prov['versions']['uproot']}" in page
    failed = int((records.query("site == 'fixture-cold'")["status"] != "ok").sum())
    assert f"{failed} failed" in page
    assert 'href="compare.html"' in page


def test_setups_table_is_the_same_work_on_each_site(results: Path) -> None:
    records = rows()
    points = setups_points(load_summaries(results))
    work = records.query("section == 'protocols' and engine == 'root' and status == 'ok'")
    assert len(points) == len(work.groupby(["site", "protocol"]))
    one = points[(points["site"] == "fixture-warm") & (points["protocol"] == "xrootd")].iloc[0]
    expected = work.query("site == 'fixture-warm' and protocol == 'xrootd'")[
        "cpu_efficiency"
    ].median()
    assert one["cpu_efficiency_median"] == pytest.approx(expected)
    effs = list(points["cpu_efficiency_median"])
    assert effs == sorted(effs, reverse=True)
    table = setups_table(load_summaries(results))
    assert "CPU efficiency, median [95% interval]" in table.columns  # headers in words
    assert not [c for c in table.columns if "_" in c]
    assert (
        table.loc[0, "CPU efficiency, median [95% interval]"] == f"{effs[0]:.0%} (one measurement)"
    )
    cold = table[(table["site"] == "fixture-cold") & (table["protocol"] == "posix")].iloc[0]
    posix = records.query("site == 'fixture-cold' and section == 'protocols' and engine == 'root'")
    posix = posix[posix["protocol"] == "posix"]
    assert (cold["jobs"], cold["failed"]) == (
        (posix["status"] == "ok").sum(),
        (posix["status"] != "ok").sum(),
    )


def test_parameters_parse_json_or_text() -> None:
    assert parameter('sites=["a", "b"]') == ("sites", ["a", "b"])
    assert parameter("site=lan-hdd") == ("site", "lan-hdd")
    with pytest.raises(Exception, match="key=value"):
        parameter("novalue")


def test_lab_listens_on_localhost_with_a_token() -> None:
    cmd = lab_command(NOTEBOOKS / "explore.ipynb", 8899, "secret")
    assert "--ServerApp.ip=127.0.0.1" in cmd and "--IdentityProvider.token=secret" in cmd
    assert str(NOTEBOOKS / "explore.ipynb") in cmd


def test_explorer_runs_on_all_results(results: Path, tmp_path: Path) -> None:
    executed = execute(
        NOTEBOOKS / "explore.ipynb", tmp_path / "explore.ipynb", {"results": str(results)}
    )
    nb = nbformat.read(executed, as_version=4)
    shown = "".join(str(o) for c in nb.cells for o in c.get("outputs", []))
    assert all(site in shown for site in SITES)
    assert "application/vnd.jupyter.widget-view+json" in str(nb.cells[-1].outputs)


def test_explorer_plot_follows_the_widgets(results: Path) -> None:
    """Moving a control redraws: the plot's axis and bars follow the selection."""
    import matplotlib

    matplotlib.use("Agg")
    widget = explorer(load_all(results))
    controls = {c.description: c for c in widget.kwargs_widgets}

    def drawn() -> tuple[str, str, list[float]]:
        ax = widget.result.axes[0]
        return ax.get_xlabel(), ax.get_ylabel(), [round(b.get_height(), 6) for b in ax.patches]

    controls["section"].value = "protocols"
    x, y, before = drawn()
    assert (x, y) == ("protocol", "cpu_efficiency") and before
    controls["y"].value = "wall_s"
    assert drawn()[1] == "wall_s" and drawn()[2] != before
    controls["site"].value = ("fixture-cold",)
    assert [t.get_text() for t in widget.result.axes[0].get_legend().get_texts()] == [
        "fixture-cold"
    ]
    controls["site"].value = ()
    assert widget.result is None  # nothing selected: nothing drawn


def test_sections_draw_with_one_level_of_each_knob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tiny site (one layout, one protocol, one engine) still gets every figure."""
    from instore.report import jobfill, sections, show

    records = rows().query("site == 'fixture-cold' and layout == 'ordered' and engine == 'root'")
    records = records[records["protocol"].isin(["posix", "xrootd"])]
    results = write_results(tmp_path, records)
    write(results, "fixture-cold", *summarize(results, "fixture-cold"))
    shown: list[str] = []
    monkeypatch.setattr(show, "_display", shown.append)
    view = sections.SiteView.load("fixture-cold", results)
    for draw in (sections.layout_wall, sections.cache_reads, sections.protocol_efficiency,
                 sections.readahead, jobfill.jobfill):  # fmt: skip
        draw(view)
    figures = [m for m in shown if m.startswith("<figure")]
    assert len(figures) == 5
    assert all("base64," in f for f in figures)


def test_a_section_without_runs_names_the_possible_reasons_and_the_sweep_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site without posix (the WAN profile) has an empty readahead table: instead of an empty
    figure the page names the reasons a point is skipped (what its section needs, a section kept
    to other sites of the profile, a protocol the site lacks, with those it offers) and the log
    that says which, where no sweep kept its reasons (skipped.json: test_sweep_skip); it once
    named the protocols alone, wrong for a section limited to other sites."""
    from instore.report import sections, show

    records = rows().query("site == 'fixture-cold' and section == 'protocols'")
    records = records[records["protocol"] != "posix"].copy()
    offered = sorted(records["protocol"].unique())
    conditions = {**json.loads(records["conditions"].iloc[0]), "protocols": offered}
    records["conditions"] = json.dumps(conditions)
    results = write_results(tmp_path, records)
    records.iloc[:0].to_parquet(results / "fixture-cold" / "readahead.parquet", index=False)
    write(results, "fixture-cold", *summarize(results, "fixture-cold"))
    shown: list[str] = []
    monkeypatch.setattr(show, "_display", shown.append)
    sections.readahead(sections.SiteView.load("fixture-cold", results))
    assert not any(m.startswith("<figure") for m in shown)
    note = next(m for m in shown if "No successful runs were recorded for readahead" in m)
    # no sweep kept its reasons here: it names them all and the sweep's log
    assert "none of its points was measured here" in note and "`budget_sites:`" in note
    assert "`needs:`" in note
    assert f"this site offers {', '.join(offered)}" in note and "sweep.log" in note


def test_a_section_without_runs_says_so_once_however_many_parts_its_page_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caching page of a site without an XCache said "No point of caching ran" twice, once
    for its plot and once for its table."""
    from instore.report import caching, show

    records = rows().query("site == 'fixture-cold' and section == 'protocols'")
    results = write_results(tmp_path, records)
    write(results, "fixture-cold", *summarize(results, "fixture-cold"))
    shown: list[str] = []
    monkeypatch.setattr(show, "_display", shown.append)
    view = caching.SiteView.load("fixture-cold", results)
    caching.caching(view)
    caching.caching_table(view)
    notes = [m for m in shown if "caching" in m and ("No point of" in m or "No successful" in m)]
    assert len(notes) == 1, shown


def test_conditions_read_as_a_short_table_with_units() -> None:
    """Not ~60 flattened keys: one line per thing a site admin checks, the JSON collapsed."""
    from instore.report.conditions import condition_rows, conditions_html

    emulated = {
        "kind": "emulated", "profile": "wan", "workers": {"nodes": 1, "cores": 2},
        "emulation": {"network": {"bandwidth_mbit": 100, "rtt_ms_target": 25, "rtt_ms_measured": 25.3},
                      "disk": {"filesystem": "ext4", "size_mb": 1024, "readahead_kb": 128,
                               "read_iops": None, "read_mbps": None}},
        "calibration": None,
    }  # fmt: skip
    rows = dict(condition_rows(emulated))
    assert rows["network (emulated)"] == "100 Mbit/s, 25 ms round trip, measured 25.3 ms"
    assert rows["disk limits (emulated)"] == "none (the device's own speed)"
    assert rows["calibrated limits"].startswith("not calibrated")
    assert len(rows) <= 8
    real = dict(
        condition_rows({"kind": "real", "emulation": {"endpoints": {"posix": "/d/{file}"}}})
    )
    assert real["endpoints"] == "posix: /d/{file}"
    page = conditions_html(emulated)
    assert page.index("</table>") < page.index("<details>") and "<details open" not in page


def test_provenance_says_where_the_workers_own_names_were_looked_up() -> None:
    """A load page's open times mean something else when every open waited on DNS."""
    import pandas as pd
    from instore.report.pages import _own_names

    assert "hosts file" in _own_names(pd.DataFrame({"own_names_in_hosts": [True, True]}))
    assert "resolver" in _own_names(pd.DataFrame({"own_names_in_hosts": [False, None]}))
    assert "resolver" in _own_names(pd.DataFrame({"status": ["ok"]}))  # records from before
    mixed = _own_names(pd.DataFrame({"own_names_in_hosts": [True, False, True]}))
    assert "2 of 3" in mixed


def test_notebook_kernels_listen_on_their_own_unix_sockets_not_tcp_ports(tmp_path: Path) -> None:
    """Regression: the CI of 7343e93 lost the browser test's reports to "Kernel died before
    replying to kernel_info": a TCP port jupyter_client had found free was taken before the
    kernel bound it. Two notebooks run side by side, as the pipeline runs them, each on its
    own sockets, which are gone afterwards."""
    from concurrent.futures import ThreadPoolExecutor

    code = "import ipykernel, json\nprint(json.dumps(json.loads(ipykernel.get_connection_info())))"
    notebook = _notebook(tmp_path / "where.ipynb", code)
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(execute, notebook, tmp_path / f"out{i}.ipynb", {}) for i in (0, 1)]
        executed = [run.result() for run in runs]
    infos = [json.loads(nbformat.read(e, as_version=4).cells[0].outputs[0]["text"])
             for e in executed]  # fmt: skip
    assert [info["transport"] for info in infos] == ["ipc", "ipc"]
    assert infos[0]["ip"] != infos[1]["ip"]
    for info in infos:
        assert Path(info["ip"]).name.startswith("instore-")
        assert not list(Path(info["ip"]).parent.glob(Path(info["ip"]).name + "-*"))
