"""The run record: one job's measurement, with the conditions it was taken under."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import socket
from collections import Counter
from collections.abc import Iterable
from typing import Any

RECORD_VERSION = 1
_PACKAGES = ("instore", "root", "uproot", "awkward", "numpy", "xrootd")
# Only these environment variables are recorded; never the whole environment (credentials).
_RECORDED_ENV = (
    "ROOT_TTREECACHE_SIZE",
    "ROOT_TTREECACHE_PREFILL",
    "XRD_REQUESTTIMEOUT",
    "INSTORE_RUNTIME",
    "INSTORE_IMAGE_DIGEST",
)


def size_histogram(lengths: Iterable[int]) -> dict[str, int]:
    """Read counts per power-of-two size bucket, keyed by the bucket's upper bound in bytes."""
    counts = Counter(1 << max(0, int(n - 1).bit_length()) for n in lengths if n > 0)
    return {str(k): counts[k] for k in sorted(counts)}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def provenance() -> dict[str, Any]:
    from instore.rootenv import root_version

    uname = platform.uname()
    return {
        "host": socket.gethostname(),
        "kernel": f"{uname.system} {uname.release}",
        "python": platform.python_version(),
        "root_version": root_version(),
        "versions": {p: _version(p) for p in _PACKAGES},
        "env": {k: os.environ[k] for k in _RECORDED_ENV if k in os.environ},
        "pid": os.getpid(),
    }


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
