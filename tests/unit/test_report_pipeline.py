"""The Snakemake DAG, checked by dry runs in a scratch working directory (nothing runs)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from instore.study import SECTIONS as STUDY_SECTIONS

REPO = Path(__file__).resolve().parents[2]
SECTIONS = len(STUDY_SECTIONS)  # the quick profile runs every section


def dry_run(workdir: Path, *config: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(workdir), "--cores", "2", "--dry-run", "--config", *config]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table of a dry run: rule -> number of jobs."""
    table = output.split("Job stats:")[1].split("total")[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


def test_one_sweep_per_site_and_one_job_per_section_notebook(tmp_path: Path) -> None:
    run = dry_run(tmp_path, "profile=quick", "runtime=none")
    assert run.returncode == 0, run.stderr[-2000:]
    jobs = job_counts(run.stdout)
    sites = 3  # the quick profile's lan-hdd, lan-ssd and wan (the caching section's site)
    assert jobs["sweep_site"] == sites  # every section of a site in one sweep
    assert jobs["calibrate_site"] == sites
    assert jobs["execute_notebook"] == jobs["render_page"] == sites * SECTIONS
    assert jobs["execute_overview"] == jobs["render_site_index"] == jobs["summarize_site"] == sites
    assert jobs["execute_compare"] == jobs["index_page"] == jobs["all"] == 1
    assert jobs["generate_files"] == 1
    assert "container_image" not in jobs  # runtime=none: jobs use the host venv


def test_a_site_admin_names_their_own_sites(tmp_path: Path) -> None:
    run = dry_run(tmp_path, "profile=quick", "runtime=none", "sites=[lan-hdd]", "calibrate=false")
    assert run.returncode == 0, run.stderr[-2000:]
    jobs = job_counts(run.stdout)
    assert jobs["sweep_site"] == 1 and "calibrate_site" not in jobs
    assert set(re.findall(r"site=([\w-]+)", run.stdout)) == {"lan-hdd"}


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_the_payload_image_comes_before_the_sweeps(tmp_path: Path) -> None:
    run = dry_run(tmp_path, "profile=quick", "runtime=podman", "sites=[lan-hdd]")
    assert run.returncode == 0, run.stderr[-2000:]
    sweep = run.stdout.split("rule sweep_site:")[1].split("\n\n")[0]
    assert "build/container/payload.json" in sweep


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (("profile=nosuch",), r"field profile: no profile named 'nosuch' -- choose one of"),
        (("profile=quick", "sites=[nosuch]"), r"nosuch.yaml: no such site file"),
    ],
)
def test_a_bad_configuration_stops_before_anything_runs(
    tmp_path: Path, config: tuple[str, ...], message: str
) -> None:
    run = dry_run(tmp_path, *config)
    assert run.returncode != 0
    assert re.search(message, run.stdout + run.stderr)


def test_the_1gb_set_is_merged_from_the_256mb_one_not_drawn(tmp_path: Path) -> None:
    run = dry_run(tmp_path, "profile=full", "runtime=none")
    assert run.returncode == 0, run.stderr[-2000:]
    assert job_counts(run.stdout)["repeat_fileset_file"] == 4  # its four layouts
    drawn = re.findall(r"rule generate_fileset_file:\n\s+output: (\S+)", run.stdout)
    assert drawn and not [f for f in drawn if "nano1g" in f]
    repeat = run.stdout.split("rule repeat_fileset_file:")[1].split("\n\n")[0]
    assert re.search(r"input: data/files/nano256-[\w-]+-r0\.root", repeat)
