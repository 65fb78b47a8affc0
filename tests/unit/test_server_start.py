"""A server of an emulated site that exits at start says why in its one line: the line of its
log that names the cause, since the log goes with the site's directory at teardown. The XCache
of a full study's WAN site once exited so, and the error named a log path that xrootd never
writes (``-n`` puts the log in a directory named after the instance) and teardown removed."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.site.emulated.system import exited_at_start, instance_log


def test_the_log_of_an_instance_is_where_xrootd_writes_it() -> None:
    given = Path("/var/tmp/instore-wan/xcache/xcache.log")
    assert instance_log(given, "instore-wan-xcache") == Path(
        "/var/tmp/instore-wan/xcache/instore-wan-xcache/xcache.log"
    )


def test_a_server_that_exited_at_start_names_the_cause_its_log_gives(tmp_path: Path) -> None:
    log = tmp_path / "xcache.log"
    log.write_text(
        "261126 22:26:15 001 Starting on Linux 6.1\n"
        "Config using configuration file /var/tmp/instore-wan/xcache/xcache.cfg\n"
        "261126 22:26:15 001 XrdPfc: Error: pfc.ram must be at least 1g\n"
        "------ xcache initialization failed.\n"
    )
    err = exited_at_start("XCache for wan", log)
    assert str(err).startswith("XCache for wan exited at start: its log says ")
    assert "pfc.ram must be at least 1g" in str(err), "the error, before its consequence"
    assert "instore site up SITE" in str(err)


def test_a_server_that_wrote_no_log_says_so(tmp_path: Path) -> None:
    err = exited_at_start("xrootd for wan", tmp_path / "missing.log")
    assert "exited at start (it wrote no log and nothing on stderr)" in str(err)


def test_a_server_that_stopped_before_its_log_opened_is_quoted_from_its_stderr(
    tmp_path: Path,
) -> None:
    """Regression: a bench's sweep stopped at "xrootd for lan-hdd exited at start (it wrote no
    log)", its stderr sent to /dev/null: neither its status nor its words were kept."""
    stderr = tmp_path / "stderr.log"
    stderr.write_text("Config warning: nothing here\nsetuid: Operation not permitted\n")
    err = exited_at_start("xrootd for lan-hdd", tmp_path / "missing.log", 50, stderr)
    assert str(err).startswith(
        "xrootd for lan-hdd exited at start (exit status 50) before writing its log: it said "
    )
    assert "Operation not permitted" in str(err)


def test_a_server_killed_by_a_signal_is_a_crash_not_the_cause_its_last_line_names(
    tmp_path: Path,
) -> None:
    """Regression: a full study's WAN XCache died of SIGSEGV at start, and the sweep said "its
    log says '... XrdConfig: Unable to create home directory /work/study2/instore-wan-xcache;
    permission denied'": a warning every start of it printed, which sent the reader to the
    checkout's permissions."""
    log = tmp_path / "xcache.log"
    log.write_text(
        "261127 07:22:40 3656 XrdConfig: Unable to create home directory /x; permission denied\n"
        "------ Proxy file cache initialization started.\n"
    )
    err = exited_at_start("XCache for wan", log, -11)
    assert str(err).startswith(
        "XCache for wan crashed at start (SIGSEGV); the last line of its log"
    )
    assert "Proxy file cache initialization started" in str(err)
    assert "home directory" not in str(err)
    assert "not of its configuration" in str(err)


class _Server:
    """A server process as the start loop sees it: exited (status) or running (None)."""

    def __init__(self, status: int | None) -> None:
        self.pid, self.status = 4242, status

    def poll(self) -> int | None:
        return self.status


def test_a_server_that_exits_at_start_is_started_once_more(tmp_path: Path) -> None:
    from instore.errors import InstoreError
    from instore.site.emulated import build

    started: list[_Server] = []
    pids: list[int] = []
    state = type("State", (), {"record_pid": lambda self, role, pid: pids.append(pid)})()

    def start() -> _Server:
        started.append(_Server(1 if not started else None))  # exits the first time only
        return started[-1]

    def wait_ready(server: _Server) -> None:
        if server.poll() is not None:
            raise exited_at_start("xrootd for lan-hdd", tmp_path / "missing.log", 1)

    build._start(start, wait_ready, "server", state)  # type: ignore[arg-type]
    assert len(started) == 2 and pids == [4242, 4242]

    always = [_Server(1), _Server(1)]
    with pytest.raises(InstoreError, match="exited at start"):  # a second exit is the error
        build._start(lambda: always.pop(0), wait_ready, "server", state)  # type: ignore[arg-type]
    assert always == []

    hung = [_Server(None)]

    def never_ready(server: _Server) -> None:
        raise InstoreError("xrootd for lan-hdd listening did not happen within 20 s", "see log")

    with pytest.raises(InstoreError, match="did not happen"):  # one that hangs: no second try
        build._start(lambda: hung.pop(0), never_ready, "server", state)  # type: ignore[arg-type]
