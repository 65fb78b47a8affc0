"""What every command and every point pays before it measures anything."""

from __future__ import annotations

import subprocess
import sys

from instore.sweep.runner import BARRIER_S, job_start_at


def test_single_job_point_starts_without_the_barrier() -> None:
    assert job_start_at(1, 100.0) == 100.0
    assert job_start_at(4, 100.0) == 100.0 + BARRIER_S


def test_config_validation_skips_the_slow_iri_checker() -> None:
    code = (
        "import sys, instore.configfile, jsonschema;"
        "print(sys.modules['rfc3987_syntax'] is None, 'iri' in jsonschema.FormatChecker().checkers)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
