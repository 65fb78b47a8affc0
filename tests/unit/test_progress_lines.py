"""A command's progress lines: its own prefix, on the stderr of the moment, the root logger left
alone (a test or a notebook runs several commands in one process)."""

from __future__ import annotations

import logging

import pytest
from instore.cliutil import log_progress


def test_each_command_in_one_process_prints_its_own_prefix_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root_handlers = list(logging.getLogger().handlers)
    log_progress("instore site: ")
    logging.getLogger("instore.site.verify").info("checking 3 test files")
    first = capsys.readouterr().err
    log_progress("instore sweep: ")
    logging.getLogger("instore.sweep.runner").info("point 1 of 2")
    second = capsys.readouterr().err

    assert first.splitlines() == ["instore site: checking 3 test files"]
    assert second.splitlines() == ["instore sweep: point 1 of 2"]
    assert logging.getLogger().handlers == root_handlers
