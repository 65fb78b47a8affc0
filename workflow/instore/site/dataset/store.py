"""A real site's dataset description kept between commands: ``results/<site>/dataset.json``,
and the description a sweep reads (the kept one if current, else surveyed now, before any
planning: the sweep planner itself does no network I/O)."""

from __future__ import annotations

import json
from pathlib import Path

from instore.errors import InstoreError
from instore.site.config import SiteConfig
from instore.site.dataset.model import Dataset
from instore.site.dataset.surveyor import Surveyed, survey

DATASET_FILE = "dataset.json"


def path_of(results: Path, site: str) -> Path:
    return Path(results) / site / DATASET_FILE


def save(dataset: Dataset, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dataset.as_dict(), indent=1) + "\n")
    tmp.replace(path)


def load_current(site: SiteConfig, results: Path) -> Dataset | None:
    """The description kept in ``results``, if it was made for the site's dataset and
    endpoints as the site file now gives them (None: there is none, or it is stale)."""
    try:
        dataset = Dataset.from_dict(json.loads(path_of(results, site.name).read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    spec = site.dataset.as_dict() if site.dataset else None
    return dataset if (dataset.spec, dataset.endpoints) == (spec, site.endpoints) else None


def require(live: Surveyed, results: Path) -> Dataset:
    """The site's dataset for a sweep: the description kept in ``results`` if current, else
    surveyed now through ``live`` (and kept); a problem stops the sweep before anything starts."""
    site = live.config
    current = load_current(site, results)
    if current is not None:
        return current
    dataset, problems = survey(live)
    if dataset is None:
        raise InstoreError(
            f"site {site.name}: its dataset failed preflight: " + "; ".join(problems),
            f"act on each cause, then check with `instore site preflight {site.name}`",
        )
    save(dataset, path_of(results, site.name))
    return dataset
