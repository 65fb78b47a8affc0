"""The names of the generated files: one pattern, used by the generator, the sweep and the rules."""

from __future__ import annotations

from collections.abc import Iterable


def replica_name(layout: str, replica: int, fileset: str = "") -> str:
    """``[<fileset>-]<layout>-r<replica>.root``: replica k of a layout (concurrent jobs read
    distinct ones); a named file set's files carry its name first."""
    prefix = f"{fileset}-" if fileset else ""
    return f"{prefix}{layout}-r{replica}.root"


def replica_names(layouts: Iterable[str], replicas: int, fileset: str = "") -> list[str]:
    """Every file a study needs: each layout, replicas 0 .. replicas-1."""
    return [replica_name(layout, k, fileset) for layout in layouts for k in range(replicas)]
