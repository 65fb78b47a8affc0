"""Run the payload in its container and keep container start-up out of the job's I/O numbers.

The payload times its own work from inside its process, so container start-up is excluded from
``wall_s`` by construction. Start-up is measured on its own (``true`` in the same container,
N times, median) and recorded next to the job's wall and the outer wall seen from here, so a
report can show the difference instead of counting it as I/O wait.
"""

from __future__ import annotations

import contextlib
import json
import signal
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from instore.container.runtime import (
    NO_ACCESS,
    Access,
    Launch,
    Runtime,
    Target,
    failure_line,
    last_line,
    launch,
)
from instore.errors import InstoreError
from instore.record import ContainerRun

STARTUP_PROBE = ("true",)
# A job dies with the thread that started it: a sweep stopped by Ctrl-C or SIGTERM (its Dask
# workers closed) leaves no payload running on. setpriv is util-linux's, on every Linux host.
DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL", "--")


@dataclass(frozen=True)
class Startup:
    """Container start-up cost: the median of several ``true`` runs, and the samples."""

    median_s: float
    samples_s: tuple[float, ...]


def _timed(command: Launch, timeout: float | None) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    proc = subprocess.run(
        [*DIE_WITH_PARENT, *command.argv],
        env=command.env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return proc, time.perf_counter() - started


def measure_startup(target: Target, access: Access = NO_ACCESS, *, runs: int = 5) -> Startup:
    """Start the container ``runs`` times with the job's binds and env, doing nothing inside."""
    if runs < 1:
        raise InstoreError(
            f"start-up runs must be at least 1, got {runs}", "pass --startup-runs 1 or more"
        )
    probe = launch(target, STARTUP_PROBE, access)
    samples = []
    for _ in range(runs):
        proc, elapsed = _timed(probe, timeout=120)
        if proc.returncode != 0:
            raise InstoreError(
                f"the {target.runtime} container did not start (exit {proc.returncode}): "
                f"{last_line(proc.stderr)}",
                "check `instore container status` and rebuild with `instore container build`",
            )
        samples.append(elapsed)
    return Startup(statistics.median(samples), tuple(samples))


def parse_record(stdout: str) -> dict | None:
    """The payload's run record: the last stdout line that is a JSON object."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                return record
    return None


def _container_run(
    target: Target,
    startup_s: float | None,
    outer_wall_s: float,
    exit_status: int,
    launch_s: float | None = None,
) -> ContainerRun:
    return ContainerRun(
        runtime=target.runtime.value,
        image_digest=target.image_digest,
        container_startup_s=startup_s,
        outer_wall_s=outer_wall_s,
        exit_status=exit_status,
        launch="exec",
        launch_s=launch_s,
        own_names_in_hosts=target.runtime is Runtime.PODMAN,
    )


def run_contained(
    target: Target,
    payload_argv: Sequence[str],
    access: Access = NO_ACCESS,
    *,
    startup_s: float | None = None,
    timeout: float | None = None,
) -> tuple[dict[str, Any], ContainerRun]:
    """Run one payload job; return its run record and what the container adds, apart.

    A job that prints no record still returns one, with ``error`` saying why, so a failed
    run is recorded rather than dropped.
    """
    command = launch(target, payload_argv, access)
    submitted = time.time()
    try:
        proc, outer = _timed(command, timeout)
    except subprocess.TimeoutExpired:
        error = f"payload timed out after {timeout} s"
        return {"error": error}, _container_run(target, startup_s, float(timeout or 0), -1)
    record, launch_s = payload_record(proc.stdout, proc.stderr, proc.returncode, submitted)
    return record, _container_run(target, startup_s, outer, proc.returncode, launch_s)


def exit_text(status: int) -> str:
    """``exited 1``, or ``killed by SIGSEGV`` for a negative status (as subprocess gives it)."""
    if status < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-status).name}"
    return f"exited {status}"


def payload_record(
    stdout: str, stderr: str, status: int, submitted: float
) -> tuple[dict[str, Any], float | None]:
    """A finished payload's run record (or one whose ``error`` says why there is none), and
    how long after ``submitted`` it was ready to measure."""
    record = parse_record(stdout)
    if record is None:
        error = f"payload {exit_text(status)} without a run record: {failure_line(stderr)}"
        return {"error": error}, None
    ready_at = record.get("ready_at")
    return record, (float(ready_at) - submitted if ready_at is not None else None)


def run_payload(
    target: Target,
    payload_argv: Sequence[str],
    access: Access = NO_ACCESS,
    *,
    startup_s: float | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """``run_contained``'s two parts as one record: runtime, digest and start-up cost added."""
    record, container = run_contained(
        target, payload_argv, access, startup_s=startup_s, timeout=timeout
    )
    return {**record, **asdict(container)}
