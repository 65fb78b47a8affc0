"""The tiny study through Snakemake, in a copy of the checkout: `snakemake --cores 2` makes
reports/index.html; a second run does nothing; touching one site's file redoes only that site;
a notebook that raises fails the pipeline with the cell's error."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

# make test runs this module on one xdist worker (--dist loadfile: its tests share the study),
# beside the unit tests on the other: it measures no timing, so it needs no machine of its own.
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
SITES = ("tiny-a", "tiny-b")
SECTIONS = ("layout", "cache", "protocols", "readahead", "jobfill")
# tiny-b runs only these (tiny-study.yaml: the other sections say `budget_sites: [tiny-a]`)
SECTIONS_OF = {"tiny-a": SECTIONS, "tiny-b": ("layout", "jobfill")}
COPIED = (
    "Snakefile",
    "pyproject.toml",
    "README.md",
    "config",
    "containers",
    "envs",
    "notebooks",
    "workflow",
    "docs/data/reference",  # the reference run a real site's announced time estimate comes from
)
IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info", ".ipynb_checkpoints")


def _checkout(root: Path) -> Path:
    """A working copy whose package, notebooks and site files are the ones being run."""
    work = root / "instore"
    work.mkdir()
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=IGNORED)
        else:
            shutil.copy2(src, work / name)
    (work / "tests" / "e2e").mkdir(parents=True)
    shutil.copy2(HERE / "tiny-study.yaml", work / "tests" / "e2e" / "tiny-study.yaml")
    template = (HERE / "tiny-site.yaml").read_text()
    for site in SITES:
        text = template.replace("SITE_NAME", site).replace("DATA_DIR", str(work / "data" / "files"))
        (work / "config" / "sites" / f"{site}.yaml").write_text(text)
    (work / "data" / "files").mkdir(parents=True)
    return work


def _snakemake(work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(work / "workflow"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # fmt: skip
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *extra, "--config",
           "study=tests/e2e/tiny-study.yaml", "profile=tiny", "runtime=none", "calibrate=false"]  # fmt: skip
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1500)


def _rules_by_site(dry_run: str) -> dict[str, set[str]]:
    """Each site in a dry run's plan -> the rules it would run for that site."""
    found: dict[str, set[str]] = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", dry_run):
        rule, site = re.match(r"(?:local)?rule (\w+):", block), re.search(r"site=([\w-]+)", block)
        if rule and site:
            found.setdefault(site.group(1), set()).add(rule.group(1))
    return found


@pytest.fixture(scope="module")
def study(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    work = _checkout(tmp_path_factory.mktemp("e2e"))
    return work, _snakemake(work)


def test_the_study_makes_every_report(study: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    work, run = study
    assert run.returncode == 0, run.stderr[-3000:]
    index = work / "reports" / "index.html"
    assert f"the report is {index}" in run.stdout + run.stderr
    page = index.read_text()
    for site in SITES:
        assert f'href="{site}/index.html"' in page
        for section in SECTIONS:
            report = (work / "reports" / site / f"{section}.html").read_text()
            ran = section in SECTIONS_OF[site]
            table = pd.read_parquet(work / "results" / site / f"{section}.parquet")
            assert (len(table) > 0) == ran, (site, section)
            # a section run on the other site only says so, naming the reason the sweep kept
            said = f"No point of {section} ran on {site}: "
            assert (said in report) == (not ran)
            assert ("only of profile tiny's own sites (its budget_sites)" in report) == (not ran)
        overview = (work / "reports" / site / "index.html").read_text()
        assert 'href="jobfill.html#fig-jobfill"' in overview
    assert (work / "reports" / "compare.html").is_file()


def test_a_rerun_does_nothing(study: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    work, _ = study
    again = _snakemake(work)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr


def test_editing_one_site_redoes_only_that_site(
    study: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    work, _ = study
    site_file = work / "config" / "sites" / "tiny-b.yaml"
    before, stat = site_file.read_text(), site_file.stat()
    site_file.write_text(before.replace("own disk", "own local disk"))
    plan = _snakemake(work, "--dry-run")
    site_file.write_text(before)  # put it back as it was, so later tests see the study unchanged
    os.utime(site_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert plan.returncode == 0, plan.stderr[-2000:]
    rules = _rules_by_site(plan.stdout)
    assert (
        "sweep_site" in rules["tiny-b"] and len(re.findall(r"rule sweep_site:", plan.stdout)) == 1
    )
    # the other site measures nothing again: only its overview, whose analyses-by-sites grid
    # predicts every trace on every site's profile (tiny-b's among them), is drawn again
    assert rules.get("tiny-a", set()) <= {"execute_overview", "render_site_index"}, rules


def test_a_failing_notebook_fails_the_pipeline_with_its_error(
    study: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    work, _ = study
    notebook = work / "notebooks" / "section.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell('raise RuntimeError("boom from a report cell")'))
    nbformat.write(nb, notebook)
    broken = _snakemake(work, "--keep-going")
    assert broken.returncode != 0
    log = broken.stdout + broken.stderr
    assert re.search(r"section\.ipynb \(section \w+\) failed in cell \d+: RuntimeError: boom from a "
                     "report cell", log)  # fmt: skip
    assert "study done" not in log
