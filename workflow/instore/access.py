"""The access methods, said once: how a job reaches a site's files (a site's ``protocols``, a
point's ``protocol``). Each reads through URLs of one storage protocol (``instore.urls``), or
for stage-in its source's: stage-in copies the file to scratch before the job reads it, posix
and fuse read through this node's file system, xcache through the site's cache. The names are
spelt in ``instore.vocabulary`` (the schemas are written from it); every other module asks
this one what a method means."""

from __future__ import annotations

from dataclasses import dataclass

from instore import urls
from instore.vocabulary import PROTOCOLS

# The names are the vocabulary's (instore.vocabulary.PROTOCOLS, from which the schemas are
# written); this module says what each means. xrootd and http read directly, named after the
# storage protocol they speak.
POSIX, STAGE_IN, XROOTD, HTTP, FUSE, XCACHE = PROTOCOLS


@dataclass(frozen=True)
class Method:
    """One access method: the storage protocol its URLs speak (None: its stage-in source's),
    whether it copies the file before the job reads, and whether it reads through a cache."""

    name: str
    protocol: str | None
    stages_in: bool = False
    cached: bool = False


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(POSIX, urls.FILE),
        Method(STAGE_IN, None, stages_in=True),
        Method(XROOTD, urls.XROOTD),
        Method(HTTP, urls.HTTP),
        Method(FUSE, urls.FILE),
        Method(XCACHE, urls.XROOTD, cached=True),
    )
}
NAMES = tuple(METHODS)  # in the order a site lists them: the vocabulary's
assert NAMES == PROTOCOLS and (XROOTD, HTTP) == (urls.XROOTD, urls.HTTP)
IN_PLACE = tuple(n for n, m in METHODS.items() if not m.stages_in)  # what a replay reads over
MOUNTED = tuple(n for n, m in METHODS.items() if m.protocol == urls.FILE)  # this node's files
DIRECT = tuple(
    n for n, m in METHODS.items() if m.protocol not in (None, urls.FILE) and not m.cached
)
STAGE_IN_SOURCE = XROOTD  # what stage-in copies from unless a site says otherwise
