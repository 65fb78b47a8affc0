"""Instrumented uproot sources: every physical read is counted and logged.

uproot's own sources count logical requests; a storage study needs the physical ones (after
coalescing), with their sizes. One :class:`InstrumentedSource` applies uproot's coalescing
(``CoalesceConfig``) and hands each coalesced request to a per-scheme backend.
"""

from instore.payload.source.base import Backend, InstrumentedSource, source_class

__all__ = ["Backend", "InstrumentedSource", "source_class"]
