"""Load and validate config/study.yaml, resolved to one profile."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from instore.configfile import CONFIG_DIR, read_yaml, validate
from instore.errors import InstoreError

SECTIONS = ("layout", "cache", "protocols", "readahead", "jobfill")
DEFAULT_STUDY = CONFIG_DIR / "study.yaml"


@dataclass(frozen=True)
class FilesSpec:
    size_mb: float
    replicas: int
    seed: int = 1
    cluster_mb: float = 8.0


@dataclass(frozen=True)
class Study:
    path: Path
    profile: str
    tree: str
    sites: tuple[str, ...]
    files: FilesSpec
    repetitions: int
    timeout_s: float
    retries: int
    sections: Mapping[str, Mapping[str, list[Any]]] = field(default_factory=dict)
    backoff_s: float = 2.0  # first wait before a retry; doubles with each further attempt


def load_study(path: Path = DEFAULT_STUDY, overrides: Mapping[str, Any] | None = None) -> Study:
    """Read the study, apply overrides (``profile``, ``sites``) and return the chosen profile."""
    data = read_yaml(path)
    if isinstance(data, dict):
        data = {**data, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    validate(data, "study", path)
    name = data["profile"]
    if name not in data["profiles"]:
        raise InstoreError(
            f"{path}: field profile: no profile named {name!r}",
            f"choose one of {', '.join(data['profiles'])}",
        )
    prof = data["profiles"][name]
    return Study(
        path=path,
        profile=name,
        tree=data.get("tree", "events"),
        sites=tuple(data.get("sites") or prof["sites"]),
        files=FilesSpec(**prof["files"]),
        repetitions=prof.get("repetitions", 1),
        timeout_s=float(prof.get("timeout_s", 900)),
        retries=int(prof.get("retries", 2)),
        backoff_s=float(prof.get("backoff_s", 2.0)),
        sections=prof["sections"],
    )
