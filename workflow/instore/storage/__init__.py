"""Storage operations by protocol, chosen from the URL's scheme (``instore.urls``): size,
adler32, put, probe, listing and whole-file reads. ``storage_for(url)`` is the one dispatch,
as uproot maps schemes to Source classes; classes are imported when first asked for (the
XRootD client must not load into a process that does not speak root://)."""

from __future__ import annotations

import importlib
from functools import cache

from instore.storage.base import Checksum, Storage, StorageError, adler32
from instore.urls import FILE, HTTP, XROOTD, protocol_of

__all__ = ["Checksum", "Storage", "StorageError", "adler32", "storage_for"]

CLASSES = {
    FILE: "instore.storage.file:FileStorage",
    XROOTD: "instore.storage.xrootd:XRootDStorage",
    HTTP: "instore.storage.http:HTTPStorage",
}


@cache
def _storage(protocol: str) -> Storage:
    module, _, name = CLASSES[protocol].partition(":")
    return getattr(importlib.import_module(module), name)()


def storage_for(url: str) -> Storage:
    """The storage that speaks ``url``'s protocol (one line for a scheme nobody speaks)."""
    return _storage(protocol_of(url))
