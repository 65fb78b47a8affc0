"""Sweep-shaped results built from the real records in summary_records.jsonl.

Writes ``<results>/<site>/<section>.parquet`` exactly as ``instore sweep`` lays them out, so
the summary and report tests read the same files the pipeline does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

RECORDS = Path(__file__).with_name("summary_records.jsonl")
SITES = ("fixture-cold", "fixture-warm")


def rows() -> pd.DataFrame:
    return pd.read_json(RECORDS, lines=True, dtype=False)


def write_results(results: Path, frame: pd.DataFrame | None = None) -> Path:
    """One Parquet table per site and section; returns ``results``."""
    frame = rows() if frame is None else frame
    for (site, section), part in frame.groupby(["site", "section"]):
        out = results / site
        out.mkdir(parents=True, exist_ok=True)
        part.reset_index(drop=True).to_parquet(out / f"{section}.parquet", index=False)
    return results


def write_calibration(results: Path, site: str, data: dict) -> Path:
    path = results / site / "calibration.json"
    path.write_text(json.dumps(data))
    return path
