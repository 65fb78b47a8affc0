"""``make test``'s session beside the integration tests (tests/beside.py): its command runs as
background work that yields every core, says how it ended, and leaves no cgroup behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.beside import CPU_CGROUPS

REPO = Path(__file__).resolve().parents[2]
REPORT = "grep ':cpu:' /proc/self/cgroup; chrt -p $$ | head -1; exit 3"


def _ours() -> list[Path]:
    return sorted(CPU_CGROUPS.glob("instore-tests-beside-*")) if CPU_CGROUPS.is_dir() else []


def _beside(tmp_path: Path, *command: str) -> subprocess.Popen[bytes]:
    """Started as make starts it: a background job of a shell, whose SIGINT is ignored."""
    argv = [sys.executable, "-m", "tests.beside", "--lock", str(tmp_path / "lock"),
            "--log", str(tmp_path / "log"), "--", *command]  # fmt: skip
    ignore = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
    return subprocess.Popen(argv, cwd=REPO, preexec_fn=ignore)


def test_the_command_runs_idle_in_a_cgroup_of_its_own_and_its_status_comes_back(
    tmp_path: Path,
) -> None:
    before = _ours()
    proc = _beside(tmp_path, "sh", "-c", REPORT)
    assert proc.wait(timeout=60) == 3
    said = (tmp_path / "log").read_text()
    assert "SCHED_IDLE" in said, said
    if os.geteuid() == 0 and CPU_CGROUPS.is_dir():  # root, cgroup v1's CPU controller
        assert "cpu:/instore-tests-beside-" in said, said
    assert _ours() == before, "the cgroup is removed"


def test_ctrl_c_reaches_the_command_and_its_status_says_so(tmp_path: Path) -> None:
    before = _ours()
    waits = "import time; print('ready', flush=True); time.sleep(60)"
    proc = _beside(tmp_path, sys.executable, "-c", waits)
    log, end = tmp_path / "log", time.monotonic() + 60
    while time.monotonic() < end and "ready" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.05)  # (beside the integration tests, the command may wait for a core)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 128 + signal.SIGINT
    assert "KeyboardInterrupt" in log.read_text()
    assert _ours() == before
