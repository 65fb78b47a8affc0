"""Two results directories compared (``compare_dirs``), each read as a comparison needs it: its
sites, each site's point summary, and the machine noise its sweeps recorded.

Each point carries the machine noise its sweeps recorded (the CPU unit's drift,
``noise_cpu_drift``, instore.sweep.noise), the largest over its jobs. A summary is read when
``instore summarize`` wrote one that is current (newer than the section tables, with the
per-repetition values an interval needs); otherwise it is computed from the section tables
the way ``instore summarize`` does, without writing into someone's results.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from instore.errors import InstoreError
from instore.summary import baseline
from instore.summary.baseline import NOISE_COLUMN, keys
from instore.summary.command import summarize, summary_path
from instore.summary.load import section_path, sections_present
from instore.summary.noise import DRIFT_LIMIT, machine_shift
from instore.summary.stats import GROUP, INTERVAL_METRICS

WHAT_IT_IS = "a directory `instore sweep --results` wrote (default results/), holding <site>/"


def _holds_records(path: Path) -> bool:
    return summary_path(path.parent, path.name).is_file() or bool(
        sections_present(path.parent, path.name)
    )


def sites_of(results: Path) -> list[str]:
    """The sites a results directory has records for; anything else is an error with a fix."""
    if not results.is_dir():
        raise InstoreError(
            f"{results}: no such directory, so not a results directory", f"give {WHAT_IT_IS}"
        )
    if _holds_records(results):
        raise InstoreError(
            f"{results}: the directory of site {results.name}, not a results directory",
            f"give its parent and the site: instore compare {results.parent} ... --site {results.name}",
        )
    sites = sorted(p.name for p in results.iterdir() if p.is_dir() and _holds_records(p))
    if not sites:
        raise InstoreError(
            f"{results}: not a results directory (no <site>/<section>.parquet or "
            "<site>/summary.parquet in it)",
            f"give {WHAT_IT_IS}",
        )
    return sites


def site_files(results: Path, site: str) -> list[Path]:
    """The files a comparison reads for a site (its summary and section tables; none when the
    directory has no results for it), after checking it is a results directory at all."""
    sites_of(results)
    tables = [section_path(results, site, s) for s in sections_present(results, site)]
    summary = summary_path(results, site)
    return [summary, *tables] if summary.is_file() else tables


def _current(results: Path, site: str) -> bool:
    """True when the written summary is newer than every section table and has the
    per-repetition values (``<metric>_runs``) a ratio's interval is computed from."""
    path = summary_path(results, site)
    if not path.is_file():
        return False
    names = set(pq.read_schema(path).names)
    if not all(f"{m}_runs" in names for m in INTERVAL_METRICS):
        return False
    tables = [section_path(results, site, s) for s in sections_present(results, site)]
    return all(t.stat().st_mtime <= path.stat().st_mtime for t in tables)


def site_summary(results: Path, site: str) -> pd.DataFrame:
    """One site's point statistics (the current summary, else computed from its records),
    each point with the machine noise its sweeps recorded."""
    if _current(results, site):
        stats = pd.read_parquet(summary_path(results, site))
    else:
        stats = summarize(results, site)[0]
    return with_noise(stats, results, site)


def with_noise(stats: pd.DataFrame, results: Path, site: str) -> pd.DataFrame:
    """Add ``NOISE_COLUMN`` (the CPU unit's drift) per point: the largest recorded with any of
    its jobs (NaN where the records carry none: sweeps from before the probes)."""
    if NOISE_COLUMN in stats:
        return stats
    frames = []
    for section in sections_present(results, site):
        path = section_path(results, site, section)
        names = pq.read_schema(path).names
        if NOISE_COLUMN in names:
            columns = [c for c in (*GROUP, NOISE_COLUMN) if c in names]
            frames.append(pd.read_parquet(path, columns=columns))
    out = stats.copy()
    out[NOISE_COLUMN] = float("nan")
    if not frames:
        return out
    rows = pd.concat(frames, ignore_index=True)
    worst: dict[tuple, float] = {}
    drift = pd.to_numeric(rows[NOISE_COLUMN], errors="coerce").abs()
    for key, value in zip(keys(rows), drift, strict=True):
        if pd.notna(value):
            worst[key] = max(worst.get(key, value), value)
    out[NOISE_COLUMN] = [worst.get(k, float("nan")) for k in keys(out)]
    return out


def choose_sites(a: list[str], b: list[str], site: str | None) -> tuple[list[str], list[str]]:
    """The sites to compare, and lines naming the sites only one run has."""
    if site is not None:
        if site in a and site in b:
            return [site], []
        where = "A" if site in a else "B" if site in b else None
        problem = f"site {site} is in {where} only" if where else f"site {site} is in neither run"
        raise InstoreError(
            f"{problem} (A has {', '.join(a)}; B has {', '.join(b)})",
            f"name a site both runs have ({', '.join(sorted(set(a) & set(b))) or 'none'}), "
            f"or sweep {site} into the other results directory"
            if where
            else f"name one of {', '.join(sorted(set(a) | set(b)))}",
        )
    common = sorted(set(a) & set(b))
    if not common:
        raise InstoreError(
            f"the two runs have no site in common (A has {', '.join(a)}; B has {', '.join(b)}), "
            "so no point of one matches a point of the other",
            "sweep the same site (a site file's `name:`) into both results directories",
        )
    notes = [f"site {s}: only in A" for s in a if s not in b]
    notes += [f"site {s}: only in B" for s in b if s not in a]
    return common, notes


def load(results: Path, sites: list[str]) -> pd.DataFrame:
    """The named sites' point statistics, one frame."""
    return pd.concat([site_summary(results, s) for s in sites], ignore_index=True)


# The smallest change a comparison names by default: what the machine-noise probes count as a
# quiet machine's variation. A degenerate interval can exclude 1 by a hair: seen by hand on a
# GSI/TLS site, two sweeps of one setup a minute apart, CPU efficiency 0.9995 against 1.0000 was
# "faster" with no threshold.
DEFAULT_NOISE = DRIFT_LIMIT


def compare_dirs(
    a: Path, b: Path, site: str | None = None, noise: float = DEFAULT_NOISE
) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table (``baseline.compare``) and what did not match. A change must
    exceed ``noise`` and each point's recorded CPU drift. How much the machine's probes moved
    between the two runs is reported (``table.attrs["machine_shift"]``), not used as a
    threshold: a short sweep takes two or three probes, too few to tell (seen in CI: 41% from
    one probe taken while the sweep's site was torn down)."""
    sites, notes = choose_sites(sites_of(a), sites_of(b), site)
    before = load(a, sites)
    after = before if a.resolve() == b.resolve() else load(b, sites)
    shift = 0.0 if a.resolve() == b.resolve() else machine_shift(a, b, sites)
    table = baseline.compare(before, after, noise)
    table.attrs["machine_shift"] = shift
    baseline.require_intervals(table)
    return table, notes + baseline.unmatched(before, after)
