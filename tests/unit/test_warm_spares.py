"""The warm payload's spare reads: forked and given their own pages while no job runs, so a
job handed to one starts at once and writes the parent's pages without a copy-on-write fault
in its clock; a dead spare is passed over, and stopping the payload leaves none behind."""

from __future__ import annotations

import json
import os
import resource
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from instore.payload.child import takes_spare
from instore.payload.pages import resident_pages
from instore.payload.spares import SparePool

PAGE = os.sysconf("SC_PAGE_SIZE")
BUFFER = bytearray(b"\1" * (16 << 20))  # 4096 pages, present in the parent before any spare


def _write_buffer(request: dict[str, Any], out: Path, err: Path) -> None:  # pragma: no cover
    """A job as a spare runs it: write each page of the parent's buffer, count the faults."""
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for i in range(0, len(BUFFER), PAGE):
            BUFFER[i] = 2
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        out.write_text(json.dumps({"id": request["id"], "faults": faults, "pid": os.getpid()}))
    finally:
        os._exit(0)


@pytest.fixture
def pool() -> Any:
    spares = SparePool(2, resident_pages(), _write_buffer)
    yield spares
    spares.stop()


def _ran(tmp_path: Path, pool: SparePool, job: str) -> dict[str, Any]:
    out = tmp_path / f"{job}.out"
    pid = pool.hand({"id": job, "argv": ["instore", "read"]}, out, tmp_path / f"{job}.err")
    assert pid is not None
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return {**json.loads(out.read_text()), "handed": pid}


def test_a_job_handed_to_a_spare_writes_the_parents_pages_without_faults(
    tmp_path: Path, pool: SparePool
) -> None:
    pool.fill([])
    spares = {s.pid for s in pool.ready}
    assert len(spares) == 2
    first, second = _ran(tmp_path, pool, "a"), _ran(tmp_path, pool, "b")
    assert {first["pid"], second["pid"]} == spares  # no fork on the job's request
    pages = len(BUFFER) // PAGE
    assert first["faults"] < pages // 20 and second["faults"] < pages // 20, (first, second)
    assert (
        pool.hand({"id": "c", "argv": ["instore", "read"]}, tmp_path / "c", tmp_path / "d") is None
    )
    pool.fill([])  # between points: the pool is whole again
    assert len(pool.ready) == 2 and not {s.pid for s in pool.ready} & spares


def test_a_dead_spare_is_passed_over_for_the_next(tmp_path: Path, pool: SparePool) -> None:
    pool.fill([])
    dead = pool.ready[-1]  # the one hand() takes first
    os.killpg(dead.pid, signal.SIGKILL)
    while Path(f"/proc/{dead.pid}/stat").read_text().split(")")[-1].split()[0] != "Z":
        time.sleep(0.01)  # exited, its pipe closed: not yet reaped
    ran = _ran(tmp_path, pool, "a")
    assert ran["pid"] != dead.pid and pool.ready == []


def test_stopping_ends_every_spare(pool: SparePool) -> None:
    pool.fill([])
    pids = [s.pid for s in pool.ready]
    pool.stop()
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left


def test_only_measured_reads_take_a_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay copies no pages before its clock, and the bench's shared-pages reads must not
    find them copied: both fork as they come."""
    monkeypatch.delenv("INSTORE_FORK_SHARED_PAGES", raising=False)
    assert takes_spare({"argv": ["instore", "read", "x"]})
    assert not takes_spare({"argv": ["instore", "replay", "x"]})
    assert not takes_spare({"argv": ["instore", "read"], "env": {"INSTORE_FORK_SHARED_PAGES": "1"}})
