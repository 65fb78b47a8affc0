"""A server of an emulated site that exits at start says why in its one line: the line of its
log that names the cause, since the log goes with the site's directory at teardown. The XCache
of a full study's WAN site once exited so, and the error named a log path that xrootd never
writes (``-n`` puts the log in a directory named after the instance) and teardown removed."""

from __future__ import annotations

from pathlib import Path

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
    assert "exited at start (it wrote no log)" in str(err)
