"""How hard a study may load a site (the site file's ``load:``): the most clients at once, and
when the load section's ramp stops (the 95th percentile of its clients' open times, or its
share of failed jobs). A real site is someone's production storage: unset, it gets
conservative limits; an emulated site is the study's own, and gets none."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A real site's limits where its file sets none: 16 clients (a node's worth of jobs), opens
# slower than half a second at the 95th percentile, more than 2% of the jobs failed.
# In the records of the point that stopped the load ramp (instore.sweep.ramp): why it stopped.
STOP_COLUMN = "ramp_stop"
REAL_DEFAULTS = {"max_clients": 16, "stop_p95_open_ms": 500.0, "stop_error_rate": 0.02}


@dataclass(frozen=True)
class LoadGuard:
    """``None`` fields bind nothing."""

    max_clients: int | None = None
    stop_p95_open_ms: float | None = None
    stop_error_rate: float | None = None

    @property
    def stops(self) -> bool:
        """True when some rule can stop the load ramp."""
        return self.stop_p95_open_ms is not None or self.stop_error_rate is not None

    def text(self) -> str:
        """``at most 16 clients; stop at p95 open > 500 ms or > 2% failed`` (or ``none``)."""
        parts = []
        if self.max_clients is not None:
            parts.append(f"at most {self.max_clients} clients at once")
        rules = []
        if self.stop_p95_open_ms is not None:
            rules.append(f"p95 open > {self.stop_p95_open_ms:g} ms")
        if self.stop_error_rate is not None:
            rules.append(f"> {self.stop_error_rate:.0%} of jobs failed")
        if rules:
            parts.append("the load ramp stops at " + " or ".join(rules))
        return "; ".join(parts) or "none"


def load_guard(data: Mapping[str, Any] | None, emulated: bool) -> LoadGuard:
    """The site file's ``load:`` (schema-valid), over the defaults of its kind."""
    defaults: Mapping[str, Any] = {} if emulated else REAL_DEFAULTS
    return LoadGuard(**{**defaults, **(data or {})})
