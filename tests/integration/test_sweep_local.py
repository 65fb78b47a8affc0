"""Sweeps through Dask against a real (non-emulated) site: this machine's own disk.

These need no root: the site is a directory served as a POSIX endpoint.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.site import load_site
from instore.study import SECTIONS, load_study
from instore.sweep.options import SweepOptions
from instore.sweep.plan import plan

from tests.cli import Cli
from tests.conftest import SMALL_EVENTS, write_real_site
from tests.integration.conftest import POINTS, sweep_args

pytestmark = pytest.mark.integration


def _sweep(cli: Cli, env: dict[str, Path], results: Path, *extra: str) -> subprocess.Popen:
    return cli.popen(
        *sweep_args(env, results, *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def _keys(results: Path) -> pd.DataFrame:
    tables = [pd.read_parquet(p) for p in sorted((results / "local").glob("*.parquet"))]
    return pd.concat(tables)[["point_key", "job", "jobs", "measured_at", "status"]]


def _planned_keys(env: dict[str, Path], results: Path) -> set[str]:
    """The points a clean sweep measures: every point of the study's sections, once."""
    opts = SweepOptions(
        study=load_study(env["study"]), site="local", sections=list(SECTIONS), data=env["data"],
        results=results,
    )  # fmt: skip
    return plan(opts, load_site(env["site"])).keys


def test_sweep_kill_and_resume_ends_with_every_planned_point_once(
    study_env: dict[str, Path], cli: Cli
) -> None:
    resumed = study_env["tmp"] / "resumed"
    expected = _planned_keys(study_env, resumed)
    assert len(expected) == POINTS
    rng = random.Random(20261121)
    for _ in range(2):  # kill the whole sweep (workers and jobs too) at random moments
        proc = _sweep(cli, study_env, resumed)
        time.sleep(rng.uniform(4, 12))  # set-up takes about 6 s here, the points about 8
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    code, out, err = _finish(_sweep(cli, study_env, resumed))
    assert code == 0, err
    final = _keys(resumed)
    assert set(final["point_key"]) == expected
    assert (final["status"] == "ok").all()
    per_point = final.groupby("point_key").agg(
        rows=("job", "size"), jobs=("jobs", "first"), runs=("measured_at", "nunique")
    )
    assert (per_point["rows"] == per_point["jobs"]).all(), (
        "each point exactly once, all of its jobs"
    )
    assert (per_point["runs"] == 1).all()

    code, out, _ = _finish(_sweep(cli, study_env, resumed))
    assert code == 0 and f"measured 0 point(s), {POINTS} already measured" in out


def test_failed_jobs_are_retried_recorded_and_the_sweep_goes_on(
    study_env: dict[str, Path], cli: Cli
) -> None:
    broken = study_env["data"] / "unordered-r0.root"
    broken.write_bytes(broken.read_bytes()[: broken.stat().st_size // 3])
    results = study_env["tmp"] / "res"
    code, out, _ = _finish(_sweep(cli, study_env, results, "--sections", "layout"))
    assert code == 1, "failed points make the exit status non-zero"
    assert "measured 4 point(s)" in out and "2 with failed jobs" in out
    table = pd.read_parquet(results / "local" / "layout.parquet")
    failed = table[table["status"] == "failed"]
    assert set(failed["layout"]) == {"unordered"} and len(failed) == 2
    assert (failed["attempts"] == 2).all(), "one retry, as configured"
    assert failed["error"].str.contains("truncated|could not open").all()
    assert (table[table["layout"] == "ordered"]["events"] == SMALL_EVENTS).all()
    assert (table["launch"] == "fork").all(), "a sweep forks its jobs from warm payloads"
    assert table[table["status"] == "ok"]["launch_s"].notna().all()


def test_unknown_site_fails_before_measuring(study_env: dict[str, Path], cli: Cli) -> None:
    proc = cli("sweep", "--site", "no-such-site", "--study", str(study_env["study"]), timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-site" in lines[0] and "Traceback" not in proc.stderr


def test_a_site_without_posix_runs_a_posix_section_over_its_fuse_mount(
    study_env: dict[str, Path], cli: Cli, tmp_path: Path
) -> None:
    """The layout section names posix only; a real site whose only endpoint is a (FUSE-like)
    mount runs it there instead of skipping it, and its records and the sweep's log say so."""
    site = write_real_site(tmp_path / "mount.yaml", {"fuse": f"{study_env['data']}/{{file}}"},
                           name="mount")  # fmt: skip
    study = tmp_path / "layout.yaml"
    data = yaml.safe_load(study_env["study"].read_text())
    data["profiles"]["t"]["sections"] = {"layout": {"layout": ["ordered"], "cache_mb": [0]}}
    study.write_text(yaml.safe_dump(data))
    results = tmp_path / "results"
    done = cli(*sweep_args(study_env, results, site=site, study=study), timeout=600)
    assert done.returncode == 0, done.stderr
    assert "section layout runs over fuse in place of posix" in done.stdout
    table = pd.read_parquet(results / "mount" / "layout.parquet")
    assert len(table) == 1 and (table["status"] == "ok").all()
    assert list(table["protocol"]) == ["fuse"] and list(table["substitutes"]) == ["posix"]
