"""What a section declares about its page: its title, the paragraph that opens the page, the
statistics its table gives per point, its figures (each one's anchor, in page order), the parts
its page draws, and the recommendation its points support. One module per section
(``instore.summary.sections.<name>``) makes one ``Section``; the registry, the figure table and
the one section notebook are built from them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from instore.summary.advice import Recommendation

Advice = Callable[[pd.DataFrame, float], Recommendation | None]


@dataclass(frozen=True)
class Statistics:
    """What a section's page tabulates per point, in order: columns of the summary's points (or
    of the page's own per-point frame, for pages built from records) under their words. A
    figure with an interval is shown as ``median [lo, hi]`` with what it rests on
    (``report.intervals.table``); ``percent``: columns shown as percentages; ``optional``:
    columns left out where no point fills them."""

    columns: Mapping[str, str]
    percent: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def shown(self, frame: pd.DataFrame, leave_out: tuple[str, ...] = ()) -> dict[str, str]:
        """The columns ``frame`` fills (an optional one only where some point has it)."""
        return {c: w for c, w in self.columns.items() if c not in leave_out
                and (c not in self.optional or (c in frame and frame[c].notna().any()))}  # fmt: skip


@dataclass(frozen=True)
class Section:
    """One section of the study and its page. ``about``: the paragraph the page opens with;
    ``figures``: figure key -> anchor id, in page order (a recommendation links to one);
    ``page``: the parts the page draws after its header, in order (names the report's parts
    are registered under, ``instore.report.parts``); ``advice``: the recommendation its points
    support (None: none), ``advice_rank`` its place among the overview's; ``files``: the page
    draws from the generated files themselves (the pipeline waits for them)."""

    name: str
    title: str
    about: str
    statistics: Statistics = field(default_factory=lambda: Statistics({}))
    figures: Mapping[str, str] = field(default_factory=dict)
    page: tuple[str, ...] = ()
    advice: Advice | None = None
    advice_rank: int | None = None  # the overview lists recommendations by this
    files: bool = False

    def link(self, key: str) -> str:
        """Relative link from a site's overview page to one of this section's figures."""
        return f"{self.name}.html#{self.figures[key]}"


def stats_only(fn: Callable[[pd.DataFrame], Recommendation | None]) -> Advice:
    """A recommendation that takes no efficiency floor."""
    return lambda stats, _floor: fn(stats)


# Words shared by several sections' tables.
JOBS = {"jobs_ok": "jobs", "jobs_failed": "failed"}
WALL = {"wall_s_median": "wall time (s)"}
EFFICIENCY = {"cpu_efficiency_median": "CPU efficiency"}
MB_S = {"mb_per_s_median": "MB/s", "mb_per_s_of_limit": "MB/s, share of calibrated"}
READS = {"read_calls_median": "read calls (median)", "bytes_read_median": "bytes read (median)"}
