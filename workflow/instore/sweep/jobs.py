"""One job of a sweep point, run on a Dask worker: wait for the barrier, run, retry on failure."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from instore.container import Access, Target
from instore.container.measure import run_contained
from instore.container.warm import run_warm
from instore.record import JobFate, JobOutcome


@dataclass(frozen=True)
class Job:
    point_key: str
    index: int
    node: int
    argv: tuple[str, ...]
    target: Target
    access: Access
    startup_s: float | None
    timeout_s: float
    retries: int
    backoff_s: float = 2.0
    launch: str = "fork"  # fork: a child of the worker's warm payload; exec: a process of its own


def run_job(job: Job, start_at: float) -> JobOutcome:
    """Start at ``start_at`` (wall clock) with the other jobs of the point; keep every attempt's fate.

    A failed attempt is retried after an exponential back-off; the record keeps the number of
    attempts and the last error, so failures are counted, never dropped.
    """
    time.sleep(max(0.0, start_at - time.time()))
    skew = time.time() - start_at
    attempts, errors, notes = 0, [], []
    while True:
        attempts += 1
        if job.launch == "fork":
            record, container, note = run_warm(
                job.target, job.argv, job.access, timeout=job.timeout_s
            )
            notes += [note] if note else []
        else:
            record, container = run_contained(
                job.target,
                list(job.argv),
                job.access,
                startup_s=job.startup_s,
                timeout=job.timeout_s,
            )
        if not record.get("error"):
            break
        errors.append(str(record["error"]))
        if attempts > job.retries:
            break
        time.sleep(job.backoff_s * 2 ** (attempts - 1))
    fate = JobFate(
        job=job.index,
        node=job.node,
        attempts=attempts,
        status="failed" if record.get("error") else "ok",
        attempt_errors=errors,
        start_skew_s=skew,
        batch_job_id=os.environ.get("SLURM_JOB_ID"),  # the worker's own SLURM job, if any
        launch_note="; ".join(notes) or None,
    )
    return JobOutcome(record, container, fate)
