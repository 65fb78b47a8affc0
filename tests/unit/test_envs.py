"""The pinned environments agree: the lock, its direct dependencies, and the conda file."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ENVS = Path(__file__).resolve().parents[2] / "envs"
# PyPI's ROOT wheel has its own version scheme; conda-forge uses ROOT's release number.
PYPI_TO_CONDA_VERSION = {("root", "0.1a12"): "6.40.0"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock() -> dict[str, str]:
    pins = {}
    for line in (ENVS / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[_norm(name)] = version.strip()
    return pins


def _direct() -> set[str]:
    lines = (ENVS / "requirements.in").read_text().splitlines()
    return {_norm(line.split("#")[0].strip()) for line in lines if line.split("#")[0].strip()}


def _conda() -> dict[str, str]:
    """conda-forge packages (name=version) and the pip section (name==version) together."""
    deps = yaml.safe_load((ENVS / "conda.yaml").read_text())["dependencies"]
    pinned = {
        _norm(d.split("=")[0]): d.split("=", 1)[1]
        for d in deps
        if isinstance(d, str) and not d.startswith("python=")
    }
    for section in (d for d in deps if isinstance(d, dict)):
        pinned |= {
            _norm(p.split("==")[0]): p.split("==")[1].split()[0] for p in section.get("pip", [])
        }
    return pinned


def test_every_direct_dependency_is_pinned_in_the_lock() -> None:
    assert _direct() <= set(_lock()), _direct() - set(_lock())


def test_conda_names_the_same_packages_as_the_lock() -> None:
    assert set(_conda()) == _direct()


def test_conda_versions_match_the_lock() -> None:
    lock = _lock()
    for name, version in _conda().items():
        assert version == PYPI_TO_CONDA_VERSION.get((name, lock[name]), lock[name]), name
