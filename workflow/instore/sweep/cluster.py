"""Dask clusters for sweeps: one worker is one node of the site.

A ``LocalCluster`` by default (one machine, ``nodes`` worker processes), an existing scheduler
by address, or ``SLURMCluster`` from dask-jobqueue so a site spreads nodes over its batch system.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from distributed import Client, LocalCluster
from distributed.deploy import Cluster

from instore.errors import InstoreError
from instore.payload.threads import worker_cores

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterSpec:
    kind: str = "local"  # local | address | slurm
    address: str | None = None
    nodes: int = 1
    threads: int = 1  # concurrent jobs one node may run (the largest fill)
    slurm_queue: str | None = None
    slurm_walltime: str = "01:00:00"
    slurm_memory: str = "4GB"
    log_directory: str | None = None  # where SLURM writes the workers' job output
    timeout_s: float = 120.0


@contextlib.contextmanager
def cluster_client(spec: ClusterSpec) -> Iterator[tuple[Client, list[str]]]:
    """A client and the worker addresses, one per node, in a stable order."""
    if spec.kind == "address":
        with Client(spec.address, timeout=spec.timeout_s) as client:
            yield client, _workers(client, spec)
        return
    cluster = _slurm(spec) if spec.kind == "slurm" else _local(spec)
    try:
        with Client(cluster) as client:
            yield client, _workers(client, spec)
    finally:
        cluster.close()


def _local(spec: ClusterSpec) -> LocalCluster:
    return LocalCluster(
        n_workers=spec.nodes,
        threads_per_worker=spec.threads,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )


def _slurm(spec: ClusterSpec) -> Cluster:
    from dask_jobqueue import SLURMCluster

    cluster = SLURMCluster(
        cores=spec.threads,
        processes=1,
        memory=spec.slurm_memory,
        walltime=spec.slurm_walltime,
        queue=spec.slurm_queue,
        scheduler_options={"host": "127.0.0.1", "dashboard_address": None},
        log_directory=spec.log_directory,
    )
    cluster.scale(jobs=spec.nodes)
    return cluster


def _workers(client: Client, spec: ClusterSpec) -> list[str]:
    try:
        client.wait_for_workers(spec.nodes, timeout=spec.timeout_s)
    except TimeoutError as err:
        have = len(client.scheduler_info()["workers"])
        raise InstoreError(
            f"only {have} of {spec.nodes} Dask workers came up within {spec.timeout_s:.0f} s",
            "check the scheduler address or the batch system (squeue), or ask for fewer nodes",
        ) from err
    workers = sorted(client.scheduler_info()["workers"])
    return workers[: spec.nodes] if spec.kind != "address" else workers


def fewest_cores(client: Client, workers: list[str]) -> int | None:
    """The fewest cores any worker may run on (its CPU affinity): a point of more threads per
    job than that is skipped. None when a worker cannot say (the site file's cores still apply)."""
    try:
        return min(client.run(worker_cores, workers=workers).values())
    except Exception as err:  # a worker's failure to answer must not stop the sweep
        log.warning("asking the workers for their cores: %s", err)
        return None
