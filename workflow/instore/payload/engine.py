"""What every engine that reads files implements, the same way: ``prepare`` and ``set_threads``
before the clock, ``run`` to read.

An engine is a module of this package (``engine_root``, ``engine_uproot``) with these three
functions; its spec (``instore.payload.specs``) names it, ``instore.payload.runner.ENGINES`` imports
it, and callers never ask which one they hold. An engine takes from the client options what it has a knob for and leaves the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from uproot.source.coalesce import CoalesceConfig

if TYPE_CHECKING:
    from instore.payload.objects import DataObject
    from instore.payload.pattern import Pattern
    from instore.payload.result import EngineResult


@dataclass(frozen=True)
class UprootKnobs:
    """uproot's client-side readahead: how requests are coalesced, and how much is read at once."""

    max_range_gap: int = CoalesceConfig.max_range_gap
    max_request_bytes: int = CoalesceConfig.max_request_bytes
    max_request_ranges: int = CoalesceConfig.max_request_ranges
    step_bytes: int = 64 * 1024 * 1024  # uncompressed bytes per step when the file has one cluster
    timeout: float = 60.0


@dataclass(frozen=True)
class ClientOptions:
    """The client's knobs for one read: ROOT's (TTreeCache or RNTuple's cluster cache, TFile
    readahead), uproot's (coalescing, step size, time-out) and the job's threads."""

    cache_bytes: int | None = None  # None keeps ROOT's default, 0 turns it off
    readahead_bytes: int | None = None  # None keeps ROOT's default
    uproot: UprootKnobs = field(default_factory=UprootKnobs)
    threads: int = 1  # threads the job reads with (instore.payload.threads)
    mt_mode: str | None = None  # how it uses them: cluster, implicit, executors; None: 1 thread


class Engine(Protocol):
    def prepare(self, fmt: str | None, url: str | None = None) -> None:
        """Load libraries, compile and run the read path once on a tiny file: start-up is not
        I/O. ``fmt`` is the format about to be read (None: not known); ``url`` the file about to
        be read: its client's libraries and lookups too, without connecting to its server
        (None: not known)."""

    def set_threads(self, threads: int, mode: str | None) -> None:
        """Set the process up for a job of ``threads`` threads in ``mode`` (one of the spec's
        thread modes), before the clock; raise InstoreError when it cannot."""

    def run(
        self, url: str, obj: DataObject, pattern: Pattern, client: ClientOptions
    ) -> EngineResult:
        """Read ``obj`` of ``url`` with ``pattern``; what was read, counted."""
