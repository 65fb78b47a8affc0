"""Byte-sized steps over root:// with uproot's default (fsspec-xrootd) source: a workaround.

In the pinned set (uproot 5.7.7, fsspec-xrootd 0.5.5, xrootd 6.2.1),
``uproot.iterate("root://...:Events", [...], step_size="20 MB")`` fails with
``TypeError: integer argument expected for offset``. To turn bytes into entries uproot reads
each basket's key (``TBranch.basket_key``), whose start comes from the ``fBasketSeek`` NumPy
array; ``FSSpecSource.chunk`` passes it on through fsspec-xrootd to the XRootD binding's
``File.read``, which takes Python ints only. uproot PR 1605 converted the single-basket read
(scikit-hep/uproot5#1582), not this call site, and no newer uproot is released (5.7.7 is the
newest on PyPI, and upstream's main still has the same ``basket_key``), so no pin fixes it.

``apply()`` makes ``FSSpecSource.chunk`` hand on Python ints: a cast of two numbers per
request, the same bytes read. The project's analyses call it before they read; so may any
script (``import instore.uproot_xrootd; instore.uproot_xrootd.apply()``). Remove it once an
uproot release converts in ``basket_key`` (docs/replay.md says how to check).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import uproot.source.chunk
import uproot.source.fsspec

_MARK = "_instore_python_ints"


def apply() -> bool:
    """Patch ``uproot.source.fsspec.FSSpecSource.chunk`` to pass Python ints on. Idempotent:
    True when it patched now, False when it already was. Processes a coffea executor forks
    inherit it; spawned ones re-import the analysis module, which calls it at import."""
    cls = uproot.source.fsspec.FSSpecSource
    original: Callable[..., uproot.source.chunk.Chunk] = cls.chunk
    if getattr(original, _MARK, False):
        return False

    @functools.wraps(original)
    def chunk(self: Any, start: int, stop: int) -> uproot.source.chunk.Chunk:
        return original(self, int(start), int(stop))

    setattr(chunk, _MARK, True)
    cls.chunk = chunk  # type: ignore[method-assign]
    return True


def applied() -> bool:
    """Whether ``apply()`` has patched this process's uproot."""
    return bool(getattr(uproot.source.fsspec.FSSpecSource.chunk, _MARK, False))
