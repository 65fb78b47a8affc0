"""The Apptainer source build trusts only the hash pinned in envs/apptainer.sum (the module is
in no checksum database reachable here). Apart from test_apptainer.py, whose every test needs
the payload image and so runs at the end of the session (tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_apptainer_source_that_does_not_match_the_pinned_hash_is_not_built(tmp_path):
    """The module is in no checksum database reachable here: the pin in envs/apptainer.sum is
    what the build trusts, and a zip with another hash stops it before anything is built."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not os.access(go, os.X_OK):
        pytest.skip("Go is not installed")
    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "envs").mkdir()
    script = tmp_path / "envs" / "build-apptainer.sh"
    shutil.copy(repo / "envs" / "build-apptainer.sh", script)
    pinned = (repo / "envs" / "apptainer.sum").read_text()
    module, version, good = pinned.strip().splitlines()[-1].split()
    wrong = f"h1:{'A' * 43}="
    (tmp_path / "envs" / "apptainer.sum").write_text(f"{module} {version} {wrong}\n")
    env = {**os.environ, "APPTAINER_FORCE": "1", "PATH": f"{Path(go).parent}:{os.environ['PATH']}"}
    proc = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert f"does not match its pinned hash: pinned {wrong}, zip {good}" in proc.stderr
    assert not (tmp_path / "build" / "apptainer" / "bin").exists()
