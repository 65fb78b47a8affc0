"""`instore lab` serves JupyterLab on loopback only, and only with its token."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.cli import Cli
from tests.integration.grid_site import free_port

pytestmark = pytest.mark.integration


def _listening(port: int) -> set[str]:
    """Local addresses with a socket in LISTEN state on this port (from /proc/net/tcp{,6})."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.split(":")
            if state == "0A" and int(hexport, 16) == port:
                found.add(addr)
    return found


def _get(url: str) -> int:
    try:
        return urllib.request.urlopen(url, timeout=5).status
    except urllib.error.HTTPError as err:
        return err.code


def test_lab_binds_loopback_and_requires_its_token(tmp_path: Path, cli: Cli) -> None:
    port, token = free_port(), "instore-test-token"
    env = {
        **os.environ,
        "INSTORE_LAB_TOKEN": token,
        "JUPYTER_RUNTIME_DIR": str(tmp_path),
        "JUPYTER_CONFIG_DIR": str(tmp_path),
    }
    proc = cli.popen(
        "lab",
        "--port",
        str(port),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 90
        while not _listening(port) and time.time() < deadline:
            time.sleep(0.5)
        assert _listening(port) == {"0100007F"}, "listening on 127.0.0.1 only"
        base = f"http://127.0.0.1:{port}/api/contents"
        assert _get(base) == 403
        assert _get(f"{base}?token=wrong") == 403
        assert _get(f"{base}?token={token}") == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
