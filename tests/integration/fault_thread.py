"""A fault caused from a thread of the test while a sweep runs in its own process group."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable


def run_with_fault(
    sweep: subprocess.Popen[str], fault: Callable[[], object], timeout: float = 600
) -> tuple[str, str]:
    """Wait for ``sweep`` (its stdout and stderr) while ``fault`` runs in a thread, waiting for
    its own moment; whatever happens, the sweep's process group is gone after, and an error
    the fault's thread met (its moment never came) fails the test."""
    errors: list[BaseException] = []

    def inject() -> None:
        try:
            fault()
        except BaseException as err:  # reported below, in the test's thread
            errors.append(err)

    thread = threading.Thread(target=inject)
    thread.start()
    try:
        out, err = sweep.communicate(timeout=timeout)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
        thread.join(timeout=60)
    assert not errors, errors
    return out, err
