"""A sweep point on Dask workers that are real SLURM jobs (dask-jobqueue ``SLURMCluster``).

The cluster is a single-node SLURM started by the ``slurm_cluster`` fixture; the site is this
machine's own disk. One 2-node x 2-fill jobfill point must give four records, two per node,
and the two Dask workers must have run as SLURM jobs of that cluster; a load point of replay
clients spreads over the nodes the same way (a real site's load section on its batch system).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pandas as pd
import pytest
import uproot
import yaml

from tests.cli import Cli
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


def test_jobfill_point_on_slurm_workers(
    slurm_cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    data = tmp_path / "files"
    gen = cli(
        "generate",
        "--events",
        str(EVENTS),
        "--replicas",
        str(REPLICAS),
        "--layouts",
        "ordered",
        "--out",
        str(data),
        timeout=60,
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

    sweep = cli(
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


LOAD_COPIES = 4


def _load_trace(out: Path, file_name: str, size: int) -> None:
    """A recorder trace of 40 reads of 16 kB spread over the file, 5 ms of CPU apart: the shape
    of an analysis's trace, written here so the test needs no XRootD to record one."""
    from instore.replay.trace import write_trace

    t, oid, lines = 1_000_000.0, "1", []

    def line(op: str, start: float, args: str, end: float, resp: str = "") -> str:
        return f'"{oid}","{op}","{start:.9f}","{args}","{end:.9f}","[SUCCESS]","{resp}"'

    lines.append(line("Open", t, f"root://recorded.example//{file_name};0;0;0", t + 0.001))
    for k in range(40):
        t += 0.005
        lines.append(line("Read", t, f"{k * (size // 41)};16384;0", t + 0.0002, "16384"))
    lines.append(line("Close", t + 0.001, "0", t + 0.0011))
    meta = {"command": ["synthetic"], "exit_code": 0, "wall_s": t - 1_000_000.0 + 0.002,
            "cpu_s": 0.2, "user_s": 0.2, "sys_s": 0.0, "operations": len(lines), "events": 100,
            "recorded_on": {"site": "lan-ssd", "protocol": "xrootd", "files": [file_name]}}  # fmt: skip
    write_trace(out, lines, meta)


def test_load_point_spreads_its_clients_over_slurm_nodes(
    slurm_cluster: SlurmCluster, tmp_path: Path, cli: Cli
) -> None:
    """A real site's load point on --slurm: 2 nodes x 2 clients, each client replaying its own
    copy for a fixed time, every client's record kept with the node it ran on."""
    data = tmp_path / "files"
    gen = cli("generate", "--like", "cms-nanoaod", "--fileset", "copies", "--size-mb", "1",
              "--layouts", "ordered", "--replica", "0", "--out", str(data), timeout=60)  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    first = data / "copies-ordered-r0.root"
    for k in range(1, LOAD_COPIES):
        (data / f"copies-ordered-r{k}.root").write_bytes(first.read_bytes())
    _load_trace(data / "traces" / "t", first.name, first.stat().st_size)
    site = write_real_site(tmp_path / "local.yaml", {"posix": f"{data}/{{file}}"}, nodes=2)
    profile = {
        "sites": ["local"], "files": {"size_mb": 1, "replicas": 1}, "retries": 0, "timeout_s": 60,
        "filesets": {"copies": {"like": "cms-nanoaod", "size_mb": 1, "replicas": LOAD_COPIES,
                                "identical": True}},
        "traces": {"t": {"analysis": "analyses/agc_ttbar_uproot.py", "fileset": "copies"}},
        "sections": {"load": {"trace": ["t"], "fill": [2], "nodes": [2], "protocol": ["posix"],
                              "fixed_time_s": [2]}},
    }  # fmt: skip
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({"profile": "l", "profiles": {"l": profile}}))
    results = tmp_path / "results"
    env = slurm_cluster.client_env() | {
        "DASK_CONFIG": str(tmp_path / "dask-config"),
        "DASK_TEMPORARY_DIRECTORY": str(tmp_path / "dask-scratch"),
    }
    sweep = cli(
        "sweep", "--site", str(site), "--study", str(study), "--profile", "l", "--sections",
        "load", "--slurm", "--slurm-queue", slurm_cluster.partition, "--data", str(data),
        "--results", str(results), "--scratch", str(tmp_path / "scratch"), "--runtime", "none",
        "--no-progress", env=env, cwd=slurm_cluster.workdir, timeout=150,
    )  # fmt: skip
    assert sweep.returncode == 0, f"{sweep.stdout}\n{sweep.stderr}\n{slurm_cluster.log_tail()}"

    table = pd.read_parquet(results / "local" / "load.parquet")
    assert len(table) == 4 and (table["status"] == "ok").all(), table[["job", "node", "error"]]
    assert table.groupby("node")["job"].apply(sorted).to_dict() == {0: [0, 1], 1: [2, 3]}
    # each client read its own copy first, and kept replaying for the fixed time
    firsts = sorted(json.loads(urls)[0] for urls in table["urls"])
    assert firsts == sorted(str(data / f"copies-ordered-r{k}.root") for k in range(4))
    # the clock stops the replay at 2 s; its own wall may read a hair under
    assert (table["wall_s"] > 1.9).all() and (table["passes"] > 1).all(), table[
        ["wall_s", "passes"]
    ]
    assert table["batch_job_id"].notna().all() and table["batch_job_id"].nunique() == 2
