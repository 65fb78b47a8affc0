"""What a sweep is asked to do (``SweepOptions``) and what it did (``SweepSummary``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from instore.errors import InstoreError
from instore.filenames import recorded_traces, trace_dir, traces_dir
from instore.site.config import site_name
from instore.study import Study
from instore.sweep.cluster import ClusterSpec

LAUNCHES = ("fork", "exec")  # a child of the worker's warm payload, or a process of its own


@dataclass
class SweepOptions:
    study: Study
    site: str
    sections: Sequence[str]
    data: Path = Path("data/files")
    results: Path = Path("results")
    scratch: Path = Path("data/scratch")
    force: bool = False
    runtime: str = "none"
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    progress: bool = True
    launch: str = "fork"
    traces: Sequence[Path] = ()  # the trace directories replayed, each by its name

    def trace(self, name: str) -> Path:
        """The trace a replay point of ``name`` replays: the one given by name (`make study`
        gives each), else the recording on the trace's own study site, else its only
        recording; where there is neither, the path it is expected at (the plan then names
        the command that records it)."""
        given = {Path(t).name: Path(t) for t in self.traces}
        if name in given:
            return given[name]
        site = site_name(self.study.trace(name).site)
        recordings = recorded_traces(traces_dir(self.data)).get(name, {})
        if site in recordings or len(recordings) != 1:
            return recordings.get(site, trace_dir(self.data, site, name))
        return next(iter(recordings.values()))

    def __post_init__(self) -> None:
        if self.launch not in LAUNCHES:
            raise InstoreError(
                f"unknown launch {self.launch!r}", f"choose one of {', '.join(LAUNCHES)}"
            )


@dataclass
class SweepSummary:
    site: str
    measured: int = 0
    already: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    substituted: dict[str, int] = field(default_factory=dict)  # ran over another protocol
    failed_points: int = 0
    repairs: list[str] = field(default_factory=list)
    tables: dict[str, Path] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def line(self) -> str:
        skipped = sum(self.skipped.values())
        line = f"{self.site}: measured {self.measured} point(s), {self.already} already measured, {skipped} skipped, {self.failed_points} with failed jobs"
        return line + (f", {len(self.repairs)} site repair(s)" if self.repairs else "")
