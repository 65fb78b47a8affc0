"""The model's FUSE mount against a real one: an analysis's reads through an xrootdfs mount of
a local XRootD server, the requests xrootdfs sent recorded by XrdClRecorder inside it, against
the requests ``instore.predict.readahead`` plans for the same reads (this machine's kernel
reads the mount; the unit tests pin a recording of 2026-11-27)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from instore.predict.pages import PAGE, FilePages
from instore.replay.trace import load_trace

from tests.integration.grid_site import needs_xrootd, readable_tmp, xrootd_server

DATA = Path(__file__).parents[1] / "unit" / "data" / "xrootdfs-agc-uproot"
FILE = "nano256-ordered-r0.root"  # the trace's file; its bytes do not matter, only where


def _requests(path: Path) -> list[tuple[int, int]]:
    """Every read request of an XrdClRecorder file: (offset, bytes) per chunk."""
    return [chunk for request in load_trace(path).requests for chunk in request.chunks]


def _recorder() -> Path:
    """Debian's XrdClRecorder for the client xrootdfs is built against (XRootD 5)."""
    found = sorted(Path("/usr/lib").glob("*/libXrdClRecorder-5.so"))
    if not found:
        pytest.fail("no libXrdClRecorder-5.so under /usr/lib: install xrootd-client (make system)")
    return found[0].with_name("libXrdClRecorder.so")  # the loader adds the -5


def _mounted(path: Path) -> bool:
    return any(
        line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines()
    )


def test_the_model_asks_for_what_an_xrootdfs_mount_asks_its_server_for() -> None:
    needs_xrootd()
    if shutil.which("xrootdfs") is None or shutil.which("fusermount3") is None:
        pytest.skip("needs xrootdfs and fusermount3 (make system)")
    reads = _requests(DATA / "trace" / "xrdcl.csv")
    with readable_tmp("instore-fuse-") as root, xrootd_server(root / "site") as server:
        with (server.data / FILE).open("wb") as f:
            f.truncate(max(off + n for off, n in reads) + (8 << 20))
        mount, record = root / "mnt", root / "xrootdfs-requests.csv"
        mount.mkdir()
        env = {**os.environ, "XRD_PLUGIN": str(_recorder()), "XRD_RECORDERPATH": str(record)}
        proc = subprocess.Popen(
            ["xrootdfs", str(mount), "-f", "-o", f"rdr=root://localhost:{server.port}//"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 20
            while not _mounted(mount) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _mounted(mount), "xrootdfs did not mount"
            fd = os.open(mount / FILE, os.O_RDONLY)
            try:
                for off, n in reads:
                    assert len(os.pread(fd, n, off)) == n
            finally:
                os.close(fd)
        finally:
            subprocess.run(["fusermount3", "-u", str(mount)], check=False)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        recorded = _requests(record)
    planned_pages = FilePages(32)
    for off, n in reads:
        planned_pages.read(off, n)
    planned = [(a * PAGE, n * PAGE) for a, n in planned_pages.out]
    total = sum(n for _, n in recorded)
    assert sum(n for _, n in reads) < 0.7 * total  # the mount asked for more than was read
    assert len(planned) == pytest.approx(len(recorded), rel=0.10)
    assert sum(n for _, n in planned) == pytest.approx(total, rel=0.10)
    assert len(set(planned) & set(recorded)) >= 0.75 * len(recorded)
