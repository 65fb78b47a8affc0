"""The warm payload: import ROOT and compile the event loops once, then fork one child per job.

A cold ``instore read`` spends about 5 s starting (Python, ``import ROOT``, cling declaring and
JIT-compiling the loops) to measure 0.2-2 s. The warm payload pays that once per sweep of a site.
Each job is a fresh child forked from it, so every job still has clean state: its own process
group, TFile, XRootD client, counters and cgroup membership, and it exits at its end.

A forked child starts with the parent's memory shared copy-on-write and with none of the
parent's library pages mapped: each page it then writes is copied, and each code page it runs is
faulted in, on its first touch. A cold job has done both during its own start-up, before its
clock. Left in the clock, they cost a forked RNTuple job 2.4 times a cold job's page faults (8,200
against 3,400 for the root engine, 2,900 against 850 for uproot's) and 10-70 ms of a 40-200 ms
read. So a forked ``instore read`` first makes its own copy of every page the parent had (and
maps the parent's library pages), before its clock, as launch: its reading then faults as a cold
job's does. That costs each job about 0.2 s (root) or 0.06 s (uproot) and the memory a cold job
has (``instore.payload.pages``; bench/fork_bias.py measures it), paid ahead by spare children
made between points (``instore.payload.spares``).

Fork is safe because the parent never opens a file, socket or XRootD client and runs no thread:
it warms up on an in-memory tree only, and it says how many threads it has when it is ready
(one). One warm payload serves one engine: ROOT's XRootD client (in the ROOT wheel) and uproot's
(the PyPI ``xrootd`` package) crash a process that loads both, so a payload warmed for the
``uproot`` engine never imports ROOT, as a cold uproot job does not. A job that crashes, runs out of memory or times out ends only its own process group;
the parent serves the next job.

The protocol is JSON lines: requests on stdin (``id``, ``argv`` -- an ``instore`` command --,
``env``, ``timeout``), a ``ready`` line, then one response per job on stdout (``id``,
``exit_status`` as ``subprocess`` gives it: minus the signal for a killed job, ``timed_out``,
the job's ``stdout`` and ``stderr``, ``forked_at`` and ``ended_at``). The parent handles jobs
concurrently in one thread (a selector over stdin and one pidfd per child); end of stdin stops
it and every job still running.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from instore.payload.child import Entry, run_child, takes_spare
from instore.payload.pages import Pages, resident_pages
from instore.payload.spares import SparePool
from instore.payload.specs import PAYLOADS, forked_by
from instore.vocabulary import FORMATS

OUTPUT_TAIL = 200_000  # bytes of a job's stdout and stderr sent back (the record is the last line)
# The modules a job of each command runs (command -> module names), imported before forking
# rather than on a job's clock: the command line's own table (instore.cli.JOB_MODULES), handed
# down with its entry, so that nothing here names the modules of the commands above it.
JobModules = Mapping[str, Sequence[str]]


@dataclass
class Running:
    """One forked job the parent waits for."""

    id: str
    pid: int
    pidfd: int
    out: Path
    err: Path
    forked_at: float
    deadline: float | None
    timed_out: bool = False


def warm_up(
    engine: str, job_modules: JobModules, formats: Sequence[str] = FORMATS
) -> dict[str, Any]:
    """Everything a job of ``engine`` reading ``formats`` would do before its clock starts,
    done once: imports, and for ROOT, cling declaring, compiling and running the TTree loop and,
    when RNTuples are read, the RNTuple one (2 s here: not paid by a sweep of TTrees). Then the
    imports of every other engine whose jobs this payload forks (its spec's ``payload``: the
    replay's, in uproot's, never beside ROOT)."""
    started = time.perf_counter()
    from instore.payload import command  # noqa: F401  (the CLI a job runs)
    from instore.payload.objects import RNTUPLE, TTREE
    from instore.payload.runner import ENGINES
    from instore.record import Provenance

    ENGINES[engine].prepare(RNTUPLE if RNTUPLE in formats else TTREE)
    import uproot.source.coalesce
    import uproot.source.futures  # noqa: F401

    for spec in forked_by(engine):
        for module in (*spec.warm_imports, *job_modules[spec.command]):
            importlib.import_module(module)

    Provenance.collect()  # its cached parts (ROOT's release) are ready for every child
    return {"warm_s": time.perf_counter() - started, "formats": list(formats)}


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def write_line(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - OUTPUT_TAIL))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


class WarmParent:
    """The warm process's loop: read requests, fork jobs, answer as they end."""

    def __init__(
        self,
        reply_fd: int,
        engine: str,
        entry: Entry,
        request_fd: int = 0,
        pages: Sequence[Pages] = (),
        spares: int = 0,
    ) -> None:
        self.reply_fd = reply_fd
        self.entry = entry
        self.pages = pages  # what each read job makes its own before its clock
        self.engine = engine
        self.request_fd = request_fd
        self.selector = selectors.DefaultSelector()
        self.selector.register(request_fd, selectors.EVENT_READ, None)
        self.running: dict[int, Running] = {}  # by pidfd
        self.buffer = b""
        self.workdir = Path(tempfile.mkdtemp(prefix="instore-warm-"))
        self.count = 0
        # reads forked ahead, their pages already their own (instore.payload.spares)
        self.spares = SparePool(spares, pages, self._run_handed)

    def _run_handed(self, request: dict[str, Any], out: Path, err: Path) -> None:
        """In a spare handed a job: run it (its pages are its own already)."""
        run_child(request, out, err, [], self.entry)

    def own_fds(self) -> list[int]:
        """The descriptors a child of this parent closes: the protocol's and the jobs'."""
        return [self.reply_fd, self.request_fd, self.selector.fileno(), *self.running]

    def fill_spares(self) -> None:
        """Make the spares the pool is short of, when no job runs (never beside one)."""
        if not self.running:
            self.spares.fill(self.own_fds())

    def reply(self, message: dict[str, Any]) -> None:
        write_line(self.reply_fd, message)

    def serve(self) -> None:
        try:
            while True:
                for key, _ in self.selector.select(self._wait()):
                    if key.data is None:
                        if not self._read_requests():
                            return
                    else:
                        self._finish(key.data)
                self._expire()
        finally:
            self._stop_all()
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _wait(self) -> float | None:
        deadlines = [r.deadline for r in self.running.values() if r.deadline and not r.timed_out]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _read_requests(self) -> bool:
        data = os.read(self.request_fd, 1 << 16)
        if not data:
            return False  # the worker closed our stdin: stop
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if line.strip():
                self._start(line)
        return True

    def _start(self, line: bytes) -> None:
        try:
            request = json.loads(line)
            job_id = str(request["id"])
        except (ValueError, KeyError, TypeError) as err:
            self.reply({"id": None, "error": f"bad request ({err})"})
            return
        if request.get("engine", self.engine) != self.engine:  # two XRootD clients would crash it
            self.reply({"id": job_id, "exit_status": -1, "stdout": "",
                        "stderr": f"this warm payload serves the {self.engine} engine, "
                        f"not {request['engine']}"})  # fmt: skip
            return
        self.count += 1
        out = self.workdir / f"{self.count}.out"
        err = self.workdir / f"{self.count}.err"
        timeout = request.get("timeout")
        forked_at = time.time()
        pid = self.spares.hand(request, out, err) if takes_spare(request) else None
        if pid is None:
            try:
                pid = os.fork()
            except OSError as error:  # no memory or processes left: this job fails, not the server
                self.reply({"id": job_id, "exit_status": -1, "stdout": "",
                            "stderr": f"the warm payload could not fork the job: {error}"})  # fmt: skip
                return
            if pid == 0:
                run_child(request, out, err, self.own_fds(), self.entry, self.pages)
        pidfd = os.pidfd_open(pid)
        deadline = time.monotonic() + float(timeout) if timeout else None
        self.running[pidfd] = Running(job_id, pid, pidfd, out, err, forked_at, deadline)
        self.selector.register(pidfd, selectors.EVENT_READ, pidfd)

    def _expire(self) -> None:
        now = time.monotonic()
        for job in self.running.values():
            if job.deadline is not None and not job.timed_out and now >= job.deadline:
                job.timed_out = True
                _kill_group(job.pid)

    def _finish(self, pidfd: int) -> None:
        job = self.running.pop(pidfd)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(job.pid, 0)
        _kill_group(job.pid)  # anything the job left behind in its group (xrdcp, a helper)
        self.fill_spares()  # the last job of a point has ended: before its answer, so nothing is measured beside it
        self.reply(
            {
                "id": job.id,
                "pid": job.pid,
                "exit_status": -os.WTERMSIG(status)
                if os.WIFSIGNALED(status)
                else os.WEXITSTATUS(status),
                "timed_out": job.timed_out,
                "stdout": _tail(job.out),
                "stderr": _tail(job.err),
                "forked_at": job.forked_at,
                "ended_at": time.time(),
            }
        )
        job.out.unlink(missing_ok=True)
        job.err.unlink(missing_ok=True)

    def _stop_all(self) -> None:
        self.spares.stop()
        for job in self.running.values():
            _kill_group(job.pid)
            os.waitpid(job.pid, 0)
            os.close(job.pidfd)
        self.running.clear()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


# Threads the parent would otherwise start while importing: OpenBLAS's pool (numpy) and
# jemalloc's background thread (pyarrow, through pandas). A forked child keeps only the thread
# that forked; with these off the parent has that one thread only. Neither is on a job's I/O
# path (the payload does no linear algebra; jemalloc purges without it).
SINGLE_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false"}
# XRootD reads this when its client loads (here, at warm-up, for every forked job): it looks at
# requests' time-outs every so many seconds (15 by default), so a replay's request time-out, a
# third of its job's, would fire after the job's own and the record naming the request be lost.
CLIENT_ENV = {"XRD_TIMEOUTRESOLUTION": "1"}


def serve(
    engine: str,
    entry: Entry,
    job_modules: JobModules,
    formats: Sequence[str] = FORMATS,
    spares: int = 1,
) -> int:
    """Warm up for ``engine`` and ``formats``, say so, then serve its jobs until stdin
    closes, with ``spares`` reads forked ahead; each job runs its command line through ``entry`` (``instore.cli.main``, handed
    down by the command that started this, so nothing here imports the command line)."""
    for name, value in {**SINGLE_THREAD_ENV, **CLIENT_ENV}.items():
        os.environ.setdefault(name, value)
    # The protocol owns the real stdout; anything the libraries print goes to stderr instead.
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        ready = warm_up(engine, job_modules, formats)
    except Exception as err:  # one line: the worker reports it as the reason jobs cannot start
        write_line(reply_fd, {"ready": False, "error": f"{type(err).__name__}: {err}"})
        return 1
    # The warm objects move to the collector's permanent generation: a child's collections then
    # leave them alone instead of writing to (and so copying) every page that holds them.
    gc.freeze()
    pages = resident_pages()
    parent = WarmParent(reply_fd, engine, entry, pages=pages, spares=spares)
    parent.fill_spares()
    mib = {kind: round(sum(r.length for r in pages if r.writable == w) / 2**20)
           for kind, w in (("private_mib", True), ("mapped_mib", False))}  # fmt: skip
    parent.reply(
        {"ready": True, "engine": engine, "pid": os.getpid(), "threads": thread_count(),
         **ready, "pages": mib, "spares": len(parent.spares.ready)}
    )  # fmt: skip
    parent.serve()
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "warm",
        help="the warm payload a sweep starts once per worker and engine (jobs as JSON on stdin)",
        description="Import one engine (ROOT, with its event loops compiled and run once, or "
        "uproot), then run each job (an `instore read` command line sent as a JSON line on "
        "stdin) in a fresh forked child, and answer each with a JSON line on stdout. Sweeps "
        "start it; run it by hand only to debug it (containers/README.md has the protocol).",
    )
    p.add_argument(
        "--engine",
        choices=PAYLOADS,
        default="root",
        help="the engine whose jobs it runs (default root); uproot's never loads ROOT",
    )
    p.add_argument(
        "--formats",
        nargs="+",
        choices=FORMATS,
        default=list(FORMATS),
        help="the formats its jobs read, whose loops it compiles first (default: both; a job of "
        "another format compiles its own before its clock starts)",
    )
    p.add_argument(
        "--spares",
        type=int,
        default=1,
        help="reads forked ahead, their pages made private while no job runs: the most jobs a "
        "sweep runs at once here (default 1); 0 forks each job as it comes",
    )
    p.set_defaults(
        func=lambda args: serve(
            args.engine, args.entry, args.job_modules, args.formats, args.spares
        )
    )
