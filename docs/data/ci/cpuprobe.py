"""Per-test wall time and the machine's CPU busy share (from /proc/stat), as JSON lines.

A pytest plugin, used for docs/data/ci/e4f9e9b-integration-cpu.jsonl (docs/development.md):
how much of each integration test's wall keeps the machine's cores busy, so what running
tests side by side could win. Run as
  CPUPROBE_OUT=probe.jsonl PYTHONPATH=docs/data/ci .venv/bin/python -m pytest -p cpuprobe \
      tests/integration
``busy`` is the share of all cores' time not idle or in I/O wait during the test, whatever
ran it (the test, its servers, a background build).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest

OUT = os.environ.get("CPUPROBE_OUT", "cpuprobe.jsonl")


def _stat() -> tuple[int, int]:
    """All CPU time and the idle + iowait part, in jiffies, summed over the cores."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    began, start, before = time.time(), time.monotonic(), _stat()
    yield
    after, wall = _stat(), time.monotonic() - start
    total, idle = after[0] - before[0], after[1] - before[1]
    row = {"id": item.nodeid, "began": round(began, 1), "wall": round(wall, 2),
           "busy": round((total - idle) / total, 3) if total else None,
           "cores": os.cpu_count()}  # fmt: skip
    with open(OUT, "a") as f:
        f.write(json.dumps(row) + "\n")
