"""Fixtures for integration tests that need real services started by the test set-up."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import wait_for_image_build, write_real_site
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


# A real (not emulated) site: this machine's own disk as a POSIX endpoint; no root needed.
STUDY = {
    "profile": "t",
    "profiles": {
        "t": {
            "sites": ["local"],
            "files": {"size_mb": 9, "replicas": 2, "seed": 7, "cluster_mb": 2},
            "retries": 1,
            "timeout_s": 120,
            "sections": {
                "layout": {"layout": ["unordered", "ordered"], "cache_mb": [0, "default"]},
                "cache": {"layout": ["ordered"], "cache_mb": [0, 2], "engine": ["root", "uproot"]},
                "jobfill": {"fill": [1, 2], "cpu_us": [100]},
            },
        }
    },
}
POINTS = 4 + 4 + 2


def sweep_args(
    env: dict[str, Path],
    results: Path,
    *extra: str,
    site: Path | None = None,
    study: Path | None = None,
) -> list[str]:
    """The arguments of `instore sweep` (for ``cli``) of ``env``'s site, study and data (as
    ``study_env`` has them; or ``site``, ``study``) into ``results``, scratch in ``env["tmp"]``."""
    return [
        "sweep", "--site", str(site or env["site"]), "--study", str(study or env["study"]),
        "--data", str(env["data"]), "--results", str(results),
        "--scratch", str(env["tmp"] / "scratch"), "--no-progress", *extra,
    ]  # fmt: skip


@pytest.fixture
def study_env(tmp_path: Path, small_files: dict[str, Path]) -> dict[str, Path]:
    files = tmp_path / "files"
    files.mkdir()
    for name in ("unordered-r0", "ordered-r0"):
        shutil.copy(small_files[name.split("-r")[0]], files / f"{name}.root")
    shutil.copy(small_files["ordered-r1"], files / "ordered-r1.root")
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump(STUDY))
    return {
        "site": write_real_site(tmp_path / "local.yaml", {"posix": f"{files}/{{file}}"}),
        "study": study,
        "data": files,
        "tmp": tmp_path,
    }


@pytest.fixture(scope="session")
def payload_image() -> dict:
    """Build the payload image once per test session (a no-op when it is current)."""
    from instore.container import image
    from instore.container.project import find_project

    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (make system)")
    wait_for_image_build()
    return image.build(find_project())
