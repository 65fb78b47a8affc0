"""Debian's ``xrdreplay`` (XRootD 5.5.3), the field's own replayer, run on the same trace:
open loop (each request at its recorded time, as far as it can keep up), root:// only. Its
"IO Summary" figures are kept as it prints them, and the main ones as numbers."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from instore.errors import InstoreError
from instore.replay.targets import Targets
from instore.replay.trace import Trace, split_open_args
from instore.urls import XROOTD_SCHEMES

_LINE = re.compile(r"^#\s*(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_FIGURES = {  # its label -> our field, the first number of its value
    "Total   Runtime": "total_runtime_s",
    "Sampled Runtime": "sampled_runtime_s",
    "IOPS      (R)": "iops_read",
    "Response Errors": "response_errors",
    "Performance Mark": "performance_mark_pct",
}


def parse_summary(text: str) -> dict[str, Any]:
    """The "IO Summary" block of xrdreplay's output: every line as printed, the main figures
    as numbers."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if "IO Summary" in line), None)
    printed: dict[str, str] = {}
    for line in lines[at + 1 :] if at is not None else []:
        m = _LINE.match(line)
        if m:
            printed[m.group("key")] = m.group("value")
    out: dict[str, Any] = {"printed": printed}
    for label, name in _FIGURES.items():
        number = _NUMBER.search(printed.get(label, ""))
        out[name] = float(number.group(0)) if number else None
    return out


def mapped_csv(trace: Trace, targets: Targets) -> str:
    """The trace's CSV with each Open's URL replaced by its target's."""
    where = dict(zip(trace.files, targets.urls, strict=True))
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for row in csv.reader(io.StringIO(trace.csv_path.read_text())):
        if len(row) > 3 and row[1] == "Open":
            url, rest = split_open_args(row[3])
            row[3] = where.get(url, url) + rest
        writer.writerow(row)
    return out.getvalue()


def xrdreplay_binary(targets: Targets) -> str:
    """xrdreplay's path, once it is there and every target is root:// (checked before the
    closed loop runs, so a refusal costs no replay)."""
    binary = shutil.which("xrdreplay")
    if binary is None:
        raise InstoreError("xrdreplay is not installed", "install xrootd-client (make setup)")
    other = [u for u in targets.urls if urlsplit(u).scheme not in XROOTD_SCHEMES]
    if other:
        raise InstoreError(
            f"xrdreplay reads root:// only, and the replay's target is {other[0]}",
            "replay with --protocol xrootd (or xcache) for --xrdreplay, or leave --xrdreplay out",
        )
    return binary


def run_xrdreplay(trace: Trace, targets: Targets, timeout_s: float) -> dict[str, Any]:
    """Run ``xrdreplay -s -f`` (summary; only the requests that succeeded when recorded, as the
    closed loop replays them) on the trace mapped to ``targets``; its exit code and figures."""
    binary = xrdreplay_binary(targets)
    with tempfile.TemporaryDirectory(prefix="instore-xrdreplay-") as tmp:
        path = Path(tmp) / "trace.csv"
        path.write_text(mapped_csv(trace, targets))
        cmd = [binary, "-s", "-f", str(path)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"command": "xrdreplay -s -f", "exit_code": None,
                    "error": f"no answer within {timeout_s:g} s"}  # fmt: skip
    out = parse_summary(done.stdout)
    tail = (done.stderr.strip().splitlines() or [""])[-1]
    return {
        "command": "xrdreplay -s -f",
        "exit_code": done.returncode,
        "error": tail if done.returncode else None,
        **out,
    }
