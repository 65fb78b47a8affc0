"""The load ramp and its stop rule (the site file's ``load:``, instore.site.loadguard).

A point never runs more jobs at once than the site's ``max_clients``. The load section's points
run in increasing order of clients; after each, its records are checked: when the 95th
percentile of its clients' open times is above ``stop_p95_open_ms``, or its share of failed
jobs above ``stop_error_rate``, the site is suffering, and every point of the section with as
many clients or more that is not yet measured is skipped with the reason (the point that
tripped the rule keeps it in its records' ``ramp_stop``). A resumed sweep finds the stop again
from the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from instore.site.loadguard import STOP_COLUMN, LoadGuard
from instore.study import Point
from instore.vocabulary import RAMP_SECTIONS

__all__ = ["STOP_COLUMN", "Ramp", "clients_skip_reason", "ramp_order", "stop_reason"]


def clients_skip_reason(point: Point, guard: LoadGuard) -> str | None:
    """Why the point runs too many jobs at once for the site (None: it does not)."""
    if guard.max_clients is not None and point.jobs > guard.max_clients:
        return (f"{point.jobs} clients at once, more than the site's load.max_clients "
                f"{guard.max_clients}")  # fmt: skip
    return None


def open_p95_ms(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The 95th percentile of the successful jobs' open times (ms; None: no open time)."""
    opens = [float(r["open_s"]) for r in rows
             if r.get("status") == "ok" and r.get("open_s") is not None]  # fmt: skip
    return 1e3 * float(np.percentile(opens, 95)) if opens else None


def stop_reason(rows: Sequence[Mapping[str, Any]], guard: LoadGuard, clients: int) -> str | None:
    """Why the ramp stops after a point with these records (None: it goes on)."""
    if not rows:
        return None
    p95 = open_p95_ms(rows)
    limit = guard.stop_p95_open_ms
    if limit is not None and p95 is not None and p95 > limit:
        return f"stopped: p95 open {p95:.0f} ms > {limit:g} ms at {clients} clients"
    failed = sum(r.get("status") != "ok" for r in rows)
    rate = guard.stop_error_rate
    if rate is not None and failed / len(rows) > rate:
        return (f"stopped: {failed} of {len(rows)} jobs failed ({failed / len(rows):.0%} > "
                f"{rate:.0%}) at {clients} clients")  # fmt: skip
    return None


@dataclass
class Ramp:
    """Where each ramp section stopped: section -> (clients, reason)."""

    guard: LoadGuard
    stops: dict[str, tuple[int, str]] = field(default_factory=dict)

    def observe(self, point: Point, rows: Sequence[Mapping[str, Any]]) -> str | None:
        """Check a measured point of a ramp section; the reason when it stops the ramp."""
        if point.section not in RAMP_SECTIONS or not self.guard.stops:
            return None
        reason = stop_reason(rows, self.guard, point.jobs)
        known = self.stops.get(point.section)
        if reason is not None and (known is None or point.jobs < known[0]):
            self.stops[point.section] = (point.jobs, reason)
        return reason

    def skip_reason(self, point: Point) -> str | None:
        """Why a point not yet measured is skipped: its section's ramp stopped at or below
        its clients (None: it runs)."""
        stop = self.stops.get(point.section)
        return stop[1] if stop is not None and point.jobs >= stop[0] else None


def ramp_order(todo: Iterable[tuple[Point, str]]) -> list[tuple[Point, str]]:
    """The ramp sections' points in increasing order of clients (a stable sort), each in one
    of the places the section's points had; other points stay where they were."""
    todo = list(todo)
    places = [i for i, (p, _) in enumerate(todo) if p.section in RAMP_SECTIONS]
    ramp = sorted((todo[i] for i in places), key=lambda entry: entry[0].jobs)
    for i, entry in zip(places, ramp, strict=True):
        todo[i] = entry
    return todo
