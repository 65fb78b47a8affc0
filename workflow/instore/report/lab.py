"""``instore lab``: JupyterLab on the explorer notebook, reachable only from this machine."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from instore.configfile import REPO_ROOT
from instore.errors import InstoreError

EXPLORER = REPO_ROOT / "notebooks" / "explore.ipynb"


def lab_command(notebook: Path, port: int, token: str) -> list[str]:
    """Bound to 127.0.0.1 with a token: results stay private even on a shared node."""
    return [
        sys.executable, "-m", "jupyterlab", str(notebook), "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", "--no-browser",
        f"--ServerApp.root_dir={notebook.parent.parent}",
        # the study machines run everything as root; it stays on loopback behind a token
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]  # fmt: skip


def run_lab(notebook: Path = EXPLORER, port: int = 8888) -> int:
    if not notebook.is_file():
        raise InstoreError(f"{notebook}: no such notebook", "run from an instore checkout")
    token = os.environ.get("INSTORE_LAB_TOKEN") or secrets.token_urlsafe(24)
    print(
        f"instore lab: open http://127.0.0.1:{port}/lab/tree/notebooks/{notebook.name}?token={token}"
    )
    return subprocess.call(lab_command(notebook, port, token))
