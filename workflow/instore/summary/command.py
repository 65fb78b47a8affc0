"""``instore summarize``: per-point statistics and recommendations for one site."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from instore.calibration import read_calibration
from instore.summary.advice import EFFICIENCY_FLOOR, Recommendation
from instore.summary.limits import from_calibration
from instore.summary.load import read_site
from instore.summary.sections import recommend
from instore.summary.stats import point_stats


def summary_path(results: Path, site: str) -> Path:
    return results / site / "summary.parquet"


def recommendations_path(results: Path, site: str) -> Path:
    return results / site / "recommendations.json"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "summarize",
        help="per-point medians, spread, limit fractions and recommendations for one site",
        description="Read results/<site>/<section>.parquet and the site's calibration; write "
        "results/<site>/summary.parquet (one row per point) and "
        "results/<site>/recommendations.json.",
    )
    p.add_argument("--site", required=True, help="site name (a directory under --results)")
    p.add_argument("--results", type=Path, default=Path("results"), help="default: results")
    p.add_argument(
        "--floor",
        type=float,
        default=EFFICIENCY_FLOOR,
        help=f"CPU efficiency a job must keep in the job-fill advice (default {EFFICIENCY_FLOOR})",
    )
    p.set_defaults(func=run)


def summarize(
    results: Path, site: str, floor: float = EFFICIENCY_FLOOR
) -> tuple[pd.DataFrame, list[Recommendation]]:
    """The site's point statistics (with limit fractions) and what they recommend."""
    limits = from_calibration(read_calibration(results, site))
    rows = read_site(results, site)
    stats = point_stats(rows, limits)
    stats["limits_source"] = limits.source
    stats["site_profile"] = _storage(rows)
    return stats, recommend(stats, floor)


def _storage(rows: pd.DataFrame) -> str | None:
    """The site's storage profile as its latest run recorded it (the comparison's label)."""
    if "site_profile" not in rows or rows.empty:
        return None
    return str(rows.sort_values("start_time")["site_profile"].iloc[-1])


def write(results: Path, site: str, stats: pd.DataFrame, advice: list[Recommendation]) -> None:
    """Write both outputs via temporary names so a reader never sees half a file."""
    target = summary_path(results, site)
    tmp = target.with_suffix(".tmp")
    stats.to_parquet(tmp, index=False)
    tmp.replace(target)
    text = json.dumps([r.to_dict() for r in advice], indent=2, default=str) + "\n"
    rec = recommendations_path(results, site)
    rec.with_suffix(".tmp").write_text(text)
    rec.with_suffix(".tmp").replace(rec)


def run(args: argparse.Namespace) -> int:
    stats, advice = summarize(args.results, args.site, args.floor)
    write(args.results, args.site, stats, advice)
    print(
        f"instore summarize: {args.site}: {len(stats)} points -> {summary_path(args.results, args.site)}"
    )
    for rec in advice:
        print(f"  [{rec.section}] {rec.text}")
    return 0
