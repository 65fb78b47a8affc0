"""The engines a point may read with, as the sweep sees them: one entry per engine of the
vocabulary (``root``, ``uproot``, ``replay``), each saying what it reads (layouts, protocols),
which warm payload forks its jobs, and why it skips a point. The planner asks the point's entry
(``engine_of``) and names no engine itself.

An engine's reasons come in the planner's order: what the site rules out for it (asked with
the site's own limits, before its dataset's), what the study's grid leaves out or what it
cannot read (after the dataset's), and whether it runs a job of several threads (before the
worker's cores are counted)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from instore import access
from instore.payload import engine_rntuple
from instore.rootenv import http_auth_problem
from instore.study.grid import FORMAT_SECTION, axis_value
from instore.vocabulary import ENGINES, LAYOUTS, PROTOCOLS, REPLAY_ENGINE, RNTUPLE_LAYOUTS

if TYPE_CHECKING:
    from instore.site.config import SiteConfig
    from instore.study import Point, Study


@dataclass(frozen=True)
class Engine:
    """One engine: its name, the warm payload its jobs fork from, what it reads."""

    name: str
    payload: str  # the warm payload that forks its jobs (one per payload on each worker)
    layouts: tuple[str, ...] = LAYOUTS  # what it reads
    protocols: tuple[str, ...] = PROTOCOLS  # what it reads over

    def site_reason(self, point: Point, site: SiteConfig) -> str | None:
        """Why the site's setup rules the point out for this engine (None: it does not)."""
        return None

    def skip_reason(self, point: Point, study: Study) -> str | None:
        """Why the engine does not read the point (None: it does): the study's grid leaves it
        out, or the engine cannot read the point's layout over its protocol."""
        return None

    def threads_reason(self, point: Point) -> str | None:
        """Why a point of several threads cannot run with this engine (None: it can)."""
        return None


@dataclass(frozen=True)
class Root(Engine):
    """ROOT's TTree and RNTuple readers; http through XrdClHttp where installed."""

    def site_reason(self, point: Point, site: SiteConfig) -> str | None:
        """Its HTTP client may lack the credential the site's auth needs."""
        return http_auth_problem(site.auth) if point.protocol == access.HTTP else None

    def skip_reason(self, point: Point, study: Study) -> str | None:
        """It reads no RNTuple over http through XrdClHttp (RNTuple has no HTTP of its own)."""
        if point.protocol == access.HTTP and point.layout in RNTUPLE_LAYOUTS:
            return engine_rntuple.http_problem()
        return None


@dataclass(frozen=True)
class Uproot(Engine):
    """uproot's reader: it has no client cache."""

    def skip_reason(self, point: Point, study: Study) -> str | None:
        """In the format section cache_mb means nothing to it: its points run at the grid's
        first cache_mb only, rather than measure the same read twice."""
        if point.section != FORMAT_SECTION:
            return None
        grid = study.sections[FORMAT_SECTION]
        if point.cache_mb != axis_value("cache_mb", grid.get("cache_mb", ["default"])[0]):
            return "uproot has no client cache: its format points run at the first cache_mb only"
        return None


# The replayer runs in the warm payload that holds no ROOT: it reads root:// with PyPI xrootd,
# whose client cannot share a process with ROOT's.
REPLAY_PAYLOAD = "uproot"


@dataclass(frozen=True)
class Replay(Engine):
    """instore's closed-loop replay of a recorded analysis: it sends the recorded requests, in
    place (no stage-in), and has no threads of its own."""

    def skip_reason(self, point: Point, study: Study) -> str | None:
        if point.protocol not in self.protocols:
            return f"a replay reads in place; {point.protocol} copies the file first"
        return None

    def threads_reason(self, point: Point) -> str | None:
        if point.threads > 1:
            return "a replay sends the recorded job's requests: it has no threads of its own"
        return None


REGISTRY: dict[str, Engine] = {
    engine.name: engine
    for engine in (
        Root("root", payload="root"),
        Uproot("uproot", payload="uproot"),
        Replay("replay", payload=REPLAY_PAYLOAD, protocols=access.IN_PLACE),
    )
}
assert tuple(REGISTRY) == ENGINES, "one registry entry per engine of instore.vocabulary"


def engine_of(point: Point) -> Engine:
    """The point's engine (a point replaying a trace is the replay's)."""
    return REGISTRY[REPLAY_ENGINE if point.trace is not None else point.engine]
