"""Where a site's calibration lives in a results directory, and reading it back.

One implementation for everyone: ``instore site calibrate`` writes it, the sweep records it
with every run (``LiveSite.conditions``) and the summaries and reports read it. All of them
are given the results directory (``--results``, so ``snakemake --directory`` moves it too).
Kept free of heavy imports: notebooks and reports import it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from instore.errors import InstoreError

FILE_NAME = "calibration.json"


def calibration_path(results: Path, site: str) -> Path:
    """``<results>/<site>/calibration.json``."""
    return Path(results) / site / FILE_NAME


def read_calibration(results: Path, site: str) -> dict[str, Any] | None:
    """The stored calibration of a site, or None if it was never calibrated. A damaged file is
    an error, not None: a report silently without limits would hide it."""
    path = calibration_path(results, site)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError as err:
        raise InstoreError(
            f"{path}: not valid JSON ({err})", f"rerun `instore site calibrate {site}`"
        ) from err


def write_calibration(results: Path, site: str, record: dict[str, Any]) -> Path:
    """Write the record atomically (a killed calibration leaves no half file); return the path."""
    path = calibration_path(results, site)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def read_rate(entry: Mapping[str, Any]) -> float | None:
    """A protocol's calibrated rate: the faster of its whole-file copy and its open file's
    read (``instore.site.calibrate``). Each is a lower bound of what the storage delivers: a
    copy's also holds the tool's start, connection and authentication (19 MB/s against the
    read's 164 over GSI for a 7.8 MB file), the read's one request at a time from Python
    (733 MB/s against the copy's 1,163 over plain http on lan-ssd, 2026-11-28)."""
    rates = [r for r in (entry.get("read_mb_per_s"), entry.get("mb_per_s")) if r]
    return max(rates) if rates else None
