"""One spec per engine of the vocabulary: everything the code says about an engine, in one place.

An engine is what a point reads with: ``root`` and ``uproot`` read files (each through a module
of ``instore.payload`` with ``prepare``, ``set_threads`` and ``run``: ``instore read --engine``),
``replay`` sends a recorded analysis's requests (``instore replay``). Its spec says which module
runs it, which warm payload forks its jobs, its thread modes, which client reads http and
root://, whether it has a client cache, what its warm-up imports and why it skips a point. The
runner, the warm payload, the thread modes, the record, the sweep's planner (through
``instore.sweep.engines``) and the report look an engine up here by name; none keeps a list.

Adding an engine: its name in ``instore.vocabulary.ENGINES``, its spec below, its module
(``docs/development.md`` walks through it; ``tests/unit/test_engine_spec.py`` pins it).

This module sits low: it imports the vocabulary, the access table and the thread modes' names,
and names its engines' modules as strings the runner imports (the payload's engines import
nothing that imports this module back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from instore.access import IN_PLACE
from instore.errors import InstoreError
from instore.payload.threads import CLUSTER, EXECUTORS, IMPLICIT
from instore.urls import is_http
from instore.vocabulary import ENGINES, LAYOUTS, PROTOCOLS

if TYPE_CHECKING:
    import pandas as pd

# Which client reads a protocol: ROOT's own (root://: TNetXNG over XrdCl; http: XrdClHttp or
# Davix, as instore.rootenv finds), or the Python process's (root://: PyPI xrootd; http:
# instore's urllib3 source). The two XRootD clients cannot share a process.
ROOT_CLIENT = "root"
PYTHON_CLIENT = "python"
# The Python process's http client, as a record names it (ROOT's is asked of instore.rootenv)
PYTHON_HTTP_CLIENT = "urllib3 multi-range GET (instore's uproot source), X.509 proxy and token"
READ_COMMAND, REPLAY_COMMAND = "read", "replay"  # the instore commands an engine's jobs run


@dataclass(frozen=True)
class EngineSpec:
    """One engine: what runs it, what it reads and how, and why it skips a point."""

    name: str
    command: str  # the instore command its jobs run (READ_COMMAND: `instore read --engine name`)
    module: str | None  # the payload module with prepare/set_threads/run (None: reads no file)
    payload: str  # the warm payload its jobs fork from (an engine whose module reads files)
    http: str  # which client reads http(s): ROOT_CLIENT or PYTHON_CLIENT
    xrootd: str  # which client reads root://: ROOT_CLIENT or PYTHON_CLIENT
    client_cache: (
        bool  # a cache of its own (TTreeCache, RNTuple's cluster cache): cache_mb means something
    )
    thread_modes: tuple[str, ...] = ()  # how a job of n threads uses them, its default first
    one_thread: str = ""  # why it has no thread modes: a point of several threads skips with this
    warm_imports: tuple[str, ...] = ()  # what its warm payload imports for it before forking
    in_place: bool = False  # reads only where the file is: no protocol that copies it first
    replays_traces: bool = False  # a point that replays a recorded trace reads with it
    # the engine whose points a section's summary compares where several engines measured one
    # (ROOT's: what most analyses read with), so that a comparison is of one engine's jobs
    compared_first: bool = False

    @property
    def layouts(self) -> tuple[str, ...]:
        return LAYOUTS

    @property
    def protocols(self) -> tuple[str, ...]:
        """What it reads over."""
        return IN_PLACE if self.in_place else PROTOCOLS


SPECS: dict[str, EngineSpec] = {
    spec.name: spec
    for spec in (
        EngineSpec(
            "root", READ_COMMAND, "instore.payload.engine_root", payload="root",
            http=ROOT_CLIENT, xrootd=ROOT_CLIENT, client_cache=True,
            thread_modes=(CLUSTER, IMPLICIT), compared_first=True,
        ),
        EngineSpec(
            "uproot", READ_COMMAND, "instore.payload.engine_uproot", payload="uproot",
            http=PYTHON_CLIENT, xrootd=PYTHON_CLIENT, client_cache=False,
            thread_modes=(EXECUTORS,),
        ),
        # It forks from the payload that holds no ROOT: it reads root:// with PyPI xrootd,
        # whose client cannot share a process with ROOT's.
        EngineSpec(
            "replay", REPLAY_COMMAND, None, payload="uproot",
            http=PYTHON_CLIENT, xrootd=PYTHON_CLIENT, client_cache=False,
            one_thread="a replay sends the recorded job's requests: it has no threads of its own",
            warm_imports=("XRootD.client",), in_place=True, replays_traces=True,
        ),
    )
}  # fmt: skip
assert tuple(SPECS) == ENGINES, "one spec per engine of instore.vocabulary, in its order"

# The module of each engine that reads files (instore.payload.runner imports them)
FILE_MODULES: dict[str, str] = {s.name: s.module for s in SPECS.values() if s.module is not None}
PAYLOADS: tuple[str, ...] = tuple(dict.fromkeys(s.payload for s in SPECS.values()))
MT_MODES: tuple[str, ...] = tuple(dict.fromkeys(m for s in SPECS.values() for m in s.thread_modes))
(REPLAY_ENGINE,) = (s.name for s in SPECS.values() if s.replays_traces)
(COMPARED_ENGINE,) = (s.name for s in SPECS.values() if s.compared_first)


def compared_points(points: pd.DataFrame) -> pd.DataFrame:
    """A section's points of the engine its summary compares, where that engine measured any
    (``COMPARED_ENGINE``); else all of them."""
    if "engine" not in points:
        return points
    ours = points[points["engine"] == COMPARED_ENGINE]
    return ours if len(ours) else points


def forked_by(payload: str) -> tuple[EngineSpec, ...]:
    """The engines whose jobs the warm payload ``payload`` forks, in the vocabulary's order."""
    return tuple(s for s in SPECS.values() if s.payload == payload)


def has_client_cache(engine: str) -> bool:
    """Whether the engine has a cache of its own (False for a name that is no engine's)."""
    spec = SPECS.get(engine)
    return spec is not None and spec.client_cache


def modes_of(engine: str) -> tuple[str, ...]:
    """The threading modes of an engine, its default first (none: an unknown engine, replay)."""
    spec = SPECS.get(engine)
    return spec.thread_modes if spec else ()


def resolve_mode(engine: str, threads: int, mode: str | None) -> str | None:
    """The mode a job runs in: None for one thread, the engine's default when none is given;
    one line naming the fix when the engine has no such mode."""
    if threads < 1:
        raise InstoreError(f"--threads {threads} is below 1", "give --threads 1 or more")
    if threads == 1:
        return None
    modes = modes_of(engine)
    if not modes:
        raise InstoreError(
            f"the {engine} engine runs one thread", "leave --threads out (or give --threads 1)"
        )
    if mode is None:
        return modes[0]
    if mode not in modes:
        raise InstoreError(
            f"the {engine} engine has no --mt-mode {mode}", f"choose {' or '.join(modes)}"
        )
    return mode


def http_client(url: str, engine: str | None) -> str:
    """Which HTTP client read ``url`` ("n/a" when it is not http): the engines use different
    ones (their specs say which), and a site's grid ROOT uses Davix, so the record says which
    one was measured."""
    if not is_http(url):
        return "n/a"
    spec = SPECS.get(engine or "")
    if spec is not None and spec.http == ROOT_CLIENT:
        from instore.rootenv import http_client as root_http_client

        return root_http_client()
    return PYTHON_HTTP_CLIENT
