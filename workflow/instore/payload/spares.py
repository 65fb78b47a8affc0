"""Spare children of the warm payload: forked and given their own pages ahead of a job.

A forked read makes its own copy of the warm parent's pages before its clock
(``instore.payload.pages``): 0.1-0.6 s of launch per job (root's 270 MiB, uproot's 80 MiB). A
spare does that while the payload is idle, then waits for a job: handing it one is a pipe
write, so the job is ready to measure a few milliseconds after its request. The payload keeps as
many spares as the sweep runs jobs at once on a worker (its largest fill), and makes them
between points only, once every job it ran has ended, and before it answers the last of them:
no spare copies memory beside a measured job, and concurrent jobs all start from a spare, so
their measured launch (which aligns their clocks) holds for each.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from instore.payload.pages import Pages, make_private

# In the spare, once it has its pages: run the job it is handed (request, stdout, stderr).
RunJob = Callable[[dict[str, Any], Path, Path], None]


@dataclass
class Spare:
    """One spare child: its pid and the pipe its job comes through."""

    pid: int
    job_fd: int  # write end: the job as one JSON message, then closed


def _spare_main(job_r: int, ready_w: int, pages: Sequence[Pages], run_job: RunJob) -> None:
    """In the spare: make the parent's pages its own, say so, wait for a job and run it (an
    empty pipe: the payload is stopping). Never returns."""
    try:
        make_private(pages)
        os.write(ready_w, b"1")
        os.close(ready_w)
        data = b""
        while chunk := os.read(job_r, 1 << 16):
            data += chunk
        if not data:
            os._exit(0)
        message = json.loads(data)
        run_job(message["request"], Path(message["out"]), Path(message["err"]))
    finally:
        os._exit(1)  # run_job exits itself; only a failure before it gets here


class SparePool:
    """The warm parent's spares (one parent thread: no locking)."""

    def __init__(self, size: int, pages: Sequence[Pages], run_job: RunJob) -> None:
        self.size = max(0, size)
        self.pages = pages
        self.run_job = run_job
        self.ready: list[Spare] = []

    def fill(self, close_fds: Sequence[int]) -> None:
        """Fork spares up to the pool's size, each closing ``close_fds`` (the parent's own),
        and wait until each has its pages."""
        while len(self.ready) < self.size:
            spare = self._fork([*close_fds, *(s.job_fd for s in self.ready)])
            if spare is None:
                return  # out of memory or processes: jobs fork as they come
            self.ready.append(spare)

    def _fork(self, close_fds: Sequence[int]) -> Spare | None:
        job_r, job_w = os.pipe()
        ready_r, ready_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (job_r, job_w, ready_r, ready_w):
                os.close(fd)
            return None
        if pid == 0:
            os.setpgid(0, 0)  # a group of its own from the start: stop() kills it by its group
            for fd in (*close_fds, job_w, ready_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            _spare_main(job_r, ready_w, self.pages, self.run_job)
        with contextlib.suppress(OSError):  # the child may have done it already
            os.setpgid(pid, pid)
        os.close(job_r)
        os.close(ready_w)
        ready = os.read(ready_r, 1)  # blocks until its pages are its own (or it died)
        os.close(ready_r)
        if ready != b"1":
            os.close(job_w)
            os.waitpid(pid, 0)
            return None
        return Spare(pid, job_w)

    def hand(self, request: dict[str, Any], out: Path, err: Path) -> int | None:
        """Give the job to a spare; its pid, or None when no spare is left (or it died)."""
        data = json.dumps({"request": request, "out": str(out), "err": str(err)}).encode()
        previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a dead spare: try the next
        try:
            while self.ready:
                spare = self.ready.pop()
                try:
                    left = data
                    while left:
                        left = left[os.write(spare.job_fd, left) :]
                except BrokenPipeError:
                    os.waitpid(spare.pid, 0)
                    continue
                finally:
                    os.close(spare.job_fd)
                return spare.pid
            return None
        finally:
            signal.signal(signal.SIGPIPE, previous)

    def stop(self) -> None:
        """End every spare: an empty pipe tells it to exit; its group is killed anyway."""
        for spare in self.ready:
            os.close(spare.job_fd)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(spare.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(spare.pid, 0)
        self.ready.clear()
