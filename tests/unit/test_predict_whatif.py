"""The report's "What if" page: the change that helps a round-trip-bound analysis most on a
WAN site is one that removes round trips, never the faster link; a CPU-bound one is told no
change helps; the curves and the validation table are drawn from the profile and the records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from instore.predict.fit import fit_profile
from instore.predict.profile import write_profile
from instore.report import show, whatif

from tests.unit.test_predict_fit import CALIBRATION, synthetic
from tests.unit.test_predict_model import small_reads, write_trace


@pytest.fixture
def site(tmp_path: Path) -> dict[str, Path]:
    results, data = tmp_path / "results", tmp_path / "data"
    write_profile(results, fit_profile("wan", CALIBRATION, synthetic()))
    (data / "traces").mkdir(parents=True)
    write_trace(data / "traces", small_reads(300), name="chatty")  # 300 small reads, 2 ms apart
    write_trace(data / "traces", small_reads(3), think=5.0, name="cpu-bound")
    rows = [{"section": "replay", "trace": "chatty", "protocol": "xrootd", "status": "ok",
             "point_key": "p", "job": 0, "predicted_wall_s": 9.0, "passes": 1.0,
             "predicted_cpu_efficiency": 0.07}]  # fmt: skip
    (results / "wan" / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"results": results, "data": data}


def test_the_change_that_helps_most(site: dict[str, Path]) -> None:
    table = whatif.advice(whatif.load("wan", site["results"], site["data"]))
    assert table is not None
    by = table.set_index("analysis")
    assert by.loc["chatty", "waits most on"] == "round trips"
    assert by.loc["chatty", "best change"] in ("a warm XCache", "a shorter round trip (6.25 ms)")
    assert by.loc["chatty", "efficiency with it"] > 2 * by.loc["chatty", "efficiency"]
    assert by.loc["cpu-bound", "efficiency with it"] - by.loc["cpu-bound", "efficiency"] < 0.02


def test_curves_measured_points_validation_and_grid(site: dict[str, Path]) -> None:
    page = whatif.load("wan", site["results"], site["data"])
    points = whatif.measured(page.records, "xrootd")
    assert list(points["trace"]) == ["chatty"] and list(points["clients"]) == [1]
    whatif.curves(page)
    whatif.validation(page)
    grid = whatif.sites_grid(site["results"], site["data"], ["wan", "nowhere"])
    assert list(grid.columns) == ["analysis", "recorded on", "wan"]
    assert (grid["wan"] <= 1).all() and (grid["wan"] > 0).all()


def test_a_site_without_profile_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[str] = []
    monkeypatch.setattr(show, "_display", shown.append)
    page = whatif.load("lan-hdd", tmp_path, tmp_path)
    assert whatif.advice(page) is None
    whatif.curves(page)
    assert "No prediction: " in shown[0] and "site lan-hdd has no profile" in shown[0]


def test_the_what_if_page_reads_the_sites_records_once(
    site: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its three parts (advice, curves, validation) draw from one reading of records.jsonl."""
    from instore.sweep.store import RecordStore

    reads: list[str] = []
    real = RecordStore.records
    monkeypatch.setattr(RecordStore, "records", lambda self: reads.append(self.log.name) or
                        real(self))  # fmt: skip
    page = whatif.load("wan", site["results"], site["data"])
    whatif.advice(page)
    whatif.curves(page)
    whatif.validation(page)
    assert reads == ["records.jsonl"]


def test_the_what_if_notebook_renders_a_page(site: dict[str, Path], tmp_path: Path) -> None:
    import nbformat
    from instore.report.command import NOTEBOOKS
    from instore.report.execute import error_outputs, execute, render

    nb = nbformat.read(NOTEBOOKS / "whatif.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(not c.outputs and c.execution_count is None for c in code)
    params = {"site": "wan", "results": str(site["results"]), "data": str(site["data"])}
    executed = execute(NOTEBOOKS / "whatif.ipynb", tmp_path / "w.ipynb", params)
    assert error_outputs(executed) == []
    page = render(executed, tmp_path / "w.html").read_text()
    assert 'id="fig-whatif-curves"' in page
    assert "chatty waits most on round trips" in page
    assert "Predicted against measured" in page
