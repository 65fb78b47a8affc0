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


def trace_dir(data: Path, recorded_on: str, name: str) -> Path:
    """One recorded trace, under the site it was recorded on (``traces/<site>/<name>``): a
    study of a real site records its own, and never over the traces another site's replay
    points were measured with."""
    return traces_dir(data) / recorded_on / name


def recorded_traces(traces: Path) -> dict[str, dict[str, Path]]:
    """Every trace directory under ``traces`` (a study's ``traces_dir``, or any directory
    of traces), by name, then by the site it was recorded on: ``<site>/<name>``, or
    ``<name>`` directly (as earlier checkouts and hand-collected directories keep them; site
    "")."""
    found: dict[str, dict[str, Path]] = {}
    for meta in sorted(Path(traces).glob("*/trace.json")):
        found.setdefault(meta.parent.name, {})[""] = meta.parent
    for meta in sorted(Path(traces).glob("*/*/trace.json")):
        found.setdefault(meta.parent.name, {})[meta.parent.parent.name] = meta.parent
    return found


def choose_recording(recordings: dict[str, Path], prefer: Iterable[str] = ()) -> Path:
    """One of a trace's recordings: the first site of ``prefer`` that recorded it, else the
    one directly under the traces directory, else the first by site name."""
    for site in (*prefer, ""):
        if site in recordings:
            return recordings[site]
    return recordings[min(recordings)]
