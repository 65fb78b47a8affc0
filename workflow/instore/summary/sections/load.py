"""The load section: a recorded analysis replayed by 1 to 64 clients at once. Its page (curves,
saturation, capacity, a table) is the page of every section of many clients at once
(``under_load``: the scheduler and filesystem sections), each under its own anchors."""

from __future__ import annotations

from instore.summary.sections.base import Section, Statistics

NAME = "load"

# Traces without events, runs without a fixed time and records without the counter leave
# columns out.
STATISTICS = Statistics(
    {"clients": "clients", "repetitions": "repetitions",
     "aggregate_mb_per_s": "MB/s, all clients", "aggregate_events_per_s": "events/s, all clients",
     "fixed_time_s": "fixed time (s)",
     "events_in_fixed_time": "events in the fixed time, all clients",
     "cpu_efficiency_median": "predicted CPU efficiency (median client)",
     "cpu_efficiency_worst": "predicted CPU efficiency (worst client)",
     "read_p50_ms": "read latency p50 (ms, median client)",
     "read_p95_ms": "read latency p95 (ms, median client)",
     "read_p99_ms": "read latency p99 (ms, worst client)",
     "open_p50_ms": "open time p50 (ms)", "open_p95_ms": "open time p95 (ms)",
     "failed": "failed clients"},
    percent=("cpu_efficiency_median", "cpu_efficiency_worst"),
    optional=("aggregate_events_per_s", "fixed_time_s", "events_in_fixed_time"),
)  # fmt: skip
# The figures of a page of many clients, by what each shows (``{section}_{what}`` keys,
# ``fig-{section}-{what}`` anchors).
FIGURES = ("curves", "saturation", "capacity", "table")


def under_load(name: str, title: str, about: str) -> Section:
    """A section of many clients at once: the load section's table, figures and page."""
    return Section(
        name, title, about, STATISTICS,
        figures={f"{name}_{what}": f"fig-{name}-{what}" for what in FIGURES},
        page=("load_curves", "load_saturation", "load_table"),
    )  # fmt: skip


SECTION = under_load(
    NAME,
    "Many clients at once: which resource gives out first",
    (
        "Load: a recorded analysis replayed by 1 to 64 clients at once (HammerCloud's method, the "
        "seeds' load tests), each reading its own copy of the file. Per load: aggregate throughput "
        "and events per second (where the trace knows the job's events; with a fixed time, HEPiX's "
        "figure: the events all clients processed in it), the clients' predicted CPU efficiency, "
        "open and read latencies, failures, and what the worker, the XRootD server, the disk and "
        "the link did; the resource that gave out first is named."
    ),
)
