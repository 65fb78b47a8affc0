"""Run labels: each labelled run of the study keeps its results, reports and logs apart, so a
site measured before a change and after it can be put side by side.

An unlabelled run writes ``results/``, ``reports/`` and ``logs/``; a run labelled
``after-upgrade`` writes ``results/runs/after-upgrade/`` (and likewise under ``reports/`` and
``logs/``), so it measures everything again. A baseline (``instore compare``, the report's
before-and-after page) is named by its label or by a results directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from instore.errors import InstoreError

RESULTS, REPORTS, LOGS = Path("results"), Path("reports"), Path("logs")
RUNS = "runs"  # labelled runs sit under <root>/runs/<label>
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # as config.schema.json's `run`


def check_label(label: str) -> str:
    if not LABEL.match(label):
        raise InstoreError(
            f"run label {label!r} is not a plain name",
            "use letters, digits, '.', '_' and '-', e.g. run=after-upgrade",
        )
    return label


def run_dir(root: Path, label: str | None) -> Path:
    """Where a run's outputs of one kind go: ``root`` itself, or ``root/runs/<label>``."""
    return root if not label else root / RUNS / check_label(label)


def results_of(name: str | Path, results: Path = RESULTS) -> Path:
    """An earlier run's results: a directory as given where it exists (or names a path, or
    is ``results`` itself: the unlabelled run), else the results of the run with that label."""
    path = Path(name)
    if path.is_dir() or len(path.parts) > 1 or path == results:
        return path
    return run_dir(results, str(name))


def labels(results: Path = RESULTS) -> list[str]:
    """The labels of the runs kept under ``results``."""
    runs = results / RUNS
    return sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
