"""Points a site's file rules out are skipped before anything is started: a section the WAN
profile cannot run (posix only) costs no site bring-up and no Dask cluster."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from instore.report.sections import no_runs_note
from instore.study import load_study
from instore.sweep import runner
from instore.sweep.options import SweepOptions, SweepSummary

from tests.conftest import write_real_site

STUDY = {
    "profile": "t",
    "profiles": {
        "t": {
            "sites": ["local"],
            "files": {"size_mb": 1, "replicas": 1, "seed": 1},
            "sections": {
                "readahead": {
                    "needs": ["block_readahead"],
                    "protocol": ["posix"],
                    "block_readahead_kb": [128, 4096],
                }
            },
        }
    },
}


def _refuse(*_args: object, **_kwargs: object) -> None:
    raise AssertionError("nothing should be started for points the site cannot run")


def _sweep_nothing_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sections: dict
) -> SweepSummary:
    """Sweep the readahead section on a real (local-disk) site, refusing any bring-up."""
    study = {**STUDY, "profiles": {"t": {**STUDY["profiles"]["t"], "sections": sections}}}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    data = tmp_path / "files"
    data.mkdir()
    (data / "ordered-r0.root").write_bytes(b"")
    site = write_real_site(tmp_path / "local.yaml", {"posix": f"{data}/{{file}}"})
    monkeypatch.setattr(runner, "open_site", _refuse)
    monkeypatch.setattr(runner, "cluster_client", _refuse)
    opts = SweepOptions(study=load_study(tmp_path / "study.yaml"), site=str(site),
                        sections=["readahead"], data=data, results=tmp_path / "results",
                        progress=False)  # fmt: skip
    return runner.run_site(opts)


def test_points_the_site_cannot_run_start_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = _sweep_nothing_starts(tmp_path, monkeypatch, STUDY["profiles"]["t"]["sections"])
    assert summary.measured == 0
    assert summary.skipped == {
        "section readahead needs block_readahead: site local is real: its file names no "
        "tuning.block_readahead the worker may set": 2
    }
    assert "0 point(s), 0 already measured, 2 skipped" in summary.line()
    assert pd.read_parquet(summary.tables["readahead"]).empty
    # the section's page says why, from what the sweep kept beside its table
    results = summary.tables["readahead"].parents[1]
    view = SimpleNamespace(results=results, site="local", sections=set(), conditions=dict)
    assert no_runs_note(view, "readahead") == (  # type: ignore[arg-type]
        "No point of readahead ran on local: 2 points: section readahead needs block_readahead: "
        "site local is real: its file names no tuning.block_readahead the worker may set."
    )


def test_a_filesystem_axis_on_a_real_site_is_skipped_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid = {"needs": ["filesystem"], "protocol": ["posix"], "filesystem": ["ext4", "xfs"]}
    summary = _sweep_nothing_starts(tmp_path, monkeypatch, {"readahead": grid})
    assert summary.skipped == {
        "section readahead needs filesystem: site local is real: its disks' file system is not "
        "ours to choose": 2
    }
