"""What a job sees: data, scratch, local endpoint dirs, and the site's blkio cgroup in containers."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.container.runtime import Bind, _podman_volume
from instore.sweep.jobs import CONTAINER_CGROUP, access_for

CG = "/sys/fs/cgroup/blkio/instore-lan-hdd"


def test_host_jobs_join_the_cgroup_at_its_host_path(tmp_path: Path) -> None:
    access = access_for(
        ["/srv/disk/ordered-r0.root"],
        {"INSTORE_BLKIO_CGROUP": CG},
        tmp_path / "d",
        tmp_path / "s",
        False,
        False,
    )
    assert access.env["INSTORE_BLKIO_CGROUP"] == CG
    assert Path("/srv/disk") in {b.path for b in access.binds}


def test_container_jobs_see_the_cgroup_at_a_path_of_their_own(tmp_path: Path) -> None:
    access = access_for(
        [], {"INSTORE_BLKIO_CGROUP": CG}, tmp_path / "d", tmp_path / "s", False, True
    )
    assert access.env["INSTORE_BLKIO_CGROUP"] == CONTAINER_CGROUP
    bind = next(b for b in access.binds if b.path == Path(CG))
    assert bind.writable and _podman_volume(bind) == f"{CG}:{CONTAINER_CGROUP}:rw"


def test_binds_default_to_the_same_path_read_only() -> None:
    assert _podman_volume(Bind(Path("/data"))) == "/data:/data:ro"


def test_no_cgroup_no_bind(tmp_path: Path) -> None:
    access = access_for(["root://h//f.root"], {}, tmp_path / "d", tmp_path / "s", False, True)
    assert {b.path for b in access.binds} == {
        (tmp_path / "d").resolve(),
        (tmp_path / "s").resolve(),
    }


def test_the_callers_resolver_settings_reach_the_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host jobs start with a bare environment (PATH, HOME, what the access names): a resolver
    time-out the caller set (RES_OPTIONS) must reach them, on the host and in a container."""
    monkeypatch.setenv("RES_OPTIONS", "timeout:1 attempts:5")
    monkeypatch.delenv("LOCALDOMAIN", raising=False)
    for container in (False, True):
        access = access_for([], {}, tmp_path / "d", tmp_path / "s", False, container)
        assert access.env["RES_OPTIONS"] == "timeout:1 attempts:5"
        assert "LOCALDOMAIN" not in access.env
