"""The study's sections, one module each (``instore.summary.sections.<name>``: its title, the
paragraph its page opens with, the statistics its page tabulates per point, its figures and
their anchors, the parts its page draws and the recommendation its points support), gathered
here into one registry read by the summary (``recommend``), the report (titles, tables, links,
the one section notebook), the figure table (``summary.figures``) and the generated study-file
reference. The names and their order are the vocabulary's (``instore.vocabulary.SECTIONS``: the
study file, the sweep and the records use them).

It lives in the summary, not the study: a recommendation is a summary function, and the study
(which the summary reads) must not import the summary back.
"""

from __future__ import annotations

import pandas as pd

from instore.summary.advice import EFFICIENCY_FLOOR, Recommendation
from instore.summary.sections import (
    cache,
    caching,
    filesystem,
    jobfill,
    layout,
    load,
    protocols,
    readahead,
    replay,
    scale,
    scheduler,
)
from instore.summary.sections import format as file_format
from instore.summary.sections.base import Section, Statistics
from instore.vocabulary import SECTIONS as NAMES

__all__ = ["REGISTRY", "Section", "Statistics", "recommend", "statistics", "title"]

_MODULES = (layout, cache, protocols, readahead, jobfill, file_format, caching, scale, replay, load,
            scheduler, filesystem)  # fmt: skip
REGISTRY: dict[str, Section] = {
    s.name: s for s in sorted((m.SECTION for m in _MODULES), key=lambda s: NAMES.index(s.name))
}
assert tuple(REGISTRY) == NAMES, (
    f"one module per section of instore.vocabulary: {sorted(set(NAMES) - set(REGISTRY))} have "
    f"none (add instore/summary/sections/<name>.py and import it here), "
    f"{sorted(set(REGISTRY) - set(NAMES))} are not in the vocabulary"
)


def statistics(section: str) -> Statistics:
    """What the section's page tabulates per point."""
    return REGISTRY[section].statistics


def title(section: str) -> str:
    """The section's title (a name that is no section: the name itself)."""
    found = REGISTRY.get(section)
    return found.title if found else section


def recommend(stats: pd.DataFrame, floor: float = EFFICIENCY_FLOOR) -> list[Recommendation]:
    """Every recommendation the site's results support, in the overview's order."""
    advising = sorted((s for s in REGISTRY.values() if s.advice is not None),
                      key=lambda s: s.advice_rank or 0)  # fmt: skip
    found = [s.advice(stats, floor) for s in advising if s.advice is not None]
    return [r for r in found if r is not None]
