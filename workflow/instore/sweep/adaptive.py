"""Adaptive repetitions: a point is measured again until the 95% interval of its median is
within the rule's target, or it has reached its cap, as pyperf and criterion repeat a benchmark.

The figure judged is the point's **wall time** (a fixed-time point, the HEPiX method, reads
for a fixed wall, so its event rate instead), and the interval judged is the one the point's
report shows: ``instore.summary.interval.median_interval`` over its runs' job values,
resampling the runs and, for a point of several jobs, each run's jobs. (Judging the per-run
medians alone let 2 of 16 jobfill points in the reference run stop with their runs in
agreement while the report's interval, which also sees the jobs' spread, was wider than the
target.)

The rule, in order:

1. **expensive**: a point whose first repetition's longest job took more than the profile's
   ``expensive_s`` is measured once, whatever its rule allows (its time is what the budget
   cannot pay twice); its records say ``expensive = true``;
2. fewer than ``min`` repetitions: measure again;
3. ``max`` reached: stop (a fixed count N is min = max = N, so it stops here at N); and
   where the rule has a ``budget_s``, the point's runs have taken that much job time (each
   run's longest job, summed): stop, so a sub-second point may be measured up to ``max``
   times while a point of seconds stops after a few;
4. a repetition with failed jobs: stop (an interval is not chased for a failing point);
5. the interval's half-width over the median within ``target``: stop; else measure again.

With up to 5 runs the bootstrap's 95% interval of a median spans about their range, so the rule
stops once the runs agree within about twice the target, and a point whose first two disagree
more goes on to its cap.

Every record of a point says the rule it was measured under (``repetitions_rule``), whether
it is ``expensive``, and what the rule decided after its repetition
(``repetitions_decision``), so a report can say why a point rests on the runs it has. The
decision is taken from the records alone (no network I/O): a rerun of the sweep finds the
runs measured before and continues a point whose interval is still wide, if its cap allows.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from instore.study.config import Repetitions
from instore.study.grid import Point
from instore.summary.interval import median_interval


@dataclass(frozen=True)
class Run:
    """One repetition of a point, as the rule sees it."""

    value: float  # the judged figure: the median over its successful jobs (NaN: none)
    longest_s: float  # its longest job's wall: what the run cost the sweep
    failed: bool = False  # some job failed
    jobs: tuple[float, ...] = ()  # the judged figure of each successful job

    def values(self) -> list[float]:
        """What the interval resamples of this run: its jobs' figures (its median alone where
        they are not known)."""
        return list(self.jobs) or [self.value]


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def run_of(rows: Iterable[Mapping[str, Any]], fixed_time: bool = False) -> Run:
    """The run a repetition's job records make: wall time (event rate in fixed time)."""
    rows = list(rows)
    ok = [r for r in rows if r.get("status") == "ok"]
    metric = "event_rate_hz" if fixed_time else "wall_s"
    values = [v for r in ok if not math.isnan(v := _number(r.get(metric)))]
    walls = [v for r in rows if not math.isnan(v := _number(r.get("wall_s")))]
    return Run(
        value=statistics.median(values) if values else math.nan,
        longest_s=max(walls, default=math.nan),
        failed=len(ok) < len(rows),
        jobs=tuple(values),
    )


@dataclass(frozen=True)
class Decision:
    more: bool
    reason: str


def is_expensive(rule: Repetitions, first: Run, expensive_s: float | None) -> bool:
    """True when the first run cost more than ``expensive_s`` and the rule would repeat it."""
    return expensive_s is not None and rule.max > 1 and first.longest_s > expensive_s


def decide(rule: Repetitions, runs: Sequence[Run], expensive_s: float | None = None) -> Decision:
    """Whether the point is measured again, after ``runs`` (in repetition order)."""
    n = len(runs)
    if n == 0:
        return Decision(True, "not measured yet")
    if is_expensive(rule, runs[0], expensive_s):
        return Decision(
            False, f"expensive: the first run took {runs[0].longest_s:.0f} s (> {expensive_s:g} s)"
        )
    if n < rule.min:
        return Decision(True, f"{n} of at least {rule.min} run(s)")
    if not rule.adaptive:
        return Decision(False, f"fixed count of {rule.max} reached")
    half = median_interval([r.values() for r in runs]).half_width
    width = "no interval" if math.isnan(half) else f"+-{half:.1%}"
    if n >= rule.max:
        return Decision(False, f"cap of {rule.max} reached at {width}")
    spent = sum(r.longest_s for r in runs)
    if rule.budget_s is not None and spent >= rule.budget_s:
        return Decision(False, f"budget of {rule.budget_s:g} s spent ({spent:.1f} s) at {width}")
    if any(r.failed for r in runs):
        return Decision(False, "failed jobs: not repeated beyond the minimum")
    if half <= rule.target:
        return Decision(False, f"within target: {width}")
    return Decision(True, f"{width}, wider than +-{rule.target:.0%}")


@dataclass
class Series:
    """The repetitions of one point: what is measured, and whether another is due."""

    rule: Repetitions
    points: list[Point]  # repetition r at index r, up to the cap
    keys: list[str]
    expensive_s: float | None = None
    runs: dict[int, Run] = field(default_factory=dict)  # measured, by repetition

    def measured(self) -> list[Run]:
        return [self.runs[r] for r in sorted(self.runs)]

    def decision(self) -> Decision:
        return decide(self.rule, self.measured(), self.expensive_s)

    def next(self) -> tuple[Point, str] | None:
        """The first repetition not yet measured, if the rule asks for another."""
        if not self.decision().more:
            return None
        todo = next((r for r in range(len(self.points)) if r not in self.runs), None)
        return None if todo is None else (self.points[todo], self.keys[todo])

    def add(self, repetition: int, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Take a measured repetition in; the columns each of its records gets."""
        fixed_time = self.points[repetition].fixed_time_s > 0
        self.runs[repetition] = run_of(rows, fixed_time)
        first = self.measured()[0]
        rule = self.rule.text()
        if self.expensive_s is not None and self.rule.max > 1:
            rule += f", once above {self.expensive_s:g} s"
        return {
            "repetitions_rule": rule,
            "expensive": is_expensive(self.rule, first, self.expensive_s),
            "repetitions_decision": self.decision().reason,
        }
