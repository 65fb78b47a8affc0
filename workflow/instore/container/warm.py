"""Run payload jobs through a warm payload (``instore warm``) instead of one process each.

A Dask worker (a node) starts one warm payload in the job's container (or on the host with
runtime ``none``) when its sweep starts, and sends it each job as a JSON line; the warm payload
forks a fresh child per job (``instore.payload.warm``). A job's result comes back as the same
two parts a cold start gives (``run_contained``): the payload's record and what launching it
added, here with ``launch`` = ``fork`` and the time from submission to the payload being ready to
measure (``launch_s``).

One warm payload serves one engine and one set of binds (the sweep's), so a worker process keeps
them in a table keyed on the target, the binds and the engine (ROOT's and uproot's XRootD
clients cannot share a process). A warm payload that died is replaced at the next job,
and that job's record says so (``launch_note``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from instore.container.measure import DIE_WITH_PARENT, exit_text, payload_record
from instore.container.runtime import Access, Runtime, Target, last_line, launch
from instore.errors import InstoreError
from instore.record import ContainerRun
from instore.vocabulary import FORMATS

log = logging.getLogger(__name__)
WARM_ARGV = ("instore", "warm", "--engine")
READY_TIMEOUT_S = 300.0  # import ROOT and compile the loops; the image may be cold on disk
REPLY_GRACE_S = 30.0  # the warm payload kills a job at its timeout; past this it is hung
NAME_PREFIX = "instore-warm"
_names = itertools.count()


@dataclass
class Reply:
    """A job's answer, or why none came."""

    message: dict[str, Any] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)


class WarmPayload:
    """One warm payload process and the jobs in flight through it."""

    def __init__(
        self,
        target: Target,
        access: Access,
        engine: str = "root",
        formats: Sequence[str] = FORMATS,
        spares: int = 1,
    ) -> None:
        self.target, self.access, self.engine = target, access, engine
        self.formats = tuple(formats)  # whose loops it compiles before it is ready
        self.spares = spares  # reads it forks ahead: the most jobs the sweep runs here at once
        self.name = f"{NAME_PREFIX}-{os.getpid()}-{next(_names)}"
        self.pending: dict[str, Reply] = {}
        self.lock = threading.Lock()
        self.ready = Reply()
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc: subprocess.Popen[bytes] | None = None
        self.ended: str | None = None  # why it stopped, once it has
        self.started = time.perf_counter()
        self.start_s: float | None = None  # from start to ready
        # The process is started by the thread that reads it, so that it dies with that thread
        # (setpriv's parent-death signal follows the starting thread).
        self.reader = threading.Thread(target=self._run, name=self.name, daemon=True)
        self.reader.start()

    # -- start and stop --------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        target: Target,
        access: Access,
        engine: str = "root",
        formats: Sequence[str] = FORMATS,
        timeout: float = READY_TIMEOUT_S,
        spares: int = 1,
    ) -> WarmPayload:
        """Start one and wait until it is warm; a one-line error when it cannot start."""
        warm = cls(target, access, engine, formats, spares)
        if not warm.ready.done.wait(timeout):
            warm.close()
            raise InstoreError(
                f"the warm payload ({target.runtime}) was not ready after {timeout:.0f} s",
                "check `instore container status`; run jobs cold with --launch exec meanwhile",
            )
        if not warm.ready.message.get("ready"):
            reason = warm.ready.message.get("error") or warm.ended or "no reason given"
            warm.close()
            raise InstoreError(
                f"the warm payload ({target.runtime}) did not start: {reason}",
                "check `instore container status` (rebuild with `instore container build`)",
            )
        return warm

    @property
    def info(self) -> dict[str, Any]:
        """What it said when it was ready: pid, threads, warm-up time."""
        return {**self.ready.message, "start_s": self.start_s}

    def _run(self) -> None:
        argv = (*WARM_ARGV, self.engine, "--spares", str(self.spares), "--formats", *self.formats)
        command = launch(self.target, argv, self.access, name=self.name)
        try:
            self.proc = subprocess.Popen(
                [*DIE_WITH_PARENT, *command.argv],
                env=command.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
            )
        except OSError as err:
            self._end(f"cannot start it ({err})")
            return
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._dispatch(line)
        status = self.proc.wait()
        self._end(f"{exit_text(status)}: {self._stderr_tail()}")

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # not ours (the warm payload sends its own stdout elsewhere)
        if "ready" in message:
            self.start_s = time.perf_counter() - self.started
            self.ready.message = message
            self.ready.done.set()
            return
        with self.lock:
            reply = self.pending.pop(str(message.get("id")), None)
        if reply is not None:
            reply.message = message
            reply.done.set()

    def _end(self, why: str) -> None:
        with self.lock:
            self.ended = why
            waiting, self.pending = list(self.pending.values()), {}
        for reply in [self.ready, *waiting]:
            reply.done.set()

    def _stderr_tail(self) -> str:
        with contextlib.suppress(OSError):
            self.stderr.seek(0)
            return last_line(self.stderr.read()[-20_000:].decode(errors="replace"))
        return "(no output)"

    def alive(self) -> bool:
        return self.ended is None

    def close(self, timeout: float = 30.0) -> None:
        """Stop it: end of stdin stops the warm payload and every job it still runs."""
        proc = self.proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        if proc is not None:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self.target.runtime is Runtime.PODMAN and self.target.store is not None:
            remove_containers(self.target, self.name)
        self.reader.join(5)
        self.stderr.close()

    # -- jobs ------------------------------------------------------------------------------
    def run(
        self, payload_argv: Sequence[str], env: dict[str, str], timeout: float | None
    ) -> tuple[dict[str, Any], ContainerRun]:
        """Run one job in a forked child; the same two parts as ``run_contained``."""
        job_id = os.urandom(8).hex()
        reply = Reply()
        request = {"id": job_id, "argv": list(payload_argv), "env": env, "timeout": timeout,
                   "engine": self.engine}  # fmt: skip
        submitted = time.time()
        with self.lock:
            if self.ended is None:
                self.pending[job_id] = reply
        if not self._send(request):
            with self.lock:
                self.pending.pop(job_id, None)
            return self._failed(f"the warm payload had stopped ({self.ended})", submitted)
        wait = None if timeout is None else timeout + REPLY_GRACE_S
        if not reply.done.wait(wait):
            self.ended = self.ended or f"no answer {wait:.0f} s after a job was sent: hung"
            self.close(timeout=5)
            return self._failed(f"the warm payload hung ({self.ended})", submitted)
        if not reply.message:
            return self._failed(
                f"the warm payload died while the job ran ({self.ended})", submitted
            )
        return self._result(reply.message, timeout, submitted)

    def _send(self, request: dict[str, Any]) -> bool:
        proc = self.proc
        if self.ended is not None or proc is None or proc.stdin is None:
            return False
        data = (json.dumps(request) + "\n").encode()
        with self.lock:
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
            except (OSError, ValueError):
                return False
        return True

    def _result(
        self, message: dict[str, Any], timeout: float | None, submitted: float
    ) -> tuple[dict[str, Any], ContainerRun]:
        status = int(message.get("exit_status", -1))
        outer = float(message.get("ended_at", time.time())) - submitted
        if message.get("timed_out"):
            return {"error": f"payload timed out after {timeout} s"}, self._run_info(outer, -1)
        record, launch_s = payload_record(
            message.get("stdout", ""), message.get("stderr", ""), status, submitted
        )
        return record, self._run_info(outer, status, launch_s)

    def _failed(self, error: str, submitted: float) -> tuple[dict[str, Any], ContainerRun]:
        return {"error": error}, self._run_info(time.time() - submitted, -1)

    def _run_info(self, outer: float, status: int, launch_s: float | None = None) -> ContainerRun:
        return ContainerRun(
            runtime=self.target.runtime.value,
            image_digest=self.target.image_digest,
            container_startup_s=None,
            outer_wall_s=outer,
            exit_status=status,
            launch="fork",
            launch_s=launch_s,
            own_names_in_hosts=self.target.runtime is Runtime.PODMAN,
        )


def remove_containers(target: Target, name: str) -> None:
    """Remove a warm payload's container by name, whatever state it is in."""
    assert target.store is not None
    subprocess.run(
        [*target.store.argv(), "rm", "--force", "--ignore", "--time", "0", name],
        env=target.store.env(),
        capture_output=True,
        check=False,
    )


# -- one table per worker process --------------------------------------------------------------
_POOL: dict[tuple[Any, ...], WarmPayload] = {}
_POOL_LOCK = threading.Lock()


def _key(target: Target, access: Access, engine: str) -> tuple[Any, ...]:
    return (target, tuple(access.binds), access.fuse, engine)


def warm_payload(
    target: Target,
    access: Access,
    engine: str = "root",
    formats: Sequence[str] = FORMATS,
    spares: int = 1,
) -> tuple[WarmPayload, str | None]:
    """This worker's warm payload for these binds and this engine, started if needed (warm for
    ``formats`` with ``spares`` reads forked ahead, or as the one it replaces was); with a one-line note when it replaced one
    that had died."""
    key = _key(target, access, engine)
    with _POOL_LOCK:
        warm = _POOL.get(key)
        if warm is not None and warm.alive():
            return warm, None
        note = None
        if warm is not None:
            pid = warm.ready.message.get("pid", "?")
            note = f"the warm payload (pid {pid}) had stopped ({warm.ended}); started a new one"
            log.warning("%s", note)
            warm.close(timeout=5)
            formats, spares = warm.formats, warm.spares  # what the sweep asked of the one replaced
        warm = _POOL[key] = WarmPayload.start(target, access, engine, formats, spares=spares)
        return warm, note


def start(
    target: Target,
    access: Access,
    engines: Sequence[str],
    formats: Sequence[str] = FORMATS,
    spares: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Start this worker's warm payloads, one per engine, warm for the ``formats`` the sweep's
    points read, each with its ``spares`` (engine -> reads forked ahead: the most the sweep runs
    at once on a worker; none where not given); a sweep does this before its first point. What
    each said when it was ready."""
    ahead = spares or {}
    return [warm_payload(target, access, e, formats, ahead.get(e, 0))[0].info for e in engines]


def stop_all() -> int:
    """Stop every warm payload of this worker process; how many there were."""
    with _POOL_LOCK:
        warms = list(_POOL.values())
        _POOL.clear()
    for warm in warms:
        warm.close()
    return len(warms)


def run_warm(
    target: Target,
    payload_argv: Sequence[str],
    access: Access,
    *,
    engine: str = "root",
    timeout: float | None = None,
) -> tuple[dict[str, Any], ContainerRun, str | None]:
    """``run_contained`` through this worker's warm payload for ``engine``, plus the note of a
    restart."""
    try:
        warm, note = warm_payload(target, access, engine)
    except InstoreError as err:
        container = ContainerRun(target.runtime.value, target.image_digest, None, 0.0, -1, "fork")
        return {"error": str(err)}, container, None
    record, container = warm.run(payload_argv, dict(access.env), timeout)
    return record, container, note
