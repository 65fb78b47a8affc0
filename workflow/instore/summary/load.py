"""Reading sweep results: ``results/<site>/<section>.parquet`` plus the site's calibration.

Everything a report shows starts here, so the reports never see anything but the records the
sweep wrote (one row per job) and the calibration the site package measured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from instore.errors import InstoreError
from instore.study import SECTIONS


def section_path(results: Path, site: str, section: str) -> Path:
    return results / site / f"{section}.parquet"


def sections_present(results: Path, site: str) -> list[str]:
    """The study sections this site has records for, in study order."""
    return [s for s in SECTIONS if section_path(results, site, s).is_file()]


SKIPPED_FILE = "skipped.json"  # results/<site>/: per section, why its points did not run here


def write_skipped(results: Path, site: str, by_section: Mapping[str, Mapping[str, int]]) -> Path:
    """Keep each planned section's skip reasons (points per reason) beside its table, for the
    section's page; sections not planned this time keep theirs."""
    path = results / site / SKIPPED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({**read_skipped(results, site), **by_section}, indent=1, sort_keys=True)
    )
    return path


def read_skipped(results: Path, site: str) -> dict[str, dict[str, int]]:
    """Per section, why points did not run on the site ({}: no sweep wrote it yet)."""
    path = results / site / SKIPPED_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def read_section(results: Path, site: str, section: str) -> pd.DataFrame:
    """One section's rows; a missing file is an error naming the sweep that makes it."""
    path = section_path(results, site, section)
    if not path.is_file():
        raise InstoreError(
            f"{path}: no records for site {site}, section {section}",
            f"run instore sweep --site {site} --sections {section}",
        )
    return pd.read_parquet(path)


def read_site(results: Path, site: str, sections: list[str] | None = None) -> pd.DataFrame:
    """All rows of a site (the named sections, or every section it has)."""
    names = sections if sections is not None else sections_present(results, site)
    if not names:
        raise InstoreError(
            f"{results / site}: no section records for site {site}",
            f"run instore sweep --site {site}",
        )
    return pd.concat([read_section(results, site, s) for s in names], ignore_index=True)


def read_study(results: Path, sites: list[str]) -> pd.DataFrame:
    """All rows of several sites, for the comparison and the explorer."""
    return pd.concat([read_site(results, s) for s in sites], ignore_index=True)


def decoded(frame: pd.DataFrame, column: str) -> pd.Series:
    """A JSON-string column as Python objects (null stays None)."""
    return frame[column].map(lambda v: json.loads(v) if isinstance(v, str) else None)


def counter(frame: pd.DataFrame, name: str) -> pd.Series:
    """One engine counter (e.g. ``perfstats_disk_s``) per row; NaN where the engine has none."""
    # A failed job's record may hold no counters (a JSON NaN, not an object).
    values = decoded(frame, "counters").map(lambda c: c.get(name) if isinstance(c, dict) else None)
    return pd.to_numeric(values, errors="coerce")
