"""The calibration's open-file read rate: the whole file through the protocol's own reader after
the open, less a round trip per request (instore.site.calibrate.open_file_read), and the link the
model takes from it (instore.predict.given.link)."""

from __future__ import annotations

import math
from pathlib import Path

from instore.predict.given import link
from instore.site.calibrate import open_file_read
from instore.storage.base import CHUNK


def _file(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "f.root"
    path.write_bytes(b"\1" * size)
    return path


def test_the_open_file_is_read_whole_in_chunk_requests(tmp_path: Path) -> None:
    size = 2 * CHUNK + 123
    entry = open_file_read(str(_file(tmp_path, size)), rtt_ms=None)
    assert entry["read_bytes"] == size and entry["read_requests"] == 3
    assert math.isclose(entry["read_mb_per_s"], size / entry["read_s"] / 1e6)


def test_round_trips_are_taken_out_and_a_read_they_fill_gives_no_rate(tmp_path: Path) -> None:
    url = str(_file(tmp_path, CHUNK))
    entry = open_file_read(url, rtt_ms=1e-6)
    assert entry["read_mb_per_s"] > entry["read_bytes"] / entry["read_s"] / 1e6
    assert "read_mb_per_s" not in open_file_read(url, rtt_ms=60_000.0)  # a minute a request


def test_the_link_is_the_fastest_of_the_copies_and_the_open_file_reads() -> None:
    calib = {"protocols": {"xrootd": {"mb_per_s": 19.1, "read_mb_per_s": 950.0},
                           "http": {"mb_per_s": 91.6, "read_mb_per_s": 400.0}}}  # fmt: skip
    bw, _ = link(calib, {}, 0.15)
    assert bw.value == 950.0 * 8 and "xrootd read of the open file (950.0 MB/s)" in bw.source
    older = {"protocols": {"xrootd": {"mb_per_s": 19.1}, "http": {"mb_per_s": 91.6}}}
    bw, _ = link(older, {}, 0.15)
    assert bw.value == 91.6 * 8 and "http copy (91.6 MB/s)" in bw.source
    fast_lan = {"protocols": {"http": {"mb_per_s": 1163.3, "read_mb_per_s": 733.4}}}
    bw, _ = link(fast_lan, {}, 0.06)
    assert bw.value == 1163.3 * 8 and "http copy (1163.3 MB/s)" in bw.source
    configured, _ = link(calib, {"network": {"bandwidth_mbit": 100}}, 25.0)
    assert configured.value == 100.0  # an emulated site's link is its configuration
