"""A sweep point on Dask workers that are real SLURM jobs (dask-jobqueue ``SLURMCluster``).

The cluster is a single-node SLURM started by the ``slurm_cluster`` fixture; the site is this
machine's own disk. One 2-node x 2-fill jobfill point must give four records, two per node,
and the two Dask workers must have run as SLURM jobs of that cluster.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import uproot
import yaml

from tests.conftest import write_real_site
from tests.integration.slurm import SlurmCluster

pytestmark = pytest.mark.integration

EVENTS = 2000
REPLICAS = 4
STUDY = {
    "profile": "slurm",
    "profiles": {
        "slurm": {
            "sites": ["local"],
            "files": {"size_mb": 1, "replicas": REPLICAS, "seed": 1, "cluster_mb": 8},
            "retries": 0,
            "timeout_s": 60,
            "sections": {
                "jobfill": {
                    "fill": [2],
                    "nodes": [2],
                    "layout": ["ordered"],
                    "protocol": ["posix"],
                }
            },
        }
    },
}


def _instore(
    *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "instore.cli", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _slurm_time(value: str) -> dt.datetime:
    """A jobcomp time stamp (local time, whole seconds) as an aware datetime."""
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S").astimezone()


def _worker_jobs(cluster: SlurmCluster, before: set[str], n: int) -> list[dict[str, str]]:
    """The Dask worker jobs that finished since ``before``, waiting briefly for their records."""
    deadline = time.monotonic() + 20
    while True:
        jobs = [
            j
            for j in cluster.completed_jobs()
            if j["JobId"] not in before and j.get("Name") == "dask-worker"
        ]
        if len(jobs) >= n or time.monotonic() > deadline:
            return jobs
        time.sleep(0.5)


def test_jobfill_point_on_slurm_workers(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    data = tmp_path / "files"
    gen = _instore(
        "generate",
        "--events",
        str(EVENTS),
        "--replicas",
        str(REPLICAS),
        "--layouts",
        "ordered",
        "--out",
        str(data),
    )
    assert gen.returncode == 0, gen.stderr
    site = tmp_path / "local.yaml"
    write_real_site(site, {"posix": f"{data}/{{file}}"}, nodes=2)
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump(STUDY))
    results = tmp_path / "results"
    before = {j["JobId"] for j in slurm_cluster.completed_jobs()}
    # dask-jobqueue writes its default config on import and workers make scratch space: both
    # stay in the test's tmp dir (sbatch exports this environment to the worker jobs)
    env = slurm_cluster.client_env() | {
        "DASK_CONFIG": str(tmp_path / "dask-config"),
        "DASK_TEMPORARY_DIRECTORY": str(tmp_path / "dask-scratch"),
    }

    sweep = _instore(
        "sweep",
        "--site",
        str(site),
        "--study",
        str(study),
        "--profile",
        "slurm",
        "--sections",
        "jobfill",
        "--slurm",
        "--slurm-queue",
        slurm_cluster.partition,
        "--data",
        str(data),
        "--results",
        str(results),
        "--scratch",
        str(tmp_path / "scratch"),
        "--no-progress",
        env=env,
        cwd=slurm_cluster.workdir,  # the jobs' slurm-<id>.out land in the cluster's own dir
        timeout=150,
    )
    assert sweep.returncode == 0, f"{sweep.stdout}\n{sweep.stderr}\n{slurm_cluster.log_tail()}"

    table = pd.read_parquet(results / "local" / "jobfill.parquet")
    assert len(table) == 4, table
    assert (table["status"] == "ok").all(), table[["job", "node", "status", "error"]]
    assert table["error"].isna().all()
    assert sorted(table["job"]) == [0, 1, 2, 3]
    assert table.groupby("node")["job"].apply(sorted).to_dict() == {0: [0, 1], 1: [2, 3]}
    for replica in range(REPLICAS):
        with uproot.open(data / f"ordered-r{replica}.root") as f:
            assert f["events"].num_entries == EVENTS
    assert (table["events"] == EVENTS).all(), table[["job", "events"]]

    # The two Dask workers were SLURM jobs of this cluster, on its node, alive while the
    # point ran, and each registered with the sweep's scheduler.
    jobs = _worker_jobs(slurm_cluster, before, 2)
    assert len(jobs) == 2, f"{jobs}\n{slurm_cluster.log_tail()}"
    measured = [dt.datetime.fromisoformat(t) for t in table["measured_at"]]
    for job in jobs:
        assert job["NodeList"] == slurm_cluster.node
        assert job["Partition"] == slurm_cluster.partition
        assert job["ProcCnt"] == "2"  # cores = the largest fill
        start, end = _slurm_time(job["StartTime"]), _slurm_time(job["EndTime"])
        assert all(start <= t < end + dt.timedelta(seconds=1) for t in measured), (job, measured)
        logs = sorted((results / "local" / "batch-logs").glob(f"*-{job['JobId']}.*"))
        out = "".join(log.read_text() for log in logs)  # the worker logs to .err, prints to .out
        assert "Registered to:" in out, out
