"""Where the study's files are and what they are called: one pattern, used by the generator,
the sweep and the rules. Below the study and the generator, which both name files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

DEFAULT_FILESET = "default"  # the profile's `files`: the study's own analysis-like schema


def replica_name(layout: str, replica: int, fileset: str = "") -> str:
    """``[<fileset>-]<layout>-r<replica>.root``: replica k of a layout (concurrent jobs read
    distinct ones); a named file set's files carry its name first."""
    prefix = f"{fileset}-" if fileset else ""
    return f"{prefix}{layout}-r{replica}.root"


def replica_names(layouts: Iterable[str], replicas: int, fileset: str = "") -> list[str]:
    """Every file a study needs: each layout, replicas 0 .. replicas-1."""
    return [replica_name(layout, k, fileset) for layout in layouts for k in range(replicas)]


def traces_dir(data: Path) -> Path:
    """Where the study's recorded traces are: beside the files they read, which every job
    sees (the data directory is bound into the payload's container)."""
    return data / "traces"
