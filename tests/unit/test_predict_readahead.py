"""The kernel's page cache in front of a FUSE mount, as the model sends a mount's requests:
whole pages, at most 128 kB a request, read ahead as the kernel reads any file, pinned against
what an xrootdfs mount sent its server for a real analysis's reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.predict.compiled import compile_trace
from instore.predict.pages import PAGE, FilePages
from instore.predict.readahead import mount_plan
from instore.replay.trace import load_trace

DATA = Path(__file__).parent / "data" / "xrootdfs-agc-uproot"


def _requests(path: Path) -> list[tuple[int, int]]:
    """Every read request of an XrdClRecorder file: (offset, bytes) per chunk."""
    return [chunk for request in load_trace(path).requests for chunk in request.chunks]


def test_a_small_read_at_the_files_start_brings_four_pages() -> None:
    f = FilePages(32)
    waited, ahead = f.read(0, 403)
    assert waited == [(0, 4)] and ahead == []
    assert f.read(10_000, 100) == ([], [])  # page 2: already cached


def test_a_lone_small_read_takes_its_own_page_only() -> None:
    f = FilePages(32)
    f.read(0, 403)
    assert f.read(50 * PAGE + 100, 34) == ([(50, 1)], [])
    # the next read reaches into page 51: a read that follows the last opens a window
    assert f.read(50 * PAGE + 4000, 200) == ([(51, 4)], [])


def test_a_read_behind_the_last_one_is_not_read_as_following_it() -> None:
    f = FilePages(32)
    f.read(0, 403)
    f.read(50 * PAGE, 100)
    assert f.read(40 * PAGE, 100) == ([(40, 1)], [])  # a lone read, not a window


def test_a_large_read_goes_as_128_kB_requests() -> None:
    f = FilePages(32)
    f.read(0, 403)
    waited, _ = f.read(1000 * PAGE, 148_000)  # 37 pages: more than one request holds
    # a window of 32 pages, then the next window, which holds the read's last 5 pages
    assert waited == [(1000, 32), (1032, 32)]


def test_reading_on_opens_growing_windows_the_reader_does_not_wait_for() -> None:
    f = FilePages(32)
    sizes_ahead = []
    for k in range(64):
        waited, ahead = f.read(k * PAGE, PAGE)
        assert k == 0 or waited == []  # every page after the first was read ahead in time
        sizes_ahead += [n for _, n in ahead]
    assert sizes_ahead[:2] == [8, 16] and max(sizes_ahead) == 32


def test_the_mount_asks_the_server_for_what_xrootdfs_asked_for_an_analysis() -> None:
    """The uproot analysis's reads through an xrootdfs mount: 318 requests of 12.1 MB reached
    the server where the analysis read 7.5 MB in 271 chunks. The plan's requests (before the
    model joins contiguous ones into one round trip) come within 5% of both, and most are the
    very same requests."""
    recorded = _requests(DATA / "xrootdfs-requests.csv")
    f = FilePages(32)
    for off, size in _requests(DATA / "trace" / "xrdcl.csv"):
        f.read(off, size)
    planned = [(a * PAGE, n * PAGE) for a, n in f.out]
    assert len(recorded) == 318 and sum(n for _, n in recorded) == 12_128_256
    assert len(planned) == pytest.approx(len(recorded), rel=0.02)
    assert sum(n for _, n in planned) == pytest.approx(sum(n for _, n in recorded), rel=0.02)
    # 284 of 318 (270, 312 requests of 12.4 MB, while a read behind the last counted as one
    # following it)
    assert len(set(planned) & set(recorded)) >= 0.85 * len(recorded)
    # the model's plan is the same requests, read in the trace's order, its stretches joined
    c = compile_trace(load_trace(DATA / "trace"))
    pieces = [pc for waited, ahead in mount_plan(c) for pc in waited + ahead]
    runs = sorted(run for runs, _ in pieces for run in runs)
    assert sum(n for _, n in runs) == pytest.approx(sum(n for _, n in planned), rel=0.03)
    assert len(pieces) < len(runs)  # contiguous requests: one round trip each stretch
