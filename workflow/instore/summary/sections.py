"""The study's sections, one registry: each section's title, the figures on its page (the
anchors ``summary.figures`` keeps) and the recommendation its points support, read by the
summary (``recommend``), the report (titles, links) and the notebooks. The names and their
order are the vocabulary's (``instore.vocabulary.SECTIONS``: the study file, the sweep and
the records use them); this registry adds what the summary and the report say about each.

It lives in the summary, not the study: a recommendation is a summary function, and the study
(which the summary reads) must not import the summary back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from instore.summary import recommend as advice
from instore.summary.advice import EFFICIENCY_FLOOR, Recommendation
from instore.summary.figures import FIGURES
from instore.vocabulary import SECTIONS as NAMES

Advice = Callable[[pd.DataFrame, float], Recommendation | None]


@dataclass(frozen=True)
class Section:
    """One section of the study: its name, its page's title, the recommendation its points
    support (None: none) and that recommendation's place among the overview's."""

    name: str
    title: str
    advice: Advice | None = None
    advice_rank: int | None = None  # the overview lists recommendations by this

    @property
    def figures(self) -> tuple[str, ...]:
        """The figures on the section's page (keys of ``summary.figures.FIGURES``)."""
        return tuple(key for key, (page, _) in FIGURES.items() if page == self.name)


def _stats_only(fn: Callable[[pd.DataFrame], Recommendation | None]) -> Advice:
    """A recommendation that takes no efficiency floor."""
    return lambda stats, _floor: fn(stats)


REGISTRY: dict[str, Section] = {
    s.name: s
    for s in (
        Section("layout", "File layout", _stats_only(advice.layout), 2),
        Section("cache", "TTreeCache size", _stats_only(advice.cache), 1),
        Section("protocols", "Protocols", _stats_only(advice.protocols), 0),
        Section("readahead", "Readahead and buffer size", _stats_only(advice.readahead), 3),
        Section("jobfill", "Jobs per node", advice.jobfill, 4),
        Section("format", "File format: TTree and RNTuple", _stats_only(advice.format_advice), 5),
        Section("caching", "Site cache and round-trip time", advice.caching, 6),
        Section("scale", "File size: NanoAOD-like files from 16 MB to 1 GB"),
        Section("replay", "Real analyses, recorded once and replayed here"),
        Section("load", "Many clients at once: which resource gives out first"),
        Section("scheduler", "The disk's I/O scheduler under load"),
        Section("filesystem", "The disk's file system under load: ext4 and xfs"),
    )
}
assert tuple(REGISTRY) == NAMES, "one registry entry per section of instore.vocabulary, in order"


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
