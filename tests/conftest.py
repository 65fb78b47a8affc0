"""Fixtures shared by all test levels: small generated files, made once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from instore.generate import generate_files

SMALL_EVENTS = 6000  # about 9 MB per file: big enough for clusters and caches to matter


@pytest.fixture(scope="session")
def small_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One replica of each layout, replica 0 of seed 7, plus replica 1 in the ordered layout."""
    out = tmp_path_factory.mktemp("files")
    written = generate_files(out, replicas=1, seed=7, n_events=SMALL_EVENTS, cluster_mb=2.0)
    extra = generate_files(
        out, layouts=["ordered"], replicas=2, seed=7, n_events=SMALL_EVENTS, cluster_mb=2.0
    )
    files = {layout: path for (layout, _), path in written.items()}
    files["ordered-r1"] = extra[("ordered", 1)]
    return files


def write_real_site(
    path: Path, endpoints: dict[str, str], nodes: int = 1, name: str = "local"
) -> Path:
    """A real-site file (nothing emulated, nothing started) with these endpoint templates."""
    site = {
        "name": name,
        "kind": "real",
        "profile": "local-disk",
        "description": "endpoints on this machine, for tests",
        "workers": {"nodes": nodes, "cores": 2},
        "endpoints": endpoints,
    }
    path.write_text(yaml.safe_dump(site))
    return path
