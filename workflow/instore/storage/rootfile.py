"""root:// through ROOT's own TFile (TNetXNGFile), for the root engine's jobs.

ROOT's bundled XRootD client and the ``xrootd`` Python package's client cannot live in one
process: whichever loads second crashes it (SIGSEGV in ``XrdCl::File::Open``). A root-engine
job therefore reaches root:// through ROOT alone, also before its clock starts: this storage is
XRootD's (``instore.storage.xrootd``, whose other operations run command-line tools) with its
reader replaced, and ``storage_for(url, via_root=True)`` chooses it.
"""

from __future__ import annotations

import ctypes
from typing import Any

from instore.rootenv import root
from instore.storage.xrootd import XRootDStorage


class RootFileReader:
    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        try:
            f: Any = root().TFile.Open(url, "READ")
        except OSError:  # PyROOT raises for a failed open
            f = None
        if not f or f.IsZombie():
            raise OSError(f"ROOT could not open {url}")
        self._file = f
        self.size = int(f.GetSize())

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        out = []
        for start, stop in ranges:
            buf = ctypes.create_string_buffer(stop - start)
            if self._file.ReadBuffer(buf, start, stop - start):  # kTRUE: the read failed
                raise OSError(
                    f"ROOT read of {stop - start} bytes at {start} failed for {self._url}"
                )
            out.append(buf.raw)
        return out

    def close(self) -> None:
        self._file.Close()


class RootFileStorage(XRootDStorage):
    """root:// as a root-engine job reaches it: ranges read through ROOT's TFile."""

    def open(self, url: str, timeout: float) -> RootFileReader:  # type: ignore[override]
        return RootFileReader(url, timeout)

    def load(self) -> None:
        """Never the Python XRootD client here; ROOT is loaded by the engine's own set-up."""
