"""Fixtures for integration tests that need real services started by the test set-up."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.slurm import SOCKET_PATH_MAX, SlurmCluster, missing_programs, running


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A real single-node SLURM (munged, slurmctld, slurmd) private to this test session.

    Clients reach it with ``cluster.env`` (``SLURM_CONF``) added to their environment; submit
    from ``cluster.workdir``. Every job is cancelled and every daemon stopped by PID at the end,
    whether the tests passed or not.
    """
    missing = missing_programs()
    if missing:
        pytest.skip(f"SLURM/munge not installed ({', '.join(missing)}): make system")
    if os.geteuid() != 0:
        pytest.skip("the test SLURM cluster runs slurmd, which needs root")
    root = tmp_path_factory.mktemp("slurm")
    own = None
    if len(str(root)) > SOCKET_PATH_MAX - 40:  # keep UNIX socket paths short
        own = root = Path(tempfile.mkdtemp(prefix="instore-slurm-"))
    try:
        with running(root) as cluster:
            yield cluster
    finally:
        if own is not None:
            shutil.rmtree(own, ignore_errors=True)
