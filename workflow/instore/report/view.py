"""What a report notebook works from: one site's rows, point statistics, limits and conditions.

Notebooks stay thin: they build a ``SiteView`` from their parameters and hand it to the
figure and table functions, which read nothing but the Parquet records and the calibration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from instore.calibration import read_calibration
from instore.errors import InstoreError
from instore.report.conditions import prevailing
from instore.summary.command import recommendations_path, summary_path
from instore.summary.limits import Limits, from_calibration
from instore.summary.load import read_section, sections_present
from instore.summary.stats import cache_label, with_derived


@dataclass
class SiteView:
    site: str
    results: Path
    limits: Limits = field(default_factory=Limits)
    # The sections whose page already said why it has nothing to show (said once a page, however
    # many of its parts ask)
    told_empty: set[str] = field(default_factory=set, compare=False, repr=False)

    @classmethod
    def load(cls, site: str, results: str | Path) -> SiteView:
        """A view on a summarised site; an unknown or unsummarised site fails here, first."""
        path = Path(results)
        if not summary_path(path, site).is_file():
            raise InstoreError(
                f"{summary_path(path, site)}: no summary for site {site}",
                f"run instore summarize --site {site} --results {path}",
            )
        return cls(site, path, from_calibration(read_calibration(path, site)))

    @cached_property
    def stats(self) -> pd.DataFrame:
        """The summary ``instore summarize`` wrote (one row per point)."""
        return pd.read_parquet(summary_path(self.results, self.site))

    def points(self, section: str) -> pd.DataFrame:
        """Point statistics of one section, only points with at least one successful job."""
        part = self.stats[self.stats["section"] == section]
        return part[part["jobs_ok"] > 0].reset_index(drop=True)

    def rows(self, section: str, ok_only: bool = True) -> pd.DataFrame:
        """One section's job rows with derived columns and axis labels (empty: the site ran
        none, e.g. a section limited to other sites)."""
        raw = read_section(self.results, self.site, section)
        if raw.empty:
            return raw
        rows = with_derived(raw)
        rows["cache"] = rows["cache_mb"].map(cache_label)
        return rows[rows["status"] == "ok"] if ok_only else rows

    @property
    def sections(self) -> list[str]:
        return sections_present(self.results, self.site)

    def recommendations(self) -> list[dict[str, Any]]:
        return json.loads(recommendations_path(self.results, self.site).read_text())

    def conditions(self) -> dict[str, Any]:
        """The emulation and calibration the sweep recorded with most of the site's records."""
        return self.conditions_by_section()[0]

    def conditions_by_section(self) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """What most of the site's records ran under, and the sections that ran under other
        conditions, with what differed (``report.conditions.prevailing``)."""
        if not self.sections:
            return {}, []
        rows = pd.concat([read_section(self.results, self.site, s) for s in self.sections])
        if rows.empty or "start_time" not in rows:
            return {}, []
        return prevailing(rows)
