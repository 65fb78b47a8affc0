"""What every command and every point pays before it measures anything."""

from __future__ import annotations

import subprocess
import sys

from instore.sweep.runner import BARRIER_S, job_start_at


def test_single_job_point_starts_without_the_barrier() -> None:
    assert job_start_at(1, 100.0) == 100.0
    assert job_start_at(4, 100.0) == 100.0 + BARRIER_S


def test_validating_a_config_or_a_notebook_builds_no_grammar() -> None:
    """jsonschema 4.25 added rfc3987-syntax to the extra jupyter-events asks for, and importing
    it builds a Lark grammar: about 1.9 s of every process that validates a config or imports
    nbformat (each notebook a study executes, each page it renders, Snakemake itself). The lock
    pins jsonschema below 4.25 (envs/requirements.in)."""
    code = (
        "import sys, instore.configfile, nbformat, jsonschema;"
        "print('lark' in sys.modules, 'iri' in jsonschema.FormatChecker().checkers)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
