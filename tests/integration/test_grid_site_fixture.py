"""The XRootD fixture the integration tests share: a server that dies of a signal at its start,
before its first log line (XRootD 5.5.3 did once, beside a loaded CI run), is started once more;
one that keeps failing fails the test with what it said."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.integration.grid_site import needs_xrootd, readable_tmp, xrootd_server


def _crashing_first(times: int) -> tuple[Callable[[list[str]], list[str]], list[list[str]]]:
    """A ``wrap`` whose first ``times`` starts die of SIGSEGV before xrootd runs."""
    starts = []

    def wrap(cmd: list[str]) -> list[str]:
        starts.append(cmd)
        if len(starts) <= times:
            return ["sh", "-c", "kill -SEGV $$"]
        return cmd

    return wrap, starts


def test_a_server_that_dies_at_its_start_is_started_again_once(
    capfd: pytest.CaptureFixture[str],
) -> None:
    needs_xrootd()
    wrap, starts = _crashing_first(1)
    with readable_tmp("instore-fixture-") as root, xrootd_server(root / "srv", wrap=wrap) as srv:
        assert srv.port != srv.http_port
    assert len(starts) == 2
    assert "died of signal 11 at its start" in capfd.readouterr().err


def test_a_server_that_dies_at_each_start_fails_the_test() -> None:
    needs_xrootd()
    wrap, starts = _crashing_first(2)
    with (
        pytest.raises(pytest.fail.Exception, match="exited with -11"),
        readable_tmp("instore-fixture-") as root,
        xrootd_server(root / "srv", wrap=wrap),
    ):
        pass
    assert len(starts) == 2
