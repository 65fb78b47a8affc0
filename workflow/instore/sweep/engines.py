"""The engines a point may read with, as the sweep sees them: one entry per engine spec
(``instore.payload.specs``), saying what it reads (layouts, protocols), which warm payload forks its
jobs, and why it skips a point, each reason derived from what the spec says of the engine. The
planner asks the point's entry (``engine_of``) and names no engine itself.

An engine's reasons come in the planner's order: what the site rules out for it (asked with
the site's own limits, before its dataset's), what the study's grid leaves out or what it
cannot read (after the dataset's), and whether it runs a job of several threads (before the
worker's cores are counted)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from instore import access
from instore.payload import engine_rntuple
from instore.payload.specs import REPLAY_ENGINE, ROOT_CLIENT, SPECS, EngineSpec
from instore.rootenv import http_auth_problem
from instore.study.grid import axis_value
from instore.vocabulary import FORMAT_SECTION, RNTUPLE_LAYOUTS

if TYPE_CHECKING:
    from instore.site.config import SiteConfig
    from instore.study import Point, Study


@dataclass(frozen=True)
class Engine:
    """One engine's spec, asked about points."""

    spec: EngineSpec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def payload(self) -> str:
        """The warm payload that forks its jobs (one per payload on each worker)."""
        return self.spec.payload

    @property
    def layouts(self) -> tuple[str, ...]:
        return self.spec.layouts

    @property
    def protocols(self) -> tuple[str, ...]:
        return self.spec.protocols

    def site_reason(self, point: Point, site: SiteConfig) -> str | None:
        """Why the site's setup rules the point out for this engine (None: it does not): ROOT's
        HTTP client may lack the credential the site's auth needs."""
        if point.protocol == access.HTTP and self.spec.http == ROOT_CLIENT:
            return http_auth_problem(site.auth)
        return None

    def skip_reason(self, point: Point, study: Study) -> str | None:
        """Why the engine does not read the point (None: it does): the study's grid leaves it
        out, or the engine cannot read the point's layout over its protocol."""
        if point.protocol not in self.protocols:
            return f"a {self.name} reads in place; {point.protocol} copies the file first"
        # ROOT reads no RNTuple over http through XrdClHttp (RNTuple has no HTTP of its own)
        root_http = self.spec.http == ROOT_CLIENT and point.protocol == access.HTTP
        if root_http and point.layout in RNTUPLE_LAYOUTS:
            return engine_rntuple.http_problem()
        if not self.spec.client_cache and point.section == FORMAT_SECTION:
            return self._cache_reason(point, study)
        return None

    def _cache_reason(self, point: Point, study: Study) -> str | None:
        """In the format section cache_mb means nothing to an engine without a client cache:
        its points run at the grid's first cache_mb only, rather than measure one read twice."""
        grid = study.sections[FORMAT_SECTION]
        if point.cache_mb != axis_value("cache_mb", grid.get("cache_mb", ["default"])[0]):
            return (f"{self.name} has no client cache: its format points run at the first "
                    "cache_mb only")  # fmt: skip
        return None

    def threads_reason(self, point: Point) -> str | None:
        """Why a point of several threads cannot run with this engine (None: it can)."""
        if point.threads > 1 and not self.spec.thread_modes:
            return self.spec.one_thread
        return None


REGISTRY: dict[str, Engine] = {name: Engine(spec) for name, spec in SPECS.items()}


def engine_of(point: Point) -> Engine:
    """The point's engine (a point replaying a trace is the replay's)."""
    return REGISTRY[REPLAY_ENGINE if point.trace is not None else point.engine]
