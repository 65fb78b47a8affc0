"""The one I/O layer: storage by protocol, chosen from the URL's scheme (``instore.urls``).
Each protocol's storage opens files for range and vector reads (``Reader``) and gives their
size, adler32, a copy put there or fetched here (stage-in, cache warming), a probe, a listing
and whole-file reads. ``storage_for(url)`` is the one dispatch, as uproot maps schemes to
Source classes; classes are imported when first asked for (the XRootD Python client must not
load into a process that does not speak root://, nor into a root-engine job, whose readers go
through ROOT's own client: ``via_root``). The uproot engine's counting source is
``instore.storage.source``."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from instore.storage.base import Checksum, Reader, Storage, StorageError, adler32
from instore.urls import FILE, HTTP, XROOTD, protocol_of

__all__ = ["COPY_TOOLS", "Checksum", "Reader", "Storage", "StorageError", "adler32", "copy_tool",
           "fetch", "open_reader", "preload", "storage_for"]  # fmt: skip

CLASSES = {
    FILE: "instore.storage.file:FileStorage",
    XROOTD: "instore.storage.xrootd:XRootDStorage",
    HTTP: "instore.storage.http:HTTPStorage",
}
# A root-engine job reads root:// through ROOT's TFile: the two XRootD clients crash one process
VIA_ROOT = {**CLASSES, XROOTD: "instore.storage.rootfile:RootFileStorage"}
# The tools a copy (stage-in, cache warming) may be made with, and the protocol whose storage
# copies with each: cp copies paths only, xrdcp paths, root:// and http(s)://
COPY_TOOLS = {"cp": FILE, "xrdcp": XROOTD}


@cache
def _storage(name: str) -> Storage:
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)()


def storage_for(url: str, via_root: bool = False) -> Storage:
    """The storage that speaks ``url``'s protocol (one line for a scheme nobody speaks);
    ``via_root``: the one a root-engine job uses (root:// read through ROOT)."""
    return _storage((VIA_ROOT if via_root else CLASSES)[protocol_of(url)])


def open_reader(url: str, timeout: float, via_root: bool = False) -> Reader:
    """``url`` open for range reads through its protocol's reader."""
    return storage_for(url, via_root).open(url, timeout)


def copy_tool(url: str) -> str:
    """What a stage-in job copies ``url`` with: cp for a path, xrdcp for the rest."""
    return storage_for(url).copy_tool


def fetch(url: str, local: Path, tool: str | None = None, timeout: float | None = None) -> None:
    """Copy ``url`` to ``local`` (stage-in; ``/dev/null``: a cache warmed by reading the file
    through it) with ``tool``, by default ``copy_tool(url)``."""
    _storage(CLASSES[COPY_TOOLS[tool or copy_tool(url)]]).get(url, local, timeout)


def preload(urls: Iterable[str], via_root: bool = False) -> None:
    """Import the readers of the URLs' protocols and their clients now, before a clock starts
    (the XRootD client takes a good part of a second, which a first open would count)."""
    for url in urls:
        storage_for(url, via_root).load()
