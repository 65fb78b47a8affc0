"""Run labels: a labelled run keeps its results, reports and logs apart (results/runs/<label>),
so it measures again; compare and the report's baseline name an earlier run by its label."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.run import load_run, run_options
from instore.study.runs import labels, results_of, run_dir
from instore.summary import compare_cmd

from tests.unit.test_report_pipeline import dry_run, job_counts


def test_a_label_puts_a_run_under_runs_and_no_label_keeps_the_old_places() -> None:
    assert run_dir(Path("results"), None) == Path("results")
    assert run_dir(Path("reports"), "after-upgrade") == Path("reports/runs/after-upgrade")
    with pytest.raises(InstoreError, match="not a plain name"):
        run_dir(Path("results"), "../elsewhere")


def test_an_earlier_run_is_named_by_its_label_or_its_directory(tmp_path: Path) -> None:
    kept = tmp_path / "old-results"
    kept.mkdir()
    assert results_of("before", tmp_path / "results") == tmp_path / "results/runs/before"
    assert results_of(str(kept)) == kept
    assert results_of("results") == Path("results")  # the unlabelled run
    (tmp_path / "results/runs/before").mkdir(parents=True)
    assert labels(tmp_path / "results") == ["before"]


def test_run_and_baseline_are_run_options_and_a_number_is_a_name() -> None:
    opts = run_options({"run": "after-upgrade", "baseline": "before"})
    assert (opts.run, opts.baseline) == ("after-upgrade", "before")
    assert run_options({"run": 2}).run == "2"
    assert run_options({}).run is None
    with pytest.raises(InstoreError, match="run=after-upgrade"):
        run_options({"run": "a/b"})


def test_the_run_baseline_overrides_the_study_file() -> None:
    run = load_run({"profile": "quick", "sites": ["lan-hdd"], "baseline": "before"})
    assert run.study.baseline == Path("results/runs/before")


def test_compare_takes_labels() -> None:
    parser = argparse.ArgumentParser(prog="instore")
    compare_cmd.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["compare", "before", "after-upgrade"])
    assert args.results_a == Path("results/runs/before")
    assert args.results_b == Path("results/runs/after-upgrade")


def test_a_labelled_run_writes_apart_and_measures_again(tmp_path: Path) -> None:
    (tmp_path / "results/lan-hdd").mkdir(parents=True)  # an unlabelled run measured before
    run = dry_run(tmp_path, "profile=quick", "runtime=none", "sites=[lan-hdd]", "calibrate=false",
                  "run=after-upgrade")  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert job_counts(run.stdout)["sweep_site"] == 1
    outputs = set(re.findall(r"output: (.*)", run.stdout))
    paths = {p.strip() for line in outputs for p in line.split(",")}
    assert "reports/runs/after-upgrade/index.html" in paths
    assert "results/runs/after-upgrade/lan-hdd/load.parquet" in paths
    written = [p for p in paths if p.startswith(("results/", "reports/", "logs/"))]
    assert written and all("/runs/after-upgrade/" in p for p in written), written


def test_a_baseline_label_gives_each_site_a_before_and_after_page(tmp_path: Path) -> None:
    before = tmp_path / "results/runs/before/lan-hdd"
    before.mkdir(parents=True)
    (before / "summary.parquet").write_bytes(b"")  # a results directory for the site
    run = dry_run(tmp_path, "profile=quick", "runtime=none", "sites=[lan-hdd]", "calibrate=false",
                  "run=after", "baseline=before")  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert job_counts(run.stdout)["execute_baseline"] == 1
    assert "reports/runs/after/lan-hdd/baseline.html" in run.stdout
